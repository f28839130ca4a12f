//! Boots as replicates on the lab: one Debian kernel package entered as two kernels (their
//! command lines differ only by `quiet`), each booted three times, kernels alternating, every
//! boot reached by kexec; each boot is one observation. No run of this A/A comparison may
//! call a regression or an improvement (one run in the suite, six with KREG_SOAK=1), and
//! the report carries each row's between-boot share of the variance.

use common::{assert_ok, fresh_db, kreg, Scratch};
use kreg_testkit as common;

const SCENARIO: &str = r#"
name: lab-aa-boots
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 1, memory_mib: 768 } }
kernels:
  - { name: a, source: { deb: linux-image-6.12-amd64 } }
  - { name: b, source: { deb: linux-image-6.12-amd64 }, cmdline: quiet }
baseline: a
boot: { timeout: 5m }
boots: 3
workloads:
  - name: spin
    kind: command
    argv: [time, sh, -c, "n=0; while [ $n -lt 20000 ]; do n=$((n+1)); done"]
    metrics:
      wall: { regex: 'real\s+0m\s*([0-9.]+)s', unit: s, higher_is_better: false }
iterations: 6
"#;

/// Runs of the A/A comparison: one in the suite, six with KREG_SOAK=1 (each run is six
/// kexec boots under TCG, about 3.5 minutes).
fn runs() -> i64 {
    if std::env::var("KREG_SOAK").is_ok_and(|v| v == "1") {
        6
    } else {
        1
    }
}

#[tokio::test]
async fn one_kernel_as_two_over_three_boots_each_is_never_a_change() {
    let db = fresh_db("lab_boots").await;
    let dir = Scratch::new("lab-boots");
    let file = dir.0.join("aa.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    for run in 1..=runs() {
        let started = std::time::Instant::now();
        let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
        assert_ok(&out, "kreg run");
        eprintln!("run {run}: {:.0} s", started.elapsed().as_secs_f64());
        // Six boots, a b a b a b, every one by kexec, each with its own boot id.
        let boots: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT j.kernel, h.boot_method, h.boot_id FROM jobs j JOIN hosts h ON h.run_id = j.run_id AND h.boot_id = j.boot_id
             WHERE j.run_id = $1 GROUP BY j.kernel, j.boot, h.boot_method, h.boot_id ORDER BY min(j.ordinal)",
        )
        .bind(run)
        .fetch_all(&db.pool)
        .await
        .unwrap();
        let kernels: Vec<&str> = boots.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(kernels, ["a", "b", "a", "b", "a", "b"], "run {run}: {boots:?}");
        assert!(boots.iter().all(|b| b.1 == "kexec"), "run {run}: {boots:?}");
        let mut ids: Vec<&str> = boots.iter().map(|b| b.2.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 6, "run {run}: a fresh boot each time: {boots:?}");

        let out = kreg(&db, &dir.0)
            .args(["report", &run.to_string(), "--format", "json"])
            .output()
            .unwrap();
        assert_ok(&out, "report");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kernel"] == "b")
            .expect("kernel b's row")
            .clone();
        let c = &row["comparison"];
        assert_eq!(
            (c["unit"].as_str(), c["n"].clone()),
            (Some("boot"), serde_json::json!([3, 3])),
            "{row}"
        );
        let verdict = c["verdict"].as_str().unwrap();
        assert!(
            verdict == "no change" || verdict == "inconclusive",
            "run {run}: {verdict}: {row}"
        );
        assert!(row["boot_share"].as_f64().is_some(), "{row}");
        eprintln!(
            "run {run}: {verdict}, change {:+.2}%, between-boot share {:.0}%",
            100.0 * c["change"].as_f64().unwrap_or(f64::NAN),
            100.0 * row["boot_share"].as_f64().unwrap()
        );
    }
    let text = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("each boot is one observation") && text.contains("of its variance between boots"),
        "{text}"
    );
}
