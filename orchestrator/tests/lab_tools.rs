//! Tools uploaded to a lab VM (busybox only: no `install`, no coreutils): the agent
//! places them itself, and workloads run them by name from their install_dir, on PATH
//! (/usr/local/bin) or not (/opt/kreg-tools). The tool is a real program, a copy of
//! Debian's hackbench; its SHA-256 is stored as its version with every job.

mod common;
use common::{fresh_db, kreg, Scratch};
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
}
