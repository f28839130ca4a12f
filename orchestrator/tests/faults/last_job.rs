//! The controller killed in the moment after a run's last job was stored and before the
//! machine's settings were put back and the run marked done: the random kills reach that
//! moment only now and then, so it is also set up exactly here. A run stored done is taken
//! back to what that kill leaves (the tuned variant's sysctl still set and noted as not put
//! back, the run `running`), on the real agent and in the database; `kreg resume` must put
//! the sysctl back and end the run done, running no job again.

use std::time::Duration;

use super::common::fresh_db;
use super::{account, finish, knob, kreg, outcome, Case, LoopAgent, Row, KNOB};

pub async fn killed_after_the_last_job() -> Row {
    let db = fresh_db("faultlast").await;
    let agent = LoopAgent::start();
    let case = Case::new("last", 3, &agent.hosts_yaml(), "0.1", 60, 1);
    let orig = knob();
    let data = case.dir.0.join("data");
    let mut row = Row {
        fault: "controller SIGKILL between a run's last job and its end".into(),
        count: 1,
        ..Row::default()
    };
    let (ok, text) = finish(
        kreg(&db.url, &data).arg("run").arg(case.file()).spawn().unwrap(),
        Duration::from_secs(120),
    );
    assert!(ok, "the run before the fault: {text}");
    let run: i64 = sqlx::query_scalar("SELECT max(id) FROM runs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    // What the kill leaves: the knob as the tuned variant set it, noted as changed.
    std::fs::write(KNOB, &case.set).unwrap();
    let noted = sqlx::query("UPDATE host_settings SET restored_at = NULL WHERE run_id = $1 AND setting = $2")
        .bind(run)
        .bind(KNOB)
        .execute(&db.pool)
        .await
        .unwrap()
        .rows_affected();
    sqlx::query("UPDATE runs SET state = 'running' WHERE id = $1")
        .bind(run)
        .execute(&db.pool)
        .await
        .unwrap();
    if noted != 1 {
        std::fs::write(KNOB, &orig).unwrap();
        row.checks
            .push(format!("the run noted {noted} changes of {KNOB}, not one"));
    }
    let attempts = case.attempts();
    let (ok, text) = finish(
        kreg(&db.url, &data).args(["resume", &run.to_string()]).spawn().unwrap(),
        Duration::from_secs(120),
    );
    account(&db.pool, &case, &orig, &mut row).await;
    if case.attempts() != attempts {
        row.checks
            .push(format!("the resume ran {} job(s) again", case.attempts() - attempts));
    }
    let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    if state != "done" {
        row.checks.push(format!("the run ends {state}, not done"));
    }
    row.done = ok;
    row.outcome = outcome(ok, &text, "left by the interrupted attempt");
    row
}
