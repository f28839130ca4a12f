-- A job's cgroup and the perf events it could not count get typed records, which the
-- store reads as they are: `cgroup_setup`, the cgroup as JSON (what it is, its top group),
-- and `perf_stat_uncounted`, the events one per line. Runs made before get them here, once,
-- from the text they kept.
INSERT INTO raw_outputs (run_id, job_id, kind, content)
SELECT run_id, job_id, 'cgroup_setup',
       json_build_object('what', split_part(content, ', top ', 1),
                         'top', split_part(content, ', top ', 2))::TEXT
  FROM raw_outputs
 WHERE kind = 'cgroup'
ON CONFLICT (job_id, kind) DO NOTHING;

INSERT INTO raw_outputs (run_id, job_id, kind, content)
SELECT o.run_id, o.job_id, 'perf_stat_uncounted',
       string_agg(regexp_replace(m.parts[1], '\s+', ' ', 'g'), E'\n' ORDER BY m.n)
  FROM raw_outputs o, regexp_matches(o.content, '^(.*\S)\s+\(no metric\)$', 'gn') WITH ORDINALITY AS m(parts, n)
 WHERE o.kind = 'perf_stat_totals'
 GROUP BY o.run_id, o.job_id
ON CONFLICT (job_id, kind) DO NOTHING;
