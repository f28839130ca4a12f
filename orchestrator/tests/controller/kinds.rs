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
    sqlx::query("UPDATE runs SET kind = NULL").execute(&db.pool).await.unwrap();
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
