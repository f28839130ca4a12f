//! Tools uploaded to a lab VM (busybox only: no `install`, no coreutils): the agent
//! places them itself, and workloads run them by name from their install_dir, on PATH
//! (/usr/local/bin) or not (/opt/kreg-tools). The tool is a real program, a copy of
//! Debian's hackbench; its SHA-256 is stored as its version with every job. The jobs run
//! under `perf stat` (Debian's perf, put in the guest for the collector): the software
//! counters are stored, the hardware events a TCG guest lacks are said to be missing.
//! Then the run is exported and run again from its bundle into another database, its tool
//! gone from the folder: the same jobs, the bundle's tool.

use common::{fresh_db, kreg, Scratch};
use kreg_testkit as common;
use sha2::Digest;

#[tokio::test]
async fn uploaded_tools_run_in_the_lab_from_their_install_dir() {
    let db = fresh_db("labtools").await;
    let dir = Scratch::new("labtools");
    let program = std::fs::read("/usr/bin/hackbench").expect("rt-tests is installed");
    std::fs::write(dir.0.join("hb-copy"), &program).unwrap();
    let scenario = r#"
name: lab-tools
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 2, memory_mib: 1024 } }
kernels:
  - { name: deb61, source: { deb: linux-image-amd64 } }
boot: { timeout: 5m }
tools:
  - { name: hb-local, on: [sut], from: { upload: hb-copy } }
  - { name: hb-opt, on: [sut], install_dir: /opt/kreg-tools, from: { upload: hb-copy } }
workloads:
  - name: local
    kind: command
    argv: [hb-local, -g, "1", -l, "20", -p]
    metrics: { time: { regex: "Time: ([0-9.]+)", higher_is_better: false } }
    timeout: 5m
  - name: opt
    kind: command
    argv: [hb-opt, -g, "1", -l, "20", -p]
    metrics: { time: { regex: "Time: ([0-9.]+)", higher_is_better: false } }
    timeout: 5m
iterations: 2
collect: [perf_stat]
"#;
    let file = dir.0.join("lab-tools.yaml");
    std::fs::write(&file, scenario).unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "kreg run\n{stdout}\n{stderr}");
    let rows: Vec<(String, f64)> = sqlx::query_as(
        "SELECT j.workload, r.value FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE r.metric = 'time' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let count = |w: &str| rows.iter().filter(|(name, _)| name == w).count();
    assert_eq!((count("local"), count("opt")), (2, 2), "{rows:?}");
    assert!(rows.iter().all(|(_, t)| *t > 0.0 && *t < 300.0), "{rows:?}");
    let versions: Vec<serde_json::Value> = sqlx::query_scalar("SELECT tool_versions FROM jobs ORDER BY ordinal")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    let want = format!("sha256 {}", hex::encode(sha2::Sha256::digest(&program)));
    for v in &versions {
        assert_eq!(v["hb-local@sut"], want, "{v}");
        assert_eq!(v["hb-opt@sut"], want, "{v}");
    }

    // perf stat over each job: context switches and migrations counted for every job.
    for metric in ["perf_context_switches", "perf_cpu_migrations"] {
        let v: Vec<f64> = sqlx::query_scalar("SELECT value FROM results WHERE metric = $1")
            .bind(metric)
            .fetch_all(&db.pool)
            .await
            .unwrap();
        assert_eq!(v.len(), 4, "{metric}: {v:?}");
        if metric == "perf_context_switches" {
            assert!(v.iter().all(|x| *x > 0.0), "{metric}: {v:?}");
        }
    }
    let report = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("perf_context_switches") && text.contains("perf_cpu_migrations"),
        "{text}"
    );
    // The hardware events: counted (a guest with a PMU), or said to be missing, never 0.
    let cycles: Vec<f64> = sqlx::query_scalar("SELECT value FROM results WHERE metric = 'perf_cycles'")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    if cycles.is_empty() {
        assert!(
            text.contains("perf stat could not count: cycles <not supported>"),
            "{text}"
        );
    } else {
        assert!(cycles.len() == 4 && cycles.iter().all(|c| *c > 0.0), "{cycles:?}");
    }
    let totals: String = sqlx::query_scalar("SELECT content FROM raw_outputs WHERE kind = 'perf_stat_totals' LIMIT 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(totals.starts_with("event"), "{totals}");

    // `kreg run --from` the run's bundle, in another database, the tool gone from here.
    let bundle = dir.0.join("lab-tools.tar");
    let out = kreg(&db, &dir.0)
        .args(["export", "1", "--output", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(dir.0.join("hb-copy")).unwrap();
    let other = fresh_db("labtools_from").await;
    let out = kreg(&other, &dir.0)
        .args(["run", "--from", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let cells =
        "SELECT kernel, variant, workload, iteration, state::text, tool_versions::text FROM jobs ORDER BY ordinal";
    let first: Vec<(String, String, String, i32, String, String)> =
        sqlx::query_as(cells).fetch_all(&db.pool).await.unwrap();
    let again: Vec<(String, String, String, i32, String, String)> =
        sqlx::query_as(cells).fetch_all(&other.pool).await.unwrap();
    assert_eq!(first.len(), 4);
    assert_eq!(again, first);
}
