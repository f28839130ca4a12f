//! `kreg run --only`: a report row's cell and its baseline's measured again, alone, as the
//! dashboard's "to reproduce" block says — against a real PostgreSQL, a real kreg-agent on
//! loopback and a real `kreg serve`.

use common::web::Server;
use common::{assert_ok, fresh_db, kreg, Agent, Scratch};
use kreg_testkit as common;

fn scenario(agent: &Agent) -> String {
    let workload = |name: &str| {
        format!(
            "  - name: {name}\n    kind: command\n    argv: [sh, -c, \"echo value: 1$RANDOM\"]\n    timeout: 60\n    \
             metrics:\n      value: {{ regex: \"value: ([0-9.]+)\", unit: \"\", higher_is_better: true }}\n"
        )
    };
    format!(
        "name: only\n{hosts}kernels: [ {{ name: current, source: running }} ]\n\
variants: [ {{name: default}}, {{name: batch, policy: batch}}, {{name: idle, policy: idle}} ]\n\
workloads:\n{a}{b}iterations: 3\n",
        hosts = agent.hosts_yaml(),
        a = workload("probe"),
        b = workload("other"),
    )
}

/// (variant, workload, jobs) of run `run`, in order.
async fn cells(db: &common::TestDb, run: i64) -> Vec<(String, String, i64)> {
    sqlx::query_as(
        "SELECT variant, workload, count(*) FROM jobs WHERE run_id = $1 AND state = 'done'
         GROUP BY variant, workload ORDER BY variant, workload",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn only_runs_the_cells_named_and_the_samples_page_says_how() {
    let db = fresh_db("run_only").await;
    let agent = Agent::start();
    let dir = Scratch::new("run_only");
    let file = dir.0.join("s.yaml");
    std::fs::write(&file, scenario(&agent)).unwrap();

    // Names the scenario does not have, or a pattern of the wrong shape: refused, nothing
    // recorded.
    for (only, said) in [
        (
            "current/nope/probe",
            "no variant \"nope\" in scenario only (variants: default, batch, idle)",
        ),
        ("current/batch", "expected KERNEL/VARIANT/WORKLOAD"),
        ("6.1/*/*", "no kernel \"6.1\""),
    ] {
        let out = kreg(&db, &dir.0)
            .arg("run")
            .arg(&file)
            .args(["--only", only])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(said), "{only}: {stderr}");
        assert!(stderr.contains("no run recorded"), "{stderr}");
    }
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(runs, 0);

    // The whole matrix first: 3 variants × 2 workloads × 3 iterations.
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "run");
    assert_eq!(cells(&db, 1).await.len(), 6);

    // The samples page of run 1's batch/probe row says how to measure that cell and its
    // baseline's (the first variant: one kernel) again.
    let server = Server::start(&db, &dir.0);
    let url = format!(
        "{}/api/v1/runs/1/samples?workload=probe&metric=value&kernel=current&variant=batch",
        server.base
    );
    let view: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    let command = view["reproduce"][0].as_str().unwrap().to_string();
    assert!(
        command.ends_with(" --only current/batch/probe --only current/default/probe"),
        "{command}"
    );
    // Run as given (by a shell, with this build's kreg first on the PATH).
    let kreg_bin = common::kreg_bin();
    let bin = kreg_bin.parent().unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", &command])
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
        )
        .env("DATABASE_URL", &db.url)
        .env("KREG_DATA_DIR", &dir.0)
        .env("KREG_AGENT_BIN", common::agent_bin())
        .output()
        .unwrap();
    assert_ok(&out, &command);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("run 2: 6 jobs (only, only current/batch/probe current/default/probe)"),
        "{stdout}"
    );
    assert_eq!(
        cells(&db, 2).await,
        vec![
            ("batch".into(), "probe".into(), 3),
            ("default".into(), "probe".into(), 3)
        ]
    );
    // Its report has those rows alone, batch judged against default; compared with run 1,
    // only the cells both have.
    let out = kreg(&db, &dir.0)
        .args(["report", "2", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out, "report");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<(String, String, bool)> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["workload"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
                r["comparison"].is_object(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("probe".into(), "default".into(), false),
            ("probe".into(), "batch".into(), true)
        ]
    );
    let out = kreg(&db, &dir.0)
        .args(["compare", "1", "2", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out, "compare");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 2, "{json}");
}
