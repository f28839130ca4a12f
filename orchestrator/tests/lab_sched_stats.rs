//! `perf sched stats` in the lab, as seed 004 runs it: perf 7.2 built by kreg from Debian
//! unstable's linux-source-7.2 (cached once per machine) for two Debian kernels (6.12 with
//! /proc/schedstat v16, 6.1 with v15), recording system-wide around every job. Each job
//! keeps perf's file and report and gets the report's summary as metrics; perf's counters,
//! CPU by CPU and domain by domain, never exceed what kreg's own snapshots (taken just
//! outside perf's recording) saw; `kreg report` diffs the kernels field by field with
//! spreads. The host's perf (Debian's 6.1, no `sched stats`) asked for the collector is
//! refused before the run, saying why. A run killed with the schedstat switch on resumes
//! with every setting put back.

use std::io::Write;
use std::process::{Command, Stdio};

use common::{assert_ok, fresh_db, kreg, Scratch};
use kreg_testkit as common;

const SCENARIO: &str = r#"
name: lab-sched-stats
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 2 } }
kernels:
  - { name: k612, source: { deb: linux-image-6.12-amd64 } }
  - { name: k61, source: { deb: linux-image-amd64 } }
perf: { debian: linux-source-7.2 }
collect: [perf_sched_stats]
boot: { timeout: 5m }
workloads:
  - { name: hb, kind: hackbench, groups: 2, loops: 50 }
iterations: 2
"#;

fn unxz(b64: &str) -> Vec<u8> {
    use base64ct::Encoding;
    let xz = base64ct::Base64::decode_vec(b64).expect("base64");
    let mut child = Command::new("xz")
        .args(["-d", "-c"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&xz));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// Every `NAME : VALUE` line of the summary's sections (`CPU: <ALL CPUS SUMMARY>` and its
/// domains), as the metric kreg stores it: `sched_stats_NAME`, or for a domain
/// `sched_stats_domainN_NAME` (`sched_stats_NAME_OF_DOMAIN_NAME` when perf names it). Read
/// with nothing of kreg's.
fn summary_as_printed(text: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut prefix: Option<String> = None;
    for line in text.lines() {
        if let Some(head) = line.strip_prefix("CPU: ") {
            prefix = match head.split_once("| DOMAIN: ") {
                _ if !head.starts_with("<ALL CPUS SUMMARY>") => None,
                None => Some("sched_stats_".into()),
                Some((_, d)) if d.trim().chars().all(|c| c.is_ascii_digit()) => {
                    Some(format!("sched_stats_domain{}_", d.trim()))
                }
                Some((_, d)) => Some(format!("sched_stats_{}_", d.trim().to_lowercase())),
            };
            continue;
        }
        let (Some(p), Some((name, rest))) = (&prefix, line.split_once(" : ")) else {
            continue;
        };
        let name = name.trim().trim_start_matches('*');
        if name.is_empty() || name.contains(' ') {
            continue;
        }
        let value: f64 = rest.split_whitespace().next().unwrap().parse().unwrap();
        out.push((format!("{p}{name}"), value));
    }
    out
}

#[tokio::test]
async fn perf_sched_stats_around_every_job_agrees_with_kreg_s_own_snapshots() {
    let db = fresh_db("lab_sched_stats").await;
    let dir = Scratch::new("lab-sched-stats");
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = kreg(&db, &dir.0).args(["plan"]).arg(&file).output().unwrap();
    assert_ok(&out, "kreg plan");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("perf built from Debian's linux-source-7.2"), "{plan}");
    for k in ["k612", "k61"] {
        let line = plan
            .lines()
            .skip_while(|l| {
                !l.starts_with(&format!("boot kernel {k}:")) && !l.starts_with(&format!("boot kernel {k} ("))
            })
            .nth(1)
            .unwrap_or_default();
        assert_eq!(
            line,
            "  perf on sut: perf built from Debian's linux-source-7.2 (on the controller); has `perf sched stats`",
            "{plan}"
        );
    }
    assert!(plan.contains("`perf sched stats record` on sut, system-wide"), "{plan}");

    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "kreg run");
    let jobs: Vec<(i64, String)> =
        sqlx::query_as("SELECT id, kernel FROM jobs WHERE run_id = 1 AND state = 'done' ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(jobs.len(), 4, "every job done");
    let mut compared = 0;
    for (job, kernel) in &jobs {
        let raw = |kind: &'static str| {
            let pool = db.pool.clone();
            let job = *job;
            async move {
                sqlx::query_scalar::<_, String>("SELECT content FROM raw_outputs WHERE job_id = $1 AND kind = $2")
                    .bind(job)
                    .bind(kind)
                    .fetch_one(&pool)
                    .await
                    .unwrap_or_else(|e| panic!("job {job}: {kind}: {e}"))
            }
        };
        // perf's own file, kept: a perf.data (its magic) from perf 7.2.
        let data = unxz(&raw("perf_sched_stats_data.xz.base64").await);
        assert_eq!(&data[..8], b"PERFILE2", "job {job}");
        let text = raw("perf_sched_stats_report").await;
        let report = kreg::collect::perf_sched_stats::parse(&text).unwrap();
        // The job's metrics are perf's summary, as perf printed it: read here from the text
        // by this test's own code (every `NAME : VALUE` line of the summary's sections), not
        // by kreg's parser.
        let metrics: Vec<(String, f64)> = sqlx::query_as("SELECT metric, value FROM results WHERE job_id = $1")
            .bind(job)
            .fetch_all(&db.pool)
            .await
            .unwrap();
        let printed = summary_as_printed(&text);
        assert!(printed.len() > 40, "job {job}: {printed:?}");
        for (name, value) in &printed {
            let got = metrics
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("job {job}: {name} printed by perf, not stored"));
            assert_eq!(got.1, *value, "job {job}: {name}");
        }
        let stored = metrics.iter().filter(|(n, _)| n.starts_with("sched_stats_")).count();
        assert_eq!(
            stored,
            printed.len(),
            "job {job}: stored metrics that perf did not print"
        );
        // And the report's per-CPU figures are the differences of the snapshots perf itself
        // recorded (`perf report -D`), exactly.
        perf_dump_agrees(&dir.0, &data, &text, *job);
        let sched_count = metrics.iter().find(|(n, _)| n == "sched_stats_sched_count").unwrap().1;
        assert!(sched_count > 0.0, "job {job} on {kernel}: hackbench switched tasks");
        // Field by field against kreg's own delta over a window enclosing perf's.
        let before = kreg::schedstat::parse(&raw("schedstat_before").await).unwrap();
        let after = kreg::schedstat::parse(&raw("schedstat_after").await).unwrap();
        let diff = kreg::schedstat::diff(&before, &after).unwrap();
        let expect_version = if kernel == "k612" { 16 } else { 15 };
        assert_eq!(diff.version, expect_version, "job {job} on {kernel}");
        let both = kreg::collect::perf_sched_stats::cross_check(&report, &diff).unwrap();
        // Two CPUs: 9 counters each, and the domain's 36 (v15/v16).
        assert_eq!(both.len(), 2 * (9 + 36), "job {job} on {kernel}: {both:?}");
        let off: Vec<_> = both.iter().filter(|c| !c.agrees()).collect();
        assert!(
            off.is_empty(),
            "job {job} on {kernel}: perf saw more than kreg: {off:?}"
        );
        // The counters that moved, moved for both.
        let busy = both
            .iter()
            .find(|c| c.domain.is_none() && c.field == "sched_count" && c.cpu == 0)
            .unwrap();
        assert!(busy.perf > 0 && busy.kreg >= busy.perf, "{busy:?}");
        compared += both.len();
    }
    eprintln!("{compared} counters compared over {} jobs", jobs.len());
    // The schedstat switch: back to what the guest had after each boot.
    let settings: Vec<(String, String, Option<chrono::DateTime<chrono::Utc>>)> =
        sqlx::query_as("SELECT setting, before, restored_at FROM host_settings WHERE run_id = 1")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let schedstats: Vec<_> = settings.iter().filter(|s| s.0 == "kernel.sched_schedstats").collect();
    assert_eq!(schedstats.len(), 2, "one per boot: {settings:?}");
    assert!(schedstats.iter().all(|s| s.2.is_some()), "restored: {settings:?}");

    // `kreg report`: per field of perf's summary, both kernels' means over their two jobs
    // with their spreads, the change with its interval; the cross-check of every job.
    let out = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    assert_ok(&out, "kreg report");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(text.contains("hb: k61/default against k612/default"), "{text}");
    assert!(
        text.contains("k612/default (2 jobs)") && text.contains("k61/default (2 jobs)"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("| cpu ") && l.contains(" sched_count "))
        .unwrap_or_else(|| panic!("no sched_count line: {text}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    assert!(cells[4].starts_with('±') && cells[6].starts_with('±'), "{line}");
    // Two jobs a side: no exact test of two against two reaches alpha, and no interval of
    // the ratio at 99.5 % is bounded by four values.
    assert_eq!((cells[8], cells[9]), ("unbounded", "too few jobs"), "{line}");
    assert!(
        text.contains(&format!(
            "cross-check: perf's counters and kreg's /proc/schedstat delta agree on all {compared} counters of 4 job(s)"
        )),
        "{text}"
    );
    // Not among the workload's verdicts.
    assert!(!text.contains("| sched_stats_"), "{text}");
    let out = kreg(&db, &dir.0)
        .args(["report", "1", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fields = doc["sched_stats"]["pairs"][0]["fields"].as_array().unwrap();
    let sc = fields
        .iter()
        .find(|f| f["field"] == "sched_count" && f["level"] == "cpu")
        .unwrap();
    assert_eq!((sc["base"]["n"].as_u64(), sc["new"]["n"].as_u64()), (Some(2), Some(2)));
    assert!(
        sc["p"].as_f64().is_some() && sc["ci"].is_null() && sc["decidable"] == false,
        "{sc}"
    );

    // The host's perf (Debian's 6.1) has no `perf sched stats`: `kreg plan` says so, and
    // `kreg run` refuses before recording anything.
    let old = dir.0.join("old.yaml");
    std::fs::write(
        &old,
        SCENARIO
            .replace("perf: { debian: linux-source-7.2 }\n", "")
            .replace("  - { name: k61, source: { deb: linux-image-amd64 } }\n", "")
            .replace("iterations: 2", "iterations: 1"),
    )
    .unwrap();
    let out = kreg(&db, &dir.0).arg("plan").arg(&old).output().unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        plan.contains("  perf on sut: the controller's /usr/bin/perf (perf version 6.1.")
            && plan.contains("has no `perf sched stats` (perf 6.19 or later)"),
        "{plan}"
    );
    assert!(
        plan.contains("refused: kernel k612: the collector perf_sched_stats needs"),
        "{plan}"
    );
    let out = kreg(&db, &dir.0).arg("run").arg(&old).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("kernel k612: the collector perf_sched_stats needs `perf sched stats` (perf 6.19 or later)"),
        "{err}"
    );
    assert!(err.contains("no run recorded"), "{err}");
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(runs, 1, "refused before the run");

    killed_and_resumed(&db, &dir).await;
}

/// The controller killed in the middle of a run while the schedstat switch is on: the
/// setting is left noted as not put back; `kreg resume` finds it gone with the lab VM,
/// drives the rest, and puts back what its own boot changed.
async fn killed_and_resumed(db: &common::TestDb, dir: &Scratch) {
    let file = dir.0.join("kill.yaml");
    std::fs::write(
        &file,
        SCENARIO
            .replace("  - { name: k61, source: { deb: linux-image-amd64 } }\n", "")
            .replace("iterations: 2", "iterations: 3"),
    )
    .unwrap();
    let mut child = kreg(db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the first job is done and the next one running, the switch on.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    loop {
        let (done, running, on): (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM jobs WHERE run_id = 2 AND state = 'done'),
                    (SELECT count(*) FROM jobs WHERE run_id = 2 AND state = 'running'),
                    (SELECT count(*) FROM host_settings WHERE run_id = 2 AND setting = 'kernel.sched_schedstats' AND restored_at IS NULL)",
        )
        .fetch_one(&db.pool)
        .await
        .unwrap();
        if done >= 1 && running == 1 && on == 1 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        assert!(std::time::Instant::now() < deadline, "no second job within 10 minutes");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM host_settings WHERE run_id = 2 AND restored_at IS NULL")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(left, 1, "the killed controller could not put the switch back");

    let out = kreg(db, &dir.0).args(["resume", "2"]).output().unwrap();
    assert_ok(&out, "kreg resume");
    let err = String::from_utf8_lossy(&out.stderr);
    for l in err.lines().filter(|l| l.contains("left by")) {
        eprintln!("resumed after the kill: {l}");
    }
    assert!(
        err.contains("left by the interrupted attempt: sut: kernel.sched_schedstats gone with the lab VM"),
        "{err}"
    );
    let (done, with_data): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE j.state = 'done'),
                count(*) FILTER (WHERE EXISTS (SELECT 1 FROM raw_outputs o WHERE o.job_id = j.id AND o.kind = 'perf_sched_stats_data.xz.base64'))
         FROM jobs j WHERE j.run_id = 2",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((done, with_data), (3, 3), "every job done once, with its recording");
    // Both boots' switches noted and put back (the first with its VM, the second by kreg).
    let settings: Vec<(String, Option<chrono::DateTime<chrono::Utc>>)> = sqlx::query_as(
        "SELECT before, restored_at FROM host_settings WHERE run_id = 2 AND setting = 'kernel.sched_schedstats'",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(settings.len(), 2, "{settings:?}");
    assert!(
        settings.iter().all(|(before, at)| before == "0" && at.is_some()),
        "{settings:?}"
    );
}

/// perf's own dump of its recording (`perf report -D`, by the perf kreg built): the
/// schedstat records of its two snapshots, per CPU; each of the nine counters of each CPU
/// in the report is the difference of its two snapshots' values, exactly.
fn perf_dump_agrees(dir: &std::path::Path, data: &[u8], text: &str, job: i64) {
    // The CPU line's fields, in /proc/schedstat's order (sched-stats.rst).
    const FIELDS: [&str; 9] = [
        "yld_count",
        "array_exp",
        "sched_count",
        "sched_goidle",
        "ttwu_count",
        "ttwu_local",
        "rq_cpu_time",
        "run_delay",
        "pcount",
    ];
    let perf = built_perf();
    let file = dir.join(format!("perf-{job}.data"));
    std::fs::write(&file, data).unwrap();
    let out = Command::new(&perf)
        .args(["report", "-D", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&out.stdout);
    let snaps = dumped_cpu_snapshots(&dump);
    assert!(
        snaps.len() >= 2,
        "job {job}: CPUs in perf's dump: {snaps:?}\n{}",
        &dump[..dump.len().min(3000)]
    );
    for (cpu, values) in &snaps {
        assert_eq!(values.len(), 2, "job {job}: CPU {cpu}: {values:?}");
        assert_eq!(values[0].len(), 9, "job {job}: CPU {cpu}: {values:?}");
        let printed = cpu_as_printed(text, *cpu);
        for (i, name) in FIELDS.iter().enumerate() {
            let got = printed
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("job {job}: CPU {cpu}: {name} not printed: {printed:?}"))
                .1;
            assert_eq!(got, (values[1][i] - values[0][i]) as f64, "job {job}: CPU {cpu} {name}");
        }
    }
}

/// The perf kreg built for the lab (its cache under KREG_CACHE_DIR).
fn built_perf() -> std::path::PathBuf {
    let cache = std::env::var_os("KREG_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/kreg"));
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(cache.join("perf"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path().join("perf"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().expect("kreg built a perf for the lab")
}

/// The `NAME : VALUE` lines of one CPU's own section (`CPU: N`, not its domains), read
/// from the report's text with nothing of kreg's.
fn cpu_as_printed(text: &str, cpu: u32) -> Vec<(String, f64)> {
    let head = format!("CPU: {cpu}");
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("CPU: ") {
            inside = line.trim_end() == head;
            continue;
        }
        if let (true, Some((name, rest))) = (inside, line.split_once(" : ")) {
            out.push((
                name.trim().to_string(),
                rest.split_whitespace().next().unwrap().parse().unwrap(),
            ));
        }
    }
    out
}

/// Each CPU's counters in the snapshots of perf's dump, in the order recorded: its
/// `PERF_RECORD_SCHEDSTAT_CPU` records print as /proc/schedstat's own lines
/// (`cpu0 0 0 144 52 39 25 3537802215 1713927320 1045 : unhandled!`).
fn dumped_cpu_snapshots(dump: &str) -> std::collections::BTreeMap<u32, Vec<Vec<u64>>> {
    let mut out: std::collections::BTreeMap<u32, Vec<Vec<u64>>> = Default::default();
    for line in dump.lines() {
        let Some(rest) = line.strip_prefix("cpu") else { continue };
        let mut words = rest.split_whitespace();
        let Some(cpu) = words.next().and_then(|w| w.parse::<u32>().ok()) else {
            continue;
        };
        let values: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
        out.entry(cpu).or_default().push(values);
    }
    out
}
