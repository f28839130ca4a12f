-- A bisection's range, one row a commit, so that a page of the bisection reads the few
-- commits it names (the ends, the measured ones, the culprit), not the whole range.
CREATE TABLE bisect_commits (
    run_id BIGINT NOT NULL REFERENCES bisections(run_id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    hash TEXT NOT NULL,
    subject TEXT NOT NULL,
    author TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
);

INSERT INTO bisect_commits (run_id, idx, hash, subject, author)
SELECT b.run_id, (e.ord - 1)::int, e.c->>'hash', coalesce(e.c->>'subject', ''), coalesce(e.c->>'author', '')
FROM bisections b, jsonb_array_elements(b.commits) WITH ORDINALITY AS e(c, ord);

ALTER TABLE bisections ADD COLUMN commit_count INTEGER;
UPDATE bisections SET commit_count = jsonb_array_length(commits);
ALTER TABLE bisections ALTER COLUMN commit_count SET NOT NULL;
ALTER TABLE bisections DROP COLUMN commits;
