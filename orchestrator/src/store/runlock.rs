//! A run is driven by one process at a time: a session-level advisory lock per run, held
//! on a connection of its own and released when that connection goes (the process died,
//! or the database restarted).

use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};

use super::Result;

/// The advisory-lock class of runs (the run id is the lock's second key).
const RUN_LOCKS: i32 = 4242;

/// A run's lock, held while this value lives.
pub struct RunLock {
    _conn: PoolConnection<Postgres>,
}

/// Takes run `run_id`'s lock, trying for up to `wait` (the server frees a killed
/// process's lock a moment after it died); `None` when another process still holds it.
pub async fn lock_run(db: &PgPool, run_id: i64, wait: Duration) -> Result<Option<RunLock>> {
    let mut conn = db.acquire().await?;
    let deadline = Instant::now() + wait;
    loop {
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2::INT)")
            .bind(RUN_LOCKS)
            .bind(run_id as i32)
            .fetch_one(&mut *conn)
            .await?;
        if got {
            return Ok(Some(RunLock { _conn: conn }));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
