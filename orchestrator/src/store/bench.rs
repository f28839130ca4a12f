//! What `kreg bench` reads and writes beside the ordinary store: a database of its own made
//! and dropped, the server's counters, and the fleet's and the dashboard's probes.

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, PgExecutor, PgPool};

use super::Result;

/// Makes the database `name` (plain letters, digits and `_`, made by the bench itself) on the
/// server `admin_url` reaches.
pub async fn create_database(admin_url: &str, name: &str) -> Result<()> {
    let mut admin = admin_url.parse::<PgConnectOptions>()?.connect().await?;
    sqlx::query(&format!("CREATE DATABASE {}", plain(name)))
        .execute(&mut admin)
        .await?;
    Ok(())
}

/// Drops the database `name` with its connections, if it is there.
pub async fn drop_database(admin_url: &str, name: &str) -> Result<()> {
    let mut admin = admin_url.parse::<PgConnectOptions>()?.connect().await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", plain(name)))
        .execute(&mut admin)
        .await?;
    Ok(())
}

/// A database name the bench made, as it may go into SQL unquoted.
fn plain(name: &str) -> &str {
    assert!(
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "a bench database's name: {name:?}"
    );
    name
}

/// The database's counters: transactions, rows returned, fetched and written, blocks read.
pub async fn counters(db: &PgPool) -> Result<[i64; 5]> {
    let r: (i64, i64, i64, i64, i64) = sqlx::query_as(
        "SELECT xact_commit + xact_rollback, tup_returned, tup_fetched, tup_inserted + tup_updated + tup_deleted, blks_read
         FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(db)
    .await?;
    Ok([r.0, r.1, r.2, r.3, r.4])
}

/// Jobs done, in every run.
pub async fn jobs_done(db: impl PgExecutor<'_>) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM jobs WHERE state = 'done'")
        .fetch_one(db)
        .await?)
}

/// Slots of `run` leased now.
pub async fn slots_leased(db: impl PgExecutor<'_>, run: i64) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM run_slots WHERE run_id = $1 AND state = 'leased'")
            .bind(run)
            .fetch_one(db)
            .await?,
    )
}

/// Each slot of `run` with when its SUT's lease expires (seconds since the epoch).
pub async fn slot_lease_expiry(db: impl PgExecutor<'_>, run: i64) -> Result<Vec<(i32, f64)>> {
    Ok(sqlx::query_as(
        "SELECT s.slot, EXTRACT(EPOCH FROM m.lease_expires)::FLOAT8 FROM run_slots s JOIN machines m ON m.name = s.sut
         WHERE s.run_id = $1 ORDER BY s.slot",
    )
    .bind(run)
    .fetch_all(db)
    .await?)
}

/// The database's clock (seconds since the epoch).
pub async fn now(db: impl PgExecutor<'_>) -> Result<f64> {
    Ok(sqlx::query_scalar("SELECT EXTRACT(EPOCH FROM now())::FLOAT8")
        .fetch_one(db)
        .await?)
}

/// Slots of `run` taken over from another worker, with when they were leased last.
pub async fn slots_taken_over(db: impl PgExecutor<'_>, run: i64) -> Result<Vec<(i32, f64)>> {
    Ok(sqlx::query_as(
        "SELECT slot, EXTRACT(EPOCH FROM leased_at)::FLOAT8 FROM run_slots WHERE run_id = $1 AND takeovers > 0",
    )
    .bind(run)
    .fetch_all(db)
    .await?)
}

/// The first job of `run` marked done now: one change for the pages that follow the run.
pub async fn finish_first_job(db: impl PgExecutor<'_>, run: i64) -> Result<()> {
    sqlx::query(
        "UPDATE jobs SET state = 'done', finished_at = clock_timestamp()
         WHERE id = (SELECT min(id) FROM jobs WHERE run_id = $1)",
    )
    .bind(run)
    .execute(db)
    .await?;
    Ok(())
}
