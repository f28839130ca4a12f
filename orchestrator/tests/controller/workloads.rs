//! Single-host workload kinds through the whole engine against a real kreg-agent: the real
//! tools run, their output is parsed into metrics with units and directions, and the raw
//! output is kept beside the numbers.

use common::{assert_ok, fresh_db, kreg, Agent, Scratch};
use kreg_testkit as common;

#[tokio::test]
async fn perf_bench_and_hackbench_run_parse_and_store() {
    let db = fresh_db("kinds").await;
    let agent = Agent::start();
    let dir = Scratch::new("kinds");
    let text = format!(
        r#"
name: kinds
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: [ {{ name: default }}, {{ name: batch, policy: batch }} ]
workloads:
  - {{ name: messaging, kind: perf-bench, bench: messaging, groups: 1, loops: 20, threads: true }}
  - {{ name: pipe, kind: perf-bench, bench: pipe, loops: 2000 }}
  - {{ name: hb, kind: hackbench, groups: 1, loops: 20, threads: true, pipe: true, datasize: 64 }}
iterations: 2
"#,
        hosts = agent.hosts_yaml(),
    );
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, text).unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "kreg");

    let rows: Vec<(String, String, String, bool, i64)> = sqlx::query_as(
        "SELECT j.workload, r.metric, r.unit, r.higher_is_better, count(*) FROM results r JOIN jobs j ON j.id = r.job_id
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let got: Vec<String> = rows
        .iter()
        .map(|(w, m, u, h, n)| format!("{w} {m} {u} {h} {n}"))
        .collect();
    assert_eq!(
        got,
        [
            "hb time s false 4",
            "messaging total_time s false 4",
            "pipe ops_per_s ops/s true 4",
            "pipe total_time s false 4",
            "pipe usecs_per_op us false 4",
        ]
    );
    // The stored number is the one the tool printed.
    let (stdout, value): (String, f64) = sqlx::query_as(
        "SELECT o.content, r.value FROM raw_outputs o JOIN results r ON r.job_id = o.job_id
         JOIN jobs j ON j.id = o.job_id WHERE o.kind = 'stdout' AND r.metric = 'usecs_per_op' LIMIT 1",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let printed: f64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix("usecs/op"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(value, printed);
    // perf's version is recorded with each job (Debian's linux-perf package).
    let versions: serde_json::Value =
        sqlx::query_scalar("SELECT tool_versions FROM jobs WHERE workload = 'pipe' LIMIT 1")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(
        versions["perf@here"].as_str().unwrap().starts_with("linux-perf"),
        "{versions}"
    );

    // The same scenario again, then the two runs compared row by row.
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert!(out.status.success());
    let out = kreg(&db, &dir.0)
        .args(["compare", "1", "2", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["baseline"], "baseline run 1 (same kernel, variant and workload)");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10, "5 metrics × 2 variants");
    for r in rows {
        let verdict = r["comparison"]["verdict"].as_str().unwrap();
        assert!(
            kreg::stats::Verdict::ALL.iter().any(|v| v.as_str() == verdict),
            "{verdict}"
        );
        // Two iterations per side: too few samples to call anything.
        assert_eq!(verdict, "inconclusive", "{r}");
    }
    let text = String::from_utf8(kreg(&db, &dir.0).args(["compare", "1", "2"]).output().unwrap().stdout).unwrap();
    assert!(
        text.contains("kernel current (run 1)") && text.contains("kernel current (run 2)"),
        "{text}"
    );
}
