//! `perf sched stats` in the lab, as seed 004 runs it: perf 7.2 built by kreg from Debian
//! unstable's linux-source-7.2 (cached once per machine) for two Debian kernels (6.12 with
//! /proc/schedstat v16, 6.1 with v15), recording system-wide around every job. Each job
//! keeps perf's file and report and gets the report's summary as metrics; perf's counters,
//! CPU by CPU and domain by domain, never exceed what kreg's own snapshots (taken just
//! outside perf's recording) saw. The host's perf (Debian's 6.1, no `sched stats`) asked
//! for the collector fails the kernel's jobs before they run, saying why.

use std::io::Write;
use std::process::{Command, Stdio};

mod common;
use common::{assert_ok, fresh_db, kreg, Scratch};

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
        let report = kreg::collect::perf_sched_stats::parse(&raw("perf_sched_stats_report").await).unwrap();
        // The report's summary is the job's metrics.
        let metrics: Vec<(String, f64)> = sqlx::query_as("SELECT metric, value FROM results WHERE job_id = $1")
            .bind(job)
            .fetch_all(&db.pool)
            .await
            .unwrap();
        let expected = kreg::collect::perf_sched_stats::metrics(&report).unwrap();
        for m in &expected {
            let got = metrics
                .iter()
                .find(|(n, _)| *n == m.name)
                .unwrap_or_else(|| panic!("job {job}: {}", m.name));
            assert_eq!(got.1, m.value, "job {job}: {}", m.name);
        }
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

    // The host's perf (Debian's 6.1) has no `perf sched stats`: the kernel's jobs fail
    // before they run, saying why.
    let old = dir.0.join("old.yaml");
    std::fs::write(
        &old,
        SCENARIO
            .replace("perf: { debian: linux-source-7.2 }\n", "")
            .replace("  - { name: k61, source: { deb: linux-image-amd64 } }\n", "")
            .replace("iterations: 2", "iterations: 1"),
    )
    .unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&old).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let why: String = sqlx::query_scalar("SELECT error FROM jobs WHERE run_id = 2")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(why.contains("needs `perf sched stats` (perf 6.19 or later)"), "{why}");
    let started: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE run_id = 2 AND started_at IS NOT NULL")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(started, 0, "refused before the job ran");
}
