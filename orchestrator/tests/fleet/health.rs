//! A machine that fails mid-run: its agent is SIGKILLed while its slot runs. The slot
//! moves to another pair and starts over there (what it measured on the failed pair set
//! aside, kept); the run finishes with every job once; the machine is bad and leaves the
//! pool until `kreg machines release` puts it back. A health check (`kreg machines check`,
//! the operator's scenario) of a machine whose agent is dead leaves it bad, saying so; once
//! its agent is back, a drained machine's check passes and puts it back in the pool.

use kreg_testkit::{fresh_db, Scratch};

use super::harness::{kreg_out, pool_entry, until_finished, LoggedAgent, Worker};

const SCENARIO: &str = r#"name: health
hosts:
  sut: { role: sut, transport: { kind: lab } }
kernels: [ { name: current, source: running } ]
variants: [ { name: default }, { name: batch, policy: batch } ]
workloads:
  - name: w
    kind: command
    argv: [sh, -c, "sleep 0.4; echo value: 100"]
    metrics: { value: { regex: "value: ([0-9]+)", higher_is_better: true } }
iterations: 6
"#;

/// The operator's health check: the machine's running kernel, its agent's identity, one
/// short job.
const CHECK: &str = r#"name: health-check
hosts:
  sut: { role: sut, transport: { kind: lab } }
kernels: [ { name: current, source: running } ]
workloads:
  - name: alive
    kind: command
    argv: [sh, -c, "echo value: 1"]
    metrics: { value: { regex: "value: ([0-9]+)", higher_is_better: true } }
iterations: 1
"#;

async fn rows<T>(db: &sqlx::PgPool, sql: &str) -> Vec<T>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    sqlx::query_as(sql).fetch_all(db).await.unwrap()
}

#[tokio::test]
async fn a_machine_whose_agent_dies_mid_run_goes_bad_and_the_run_finishes_on_other_pairs() {
    let db = fresh_db("fleet_health").await;
    let dir = Scratch::new("fleet-health");
    let mut agents: Vec<LoggedAgent> = ["m1", "m2", "m3"]
        .iter()
        .map(|n| LoggedAgent::start(&dir.0, n, "127.0.0.1", &[]))
        .collect();
    let mut pool = String::from("machines:\n");
    for (i, m) in ["m1", "m2", "m3"].iter().enumerate() {
        pool += &pool_entry(m, "sut", &agents[i], "rack: a", None);
    }
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    std::fs::write(dir.0.join("s.yaml"), SCENARIO).unwrap();
    let data = dir.0.join("cli");
    let run = |args: &[&str]| kreg_out(&db.url, &data, args);
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok, "{out}");
    let s = dir.0.join("s.yaml");
    let (ok, out) = run(&["submit", s.to_str().unwrap(), "--pairs", "2"]);
    assert!(ok && out.contains("run 1:"), "{out}");
    let args = [
        "--lease",
        "10",
        "--poll",
        "0.3",
        "--bad-after",
        "1",
        "--reconnect-wait",
        "2",
        "--until-empty",
    ];
    let workers: Vec<Worker> = (0..2)
        .map(|i| Worker::start(&db.url, &dir.0, &format!("w{i}"), None, &args))
        .collect();
    // Once a slot has stored two jobs on its machine, that machine's agent dies for good.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let victim: String = loop {
        let done: Vec<(String, i64)> = rows(
            &db.pool,
            "SELECT machine, count(*) FROM jobs WHERE state = 'done' AND machine IS NOT NULL GROUP BY machine ORDER BY count(*) DESC",
        )
        .await;
        if let Some((m, _)) = done.into_iter().find(|(_, n)| *n >= 2) {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "{}", workers[0].text());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let at = ["m1", "m2", "m3"].iter().position(|m| *m == victim).unwrap();
    agents[at].child.kill().unwrap();
    agents[at].child.wait().unwrap();
    assert!(
        until_finished(&db.pool, 240).await,
        "{}\n{}",
        workers[0].text(),
        workers[1].text()
    );
    let said = format!("{}\n{}", workers[0].text(), workers[1].text());
    let state: Vec<(String,)> = rows(&db.pool, "SELECT state FROM runs WHERE id = 1").await;
    assert_eq!(state[0].0, "done", "{said}");
    // Every job once, done, on a machine that stayed good: the run's two slots.
    let live: Vec<(i32, String, String, i32, String)> = rows(
        &db.pool,
        "SELECT j.slot, j.variant, j.state, j.iteration, COALESCE(j.machine, '') FROM jobs j JOIN run_slots s
           ON s.run_id = j.run_id AND s.slot = j.slot WHERE j.run_id = 1 AND s.state <> 'set_aside' ORDER BY j.ordinal",
    )
    .await;
    assert_eq!(live.len(), 12, "{live:?}\n{said}");
    assert!(live.iter().all(|j| j.2 == "done" && j.4 != victim), "{live:?}\n{said}");
    let mut cells: Vec<(String, i32)> = live.iter().map(|j| (j.1.clone(), j.3)).collect();
    cells.sort();
    cells.dedup();
    assert_eq!(cells.len(), 12, "every cell and iteration once: {live:?}");
    // What the failed pair measured is kept, apart, under a slot of its own.
    let aside: Vec<(i32, String, Option<String>)> = rows(
        &db.pool,
        "SELECT slot, COALESCE(sut, ''), error FROM run_slots WHERE run_id = 1 AND state = 'set_aside'",
    )
    .await;
    assert_eq!(aside.len(), 1, "{aside:?}\n{said}");
    assert_eq!(aside[0].1, victim);
    assert!(
        aside[0].2.as_deref().unwrap_or("").contains("the lab failed slot"),
        "{aside:?}"
    );
    let kept: Vec<(i64,)> = rows(
        &db.pool,
        &format!(
            "SELECT count(*) FROM jobs WHERE run_id = 1 AND slot = {} AND state = 'done'",
            aside[0].0
        ),
    )
    .await;
    assert!(kept[0].0 >= 2, "{kept:?}");
    assert!(said.contains(&format!("machine {victim} is bad")), "{said}");
    // The report counts the run's two pairs' jobs only, and lists no failure.
    let (ok, text) = run(&["report", "1"]);
    assert!(ok && !text.contains("failed") && !text.contains("missing"), "{text}");
    // The machine is shown bad, out of the pool; released, it is good again and taken.
    let (_, list) = run(&["machines", "list"]);
    let line = list.lines().find(|l| l.starts_with(&victim)).unwrap_or("").to_string();
    assert!(
        line.contains("BAD since ") && line.contains("1 failed by the lab"),
        "{list}"
    );
    // Its health check, the agent still dead: it stays out, bad, with the check's reason.
    std::fs::write(dir.0.join("check.yaml"), CHECK).unwrap();
    let check = dir.0.join("check.yaml");
    let (ok, out) = run(&["machines", "check", &victim, check.to_str().unwrap()]);
    assert!(!ok && out.contains("health check failed"), "{out}");
    let (_, list) = run(&["machines", "list"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with(&victim) && l.contains("BAD since ") && l.contains("health check failed")),
        "{list}"
    );
    let (ok, out) = run(&["machines", "check", "m9", check.to_str().unwrap()]);
    assert!(!ok && out.contains("no machine is named \"m9\""), "{out}");
    let (ok, out) = run(&["machines", "release", &victim]);
    assert!(ok && out.contains("(was bad) is back in the pool"), "{out}");
    agents[at] = LoggedAgent::start(&dir.0, &victim, "127.0.0.1", &[]);
    let mut pool = String::from("machines:\n");
    for (i, m) in ["m1", "m2", "m3"].iter().enumerate() {
        pool += &pool_entry(m, "sut", &agents[i], "rack: a", None);
    }
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok, "{out}");
    // A machine in the pool is not checked (a worker could take it meanwhile); drained, its
    // check runs on it and puts it back.
    let (ok, out) = run(&["machines", "check", &victim, check.to_str().unwrap()]);
    assert!(!ok && out.contains("drain it first"), "{out}");
    let (ok, out) = run(&["machines", "drain", &victim]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["machines", "check", &victim, check.to_str().unwrap()]);
    assert!(
        ok && out.contains("health check passed (run 2, 1 jobs done): back in the pool"),
        "{out}"
    );
    let (ok, out) = run(&["submit", s.to_str().unwrap(), "--pairs", "3"]);
    assert!(ok && out.contains("run 3:"), "{out}");
    let again: Vec<Worker> = (0..2)
        .map(|i| Worker::start(&db.url, &dir.0, &format!("v{i}"), None, &args))
        .collect();
    assert!(until_finished(&db.pool, 240).await, "{}", again[0].text());
    let used: Vec<(String,)> = rows(
        &db.pool,
        "SELECT DISTINCT machine FROM jobs WHERE run_id = 3 AND state = 'done' ORDER BY 1",
    )
    .await;
    assert_eq!(used.len(), 3, "{used:?}: the released machine takes slots again");
    let (_, list) = run(&["machines", "list"]);
    let line = list.lines().find(|l| l.starts_with(&victim)).unwrap_or("").to_string();
    assert!(line.contains("good ("), "{list}");
}
