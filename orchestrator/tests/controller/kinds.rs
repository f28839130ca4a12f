//! A run's kind is fixed when it is recorded (a matrix, adaptive, a bisection, a fleet run)
//! and read with the run; runs recorded before kinds existed get theirs when kreg opens the
//! database: from their side tables (the migration) or from their stored scenario.

use kreg::plan::RunKind;
use kreg_testkit::{fresh_db, stored};

async fn kind_of(pool: &sqlx::PgPool, run: i64) -> RunKind {
    kreg::store::run(pool, run).await.unwrap().kind
}

#[tokio::test]
async fn kinds_are_recorded_and_runs_of_before_are_settled_from_their_scenario() {
    let db = fresh_db("kinds").await;
    // A fixed matrix and an adaptive one, as `kreg run` records them.
    let (fixed, _) = stored::record(&db, "kinds-fixed", 2, "2").await;
    let (adaptive, _) = stored::record(&db, "kinds-adaptive", 2, "{ min: 3, max: 9 }").await;
    assert_eq!(kind_of(&db.pool, fixed).await, RunKind::Matrix);
    assert_eq!(kind_of(&db.pool, adaptive).await, RunKind::Adaptive);
    let listed = kreg::store::pages::run_item(&db.pool, adaptive).await.unwrap().unwrap();
    assert_eq!(listed.kind, RunKind::Adaptive);
    // Recorded before runs had a kind: none stored; read as a matrix until settled, and
    // settled by the scenario when the database is opened again.
    sqlx::query("UPDATE runs SET kind = NULL")
        .execute(&db.pool)
        .await
        .unwrap();
    assert_eq!(kind_of(&db.pool, adaptive).await, RunKind::Matrix);
    let again = kreg::store::open(db.url.parse().unwrap()).await.unwrap();
    assert_eq!(kind_of(&again, fixed).await, RunKind::Matrix);
    assert_eq!(kind_of(&again, adaptive).await, RunKind::Adaptive);
    let unsettled: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE kind IS NULL")
        .fetch_one(&again)
        .await
        .unwrap();
    assert_eq!(unsettled, 0);
    // A kind the code does not know is refused by the database.
    let bad = sqlx::query("UPDATE runs SET kind = 'sweep' WHERE id = $1")
        .bind(fixed)
        .execute(&again)
        .await;
    assert!(bad.is_err(), "an unknown kind was stored");
}

/// `kreg run` reads its run once and parses its scenario once, from recording it to its
/// final report (the drive works on the session it opened): counted from the statements it
/// logs (`KREG_LOG`), as the run page's query count is, and from its "scenario parsed" lines.
/// A resume reads the run once more (its own session), and parses the stored text once.
#[tokio::test]
async fn kreg_run_reads_its_run_once_and_parses_its_scenario_once() {
    use kreg_testkit::{kreg, Agent, Scratch};
    let db = fresh_db("walk").await;
    let agent = Agent::start();
    let dir = Scratch::new("walk");
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        format!(
            "name: walk\n{}kernels: [ {{ name: current, source: running }} ]\nworkloads:\n  - name: probe\n    kind: command\n    argv: [sh, -c, \"echo value: 1\"]\n    metrics: {{ value: {{ regex: \"value: ([0-9]+)\", higher_is_better: true }} }}\niterations: 2\n",
            agent.hosts_yaml()
        ),
    )
    .unwrap();
    let logged = |args: &[&str]| {
        let out = kreg(&db, &dir.0)
            .args(args)
            .env("KREG_LOG", "sqlx::query=debug,kreg::scenario_file=debug")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        let reads = err
            .lines()
            .filter(|l| {
                l.contains("sqlx::query")
                    && l.contains("FROM runs r JOIN scenarios s ON s.id = r.scenario_id WHERE r.id")
            })
            .count();
        let parses = err.lines().filter(|l| l.contains("scenario parsed")).count();
        (String::from_utf8_lossy(&out.stdout).to_string(), reads, parses)
    };
    let (out, reads, parses) = logged(&["run", file.to_str().unwrap()]);
    assert!(out.contains("run 1: 2 jobs done, 0 failed"), "{out}");
    assert_eq!(
        (reads, parses),
        (1, 1),
        "the run read {reads} times, the scenario parsed {parses} times"
    );
    // A resume of the finished run: nothing to do, read once, nothing parsed.
    let (out, reads, parses) = logged(&["resume", "1"]);
    assert!(out.contains("nothing to resume"), "{out}");
    assert_eq!((reads, parses), (1, 0));
}
