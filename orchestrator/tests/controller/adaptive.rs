//! Adaptive iterations and `kreg stats` against a real PostgreSQL and a real kreg-agent on
//! loopback: rows settled at the first look get no more runs, rows still inconclusive get
//! one more per look until their verdict or the cap, a controller killed in the adaptive
//! phase resumes to the same result, and `kreg stats` judges a report's samples as the
//! report does.

use common::{assert_ok, fresh_db, kill_when, kreg, Agent, Scratch};
use kreg_testkit as common;

/// A command that prints `value: A` under SCHED_OTHER and `value: B` under SCHED_BATCH.
fn by_policy(a: &str, b: &str) -> String {
    format!(
        r#"[sh, -c, "sleep 0.2; if grep -q '^policy *: *3' /proc/self/sched; then echo value: {b}; else echo value: {a}; fi"]"#
    )
}

fn scenario(agent: &Agent, argv: &str, iterations: &str, kind: &str) -> String {
    format!(
        r#"
name: adaptive
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: [ {{name: default}}, {{name: batch, policy: batch}} ]
workloads:
  - name: probe
    kind: command
    argv: {argv}
    timeout: 60
    metrics:
      value: {{ regex: "value: ([0-9.]+)", unit: "", higher_is_better: true, kind: {kind} }}
iterations: {iterations}
"#,
        hosts = agent.hosts_yaml(),
    )
}

async fn jobs_per_variant(db: &common::TestDb) -> Vec<(String, i64, i32)> {
    sqlx::query_as(
        "SELECT variant, count(*), max(iteration) FROM jobs WHERE state = 'done' GROUP BY variant ORDER BY variant",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

fn report_json(db: &common::TestDb, dir: &std::path::Path) -> serde_json::Value {
    let out = kreg(db, dir)
        .args(["report", "1", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out, "report");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn batch_row(report: &serde_json::Value) -> serde_json::Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == "batch")
        .expect("a batch row")
        .clone()
}

#[tokio::test]
async fn rows_settled_at_the_first_look_get_no_more_runs() {
    let db = fresh_db("adaptive_settled").await;
    let agent = Agent::start();
    let dir = Scratch::new("adaptive_settled");
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        // Five a side at the first look: fewer could not bound the interval at the small
        // share of the level an early look may spend, however alike the numbers.
        scenario(&agent, &by_policy("100", "100"), "{ min: 5, max: 8 }", "mean"),
    )
    .unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("look: every row has its verdict"), "{stderr}");
    assert_eq!(
        jobs_per_variant(&db).await,
        vec![("batch".into(), 5, 5), ("default".into(), 5, 5)]
    );
    let row = batch_row(&report_json(&db, &dir.0));
    assert_eq!(row["comparison"]["verdict"], "no change", "{row}");
    assert_eq!(row["comparison"]["look"], 0);
}

#[tokio::test]
async fn an_inconclusive_row_gets_runs_until_its_verdict_and_a_kill_resumes_to_the_same() {
    // Constant 100 against constant 110: the permutation test's p is 2/C(2n, n), which
    // falls below the alpha the plan spends only at its last look (3, 5, 6: 6 runs a side).
    let db = fresh_db("adaptive_resume").await;
    let agent = Agent::start();
    let dir = Scratch::new("adaptive_resume");
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        scenario(&agent, &by_policy("100", "110"), "{ min: 3, max: 6 }", "mean"),
    )
    .unwrap();
    let mut child = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill the controller once the first look has added its round.
    kill_when(&db, &mut child, "SELECT count(*) FROM jobs", 7, "an adaptive round").await;
    let out = kreg(&db, &dir.0).args(["resume", "1"]).output().unwrap();
    assert_ok(&out, "resume");
    assert_eq!(
        jobs_per_variant(&db).await,
        vec![("batch".into(), 6, 6), ("default".into(), 6, 6)]
    );
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(total, 12, "no job added twice");
    let row = batch_row(&report_json(&db, &dir.0));
    let c = &row["comparison"];
    assert_eq!(c["verdict"], "improvement", "{row}");
    assert_eq!((c["look"].as_u64(), c["looks"].as_u64()), (Some(2), Some(3)), "{row}");
    assert_eq!(c["n"], serde_json::json!([6, 6]));
    let text = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("IMPROVEMENT (look 3/3)"), "{text}");
    assert!(!text.contains("rounds were decided with"), "{text}");
    // The plan's settings are stored with the run; a report judged with others says so.
    let plan: (Option<f64>, Option<f64>) = sqlx::query_as("SELECT plan_alpha, plan_min_effect FROM runs WHERE id = 1")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(plan, (Some(0.005), Some(0.02)));
    for args in [&["--alpha", "0.05"][..], &["--min-effect", "5"][..]] {
        let other = kreg(&db, &dir.0).args(["report", "1"]).args(args).output().unwrap();
        let other = String::from_utf8_lossy(&other.stdout);
        assert!(
            other.contains("this adaptive run's rounds were decided with alpha 0.005, minimum effect 2%"),
            "{args:?}: {other}"
        );
    }
    // Resuming a finished run changes nothing.
    let out = kreg(&db, &dir.0).args(["resume", "1"]).output().unwrap();
    assert_ok(&out, "resume again");
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(total, 12);
}

#[tokio::test]
async fn kreg_stats_judges_a_reports_samples_as_the_report_does() {
    let db = fresh_db("stats_same").await;
    let agent = Agent::start();
    let dir = Scratch::new("stats_same");
    let file = dir.0.join("s.yaml");
    // Noisy numbers from /dev/urandom: 100–131 under SCHED_OTHER, 104–135 under batch.
    let argv = r#"[sh, -c, "sleep 0.1; n=$(od -An -N1 -tu1 /dev/urandom); n=$((n % 32)); if grep -q '^policy *: *3' /proc/self/sched; then n=$((n + 4)); fi; echo value: $((100 + n))"]"#;
    for (kind, direction) in [("latency", "higher"), ("mean", "higher")] {
        std::fs::write(&file, scenario(&agent, argv, "8", kind)).unwrap();
        sqlx::query("TRUNCATE runs, scenarios RESTART IDENTITY CASCADE")
            .execute(&db.pool)
            .await
            .unwrap();
        let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
        assert_ok(&out, "run");
        let report = report_json(&db, &dir.0);
        let rows = report["rows"].as_array().unwrap();
        let samples = |variant: &str| -> String {
            let r = rows.iter().find(|r| r["variant"] == variant).unwrap();
            r["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| format!("{v}\n"))
                .collect()
        };
        std::fs::write(dir.0.join("a.txt"), samples("default")).unwrap();
        std::fs::write(dir.0.join("b.txt"), samples("batch")).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kreg"))
            // Two variants of one kernel: the same boot.
            .args([
                "stats",
                "--format",
                "json",
                "--kind",
                kind,
                "--direction",
                direction,
                "--same-boot",
            ])
            .arg(dir.0.join("a.txt"))
            .arg(dir.0.join("b.txt"))
            .output()
            .unwrap();
        assert_ok(&out, "stats");
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &batch_row(&report)["comparison"];
        for key in ["verdict", "change", "ci", "p", "test", "n", "reason"] {
            assert_eq!(stats[key], c[key], "{kind}: {key}: stats {stats} report {c}");
        }
    }
}
