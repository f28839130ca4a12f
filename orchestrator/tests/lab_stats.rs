//! Verdicts on the lab: the same kernel measured twice (two identical variants, `all` and
//! `same`) is no significant change, and a variant that gives the workload half the CPUs
//! is a regression of its wall time. Jobs are interleaved iteration by iteration: under TCG
//! in this sandbox, timings drift by ±25% over minutes, so two series measured one after
//! the other (say, two kernel entries of the same kernel) differ for reasons that have
//! nothing to do with the kernel; interleaving spreads the drift over every variant. The
//! workload is two CPU-bound busybox shells at once, timed by busybox `time`, 16 times per
//! variant (alpha 0.01, adjusted for two comparisons, needs that many to see a 2x slowdown
//! through TCG's noise: with 8, one CI run's one-CPU series caught two 2.6 s outliers and its
//! adjusted p-value came out at 0.012; with 12 under qemu 10, one run's one-CPU series was
//! only 1.44x slower, adjusted p 0.024): with two
//! vCPUs they run side by side, with one they take turns. (hackbench is no good here:
//! under TCG, cross-vCPU wakeups cost so much that one vCPU is often faster.)

use common::{assert_ok, fresh_db, kreg, Scratch};
use kreg_testkit as common;

const SCENARIO: &str = r#"
name: lab-verdicts
hosts:
  # Two vCPUs that really run at once (a host thread each): "half the CPUs" must cost.
  sut: { role: sut, transport: { kind: lab, cpus: 2, parallel: true } }
kernels:
  - { name: deb612, source: { deb: linux-image-6.12-amd64 } }
order: interleaved
variants:
  - { name: all }
  - { name: same }
  - { name: half, cpus: "0" }
workloads:
  - name: spin2
    kind: command
    argv: [time, sh, -c, "for i in 1 2; do (n=0; while [ $n -lt 20000 ]; do n=$((n+1)); done) & done; wait"]
    metrics:
      wall: { regex: 'real\s+0m\s*([0-9.]+)s', unit: s, higher_is_better: false }
iterations: 16
"#;

fn verdicts(json: &serde_json::Value) -> Vec<(String, String, String)> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["comparison"].is_null())
        .map(|r| {
            (
                r["kernel"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
                r["comparison"]["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn same_kernel_twice_is_no_change_and_half_the_cpus_is_a_regression() {
    let db = fresh_db("labstats").await;
    let dir = Scratch::new("labstats");
    let file = dir.0.join("v.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "kreg");

    let report = |args: &[&str]| -> serde_json::Value {
        // alpha 0.01 so that the A/A half of this test fails about once in a hundred runs
        // by chance, not once in twenty.
        let out = kreg(&db, &dir.0)
            .args(["report", "1", "--format", "json", "--alpha", "0.01"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Variants compared with `all`, on the same kernel and boot.
    let by_variant = report(&["--baseline-variant", "all"]);
    let v = verdicts(&by_variant);
    assert_eq!(v.len(), 2, "{by_variant:#}");
    for (_, variant, verdict) in v {
        match variant.as_str() {
            // The same kernel measured twice.
            "same" => assert!(
                verdict == "no change" || verdict == "inconclusive",
                "same: {verdict}\n{by_variant:#}"
            ),
            // One CPU instead of two: slower (lower is better).
            "half" => assert_eq!(verdict, "regression", "{by_variant:#}"),
            other => panic!("unexpected row {other}"),
        }
    }
    // Interleaved: the job order alternates variants within each iteration.
    let order: Vec<String> = sqlx::query_scalar("SELECT variant FROM jobs ORDER BY ordinal LIMIT 4")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(order, ["all", "same", "half", "all"]);
}
