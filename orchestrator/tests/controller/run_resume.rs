//! `kreg run` and `kreg resume` against a real PostgreSQL and a real kreg-agent on loopback.

use common::{assert_ok, fresh_db, kill_when, kreg, Agent, Scratch};
use kreg_testkit as common;

fn scenario(agent: &Agent, variants: &str, argv: &str, iterations: u32) -> String {
    format!(
        r#"
name: it
{hosts}kernels: [ {{ name: current, source: running }} ]
variants: {variants}
workloads:
  - name: probe
    kind: command
    argv: {argv}
    timeout: 60
    metrics:
      value: {{ regex: "value: ([0-9]+)", unit: "", higher_is_better: true }}
      policy: {{ regex: "policy\\s*:\\s*([0-9]+)", unit: "", higher_is_better: true }}
iterations: {iterations}
"#,
        hosts = agent.hosts_yaml(),
    )
}

async fn count(db: &common::TestDb, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&db.pool).await.unwrap()
}

#[tokio::test]
async fn killed_run_resumes_without_repeating_or_duplicating() {
    let db = fresh_db("resume").await;
    let agent = Agent::start();
    let dir = Scratch::new("resume");
    let file = dir.0.join("s.yaml");
    let argv = r#"[sh, -c, "sleep 0.4; echo value: 7; grep '^policy' /proc/self/sched"]"#;
    std::fs::write(
        &file,
        scenario(&agent, "[ {name: default}, {name: batch, policy: batch} ]", argv, 3),
    )
    .unwrap();

    let mut child = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill the controller without warning once two jobs are stored.
    kill_when(
        &db,
        &mut child,
        "SELECT count(*) FROM jobs WHERE state = 'done'",
        2,
        "two jobs stored",
    )
    .await;

    let done_before: Vec<(i64, i64)> =
        sqlx::query_as("SELECT j.id, r.id FROM jobs j JOIN results r ON r.job_id = j.id AND r.metric = 'value' WHERE j.state = 'done' ORDER BY j.id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert!(
        done_before.len() >= 2 && done_before.len() < 6,
        "killed too late: {done_before:?}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM runs WHERE state = 'running'").await, 1);

    let out = kreg(&db, &dir.0).args(["resume", "1"]).output().unwrap();
    assert_ok(&out, "resume failed");

    // Exactly kernels × variants × iterations samples per metric, one per job.
    for metric in ["value", "policy"] {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM results WHERE metric = $1")
            .bind(metric)
            .fetch_one(&db.pool)
            .await
            .unwrap();
        assert_eq!(n, 6, "{metric}");
    }
    assert_eq!(
        count(&db, "SELECT count(DISTINCT job_id) FROM results WHERE metric = 'value'").await,
        6
    );
    assert_eq!(count(&db, "SELECT count(*) FROM jobs WHERE state = 'done'").await, 6);
    assert_eq!(count(&db, "SELECT count(*) FROM runs WHERE state = 'done'").await, 1);
    // Jobs finished before the kill were not run again: same result rows, one attempt.
    for (job, result) in done_before {
        let (rid, attempts): (i64, i32) =
            sqlx::query_as("SELECT r.id, j.attempts FROM results r JOIN jobs j ON j.id = r.job_id WHERE j.id = $1 AND r.metric = 'value'")
                .bind(job)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert_eq!((rid, attempts), (result, 1), "job {job} was repeated");
    }
    // Raw outputs are stored beside the metrics, one per kind per job.
    assert_eq!(
        count(&db, "SELECT count(*) FROM raw_outputs WHERE kind = 'stdout'").await,
        6
    );

    // The report shows n=3 for each variant of each metric: one table (kernel current),
    // two metric lines, a value column per variant.
    let out = kreg(&db, &dir.0).args(["report", "1"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("probe (kernel current)"), "{text}");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| value") || l.starts_with("| policy"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines.iter().all(|l| l.matches(" (3) ").count() == 2), "{text}");
}

#[tokio::test]
async fn observed_policy_is_stored_with_each_result() {
    let db = fresh_db("policy").await;
    let agent = Agent::start();
    let dir = Scratch::new("policy");
    let file = dir.0.join("s.yaml");
    let argv = r#"[sh, -c, "sleep 0.3; echo value: 1; grep '^policy' /proc/self/sched"]"#;
    std::fs::write(
        &file,
        scenario(
            &agent,
            "[ {name: default}, {name: batch, policy: batch}, {name: idle, policy: idle} ]",
            argv,
            1,
        ),
    )
    .unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    assert_ok(&out, "kreg");
    let rows: Vec<(String, String, f64)> = sqlx::query_as(
        "SELECT j.variant, r.observed_policy, r.value FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE r.metric = 'policy' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    // The stored policy is what the agent saw; the value is what the kernel told the
    // workload itself through /proc/self/sched (0 = SCHED_OTHER, 3 = BATCH, 5 = IDLE).
    assert_eq!(
        rows,
        [
            ("default".into(), "other".into(), 0.0),
            ("batch".into(), "batch".into(), 3.0),
            ("idle".into(), "idle".into(), 5.0)
        ]
    );
    let host_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM hosts WHERE name = 'here' AND boot_method = 'none'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(host_rows, 1);
}

#[tokio::test]
async fn wrong_token_unreachable_host_or_missing_token_file_record_no_run() {
    let db = fresh_db("badhost").await;
    let agent = Agent::start();
    let dir = Scratch::new("badhost");
    // The controller's token file holds another token than the agent's.
    let wrong = dir.0.join("wrong-token");
    std::fs::write(&wrong, "not-the-token-the-agent-has").unwrap();
    let file = dir.0.join("s.yaml");
    let text = scenario(&agent, "[ {name: default} ]", "[echo, 'value: 1']", 1)
        .replace(&agent.token_file.display().to_string(), &wrong.display().to_string());
    std::fs::write(&file, &text).unwrap();
    let runs = |db| async move { count(db, "SELECT count(*) FROM runs").await };
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("host here: agent at") && stderr.contains("refused the token"),
        "{stderr}"
    );
    assert!(stderr.contains("no run recorded"), "{stderr}");
    assert_eq!(runs(&db).await, 0);

    // The agent gone: the real cause is said, not "error sending request" alone.
    drop(agent);
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is unreachable") && stderr.contains("Connection refused"),
        "{stderr}"
    );
    assert_eq!(runs(&db).await, 0);

    // A token file that is not there: its FILE:LINE:COL, and no run either.
    std::fs::remove_file(&wrong).unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let f = file.display().to_string();
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with(&format!("{f}:")) && l.contains("token_file: ") && l.contains("No such file")),
        "{stderr}"
    );
    assert_eq!(runs(&db).await, 0);
}

/// A run is driven by one process at a time: a `kreg resume` of a run another controller is
/// driving is refused (after the lock's wait), says why, and stores nothing; the first
/// controller goes on to the end, each job once.
#[tokio::test]
async fn a_second_controller_on_a_run_being_driven_is_refused() {
    let db = fresh_db("second_driver").await;
    let agent = Agent::start();
    let dir = Scratch::new("second_driver");
    let file = dir.0.join("s.yaml");
    let argv = r#"[sh, -c, "sleep 1.5; echo value: 7; grep '^policy' /proc/self/sched"]"#;
    std::fs::write(&file, scenario(&agent, "[ {name: default} ]", argv, 12)).unwrap();
    let mut first = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while count(&db, "SELECT count(*) FROM jobs WHERE state = 'done'").await < 1 {
        assert!(std::time::Instant::now() < deadline, "no job done in time");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let run: i64 = count(&db, "SELECT max(id) FROM runs").await;
    let second = kreg(&db, &dir.0).args(["resume", &run.to_string()]).output().unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second controller was let in: {said}");
    assert!(said.contains("being driven by another kreg process"), "{said}");
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first controller stopped early"
    );
    assert_ok(&first.wait_with_output().unwrap(), "the first controller");
    assert_eq!(count(&db, "SELECT count(*) FROM jobs WHERE state = 'done'").await, 12);
    assert_eq!(count(&db, "SELECT count(*) FROM jobs WHERE attempts > 1").await, 0);
    assert_eq!(
        count(&db, "SELECT count(*) FROM results WHERE metric = 'value'").await,
        12
    );
}
