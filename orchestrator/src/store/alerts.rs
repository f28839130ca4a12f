//! Alerts: change points of a history, raised once by a scan and triaged by people.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgExecutor;

use super::Result;

pub use crate::stats::changepoint::AlertState;

/// A stored alert.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Alert {
    pub id: i64,
    pub scenario: String,
    pub workload: String,
    pub metric: String,
    pub kernel: String,
    pub variant: String,
    pub run_id: i64,
    pub previous_run_id: i64,
    pub direction: String,
    pub unit: String,
    pub before_centre: f64,
    pub after_centre: f64,
    pub before_runs: i32,
    pub after_runs: i32,
    pub change: Option<f64>,
    pub change_low: Option<f64>,
    pub change_high: Option<f64>,
    pub p: f64,
    #[sqlx(try_from = "String")]
    pub state: AlertState,
    pub note: String,
    pub created_at: DateTime<Utc>,
    pub state_changed_at: Option<DateTime<Utc>>,
}

/// An alert to raise: where it is and what the scan measured.
#[derive(Debug, Clone)]
pub struct NewAlert<'a> {
    pub scenario: &'a str,
    pub workload: &'a str,
    pub metric: &'a str,
    pub kernel: &'a str,
    pub variant: &'a str,
    pub run_id: i64,
    pub previous_run_id: i64,
    pub direction: &'a str,
    pub unit: &'a str,
    pub centres: [f64; 2],
    pub runs: [usize; 2],
    pub change: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub p: f64,
}

const COLUMNS: &str = "id, scenario, workload, metric, kernel, variant, run_id, previous_run_id, direction, unit,
    before_centre, after_centre, before_runs, after_runs, change, change_low, change_high, p, state, note,
    created_at, state_changed_at";

/// Stores `a` unless an alert of the same series and run is stored already (whose state
/// and numbers are kept); returns the new alert's id.
pub async fn raise(db: impl PgExecutor<'_>, a: &NewAlert<'_>) -> Result<Option<i64>> {
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    Ok(sqlx::query_scalar(
        "INSERT INTO alerts (scenario, workload, metric, kernel, variant, run_id, previous_run_id, direction, unit,
                             before_centre, after_centre, before_runs, after_runs, change, change_low, change_high, p)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
         ON CONFLICT (scenario, workload, metric, kernel, variant, run_id) DO NOTHING RETURNING id",
    )
    .bind(a.scenario)
    .bind(a.workload)
    .bind(a.metric)
    .bind(a.kernel)
    .bind(a.variant)
    .bind(a.run_id)
    .bind(a.previous_run_id)
    .bind(a.direction)
    .bind(a.unit)
    .bind(a.centres[0])
    .bind(a.centres[1])
    .bind(a.runs[0] as i32)
    .bind(a.runs[1] as i32)
    .bind(finite(a.change))
    .bind(finite(a.interval.map(|i| i.0)))
    .bind(finite(a.interval.map(|i| i.1)))
    .bind(a.p)
    .fetch_optional(db)
    .await?)
}

/// Alerts, newest first: in `state` (any when `None`), of `scenario` (any when `None`).
pub async fn list(db: impl PgExecutor<'_>, state: Option<AlertState>, scenario: Option<&str>) -> Result<Vec<Alert>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM alerts WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR scenario = $2)
         ORDER BY id DESC"
    ))
    .bind(state.map(AlertState::as_str))
    .bind(scenario)
    .fetch_all(db)
    .await?)
}

/// The alerts of one history (every kernel and variant), oldest first.
pub async fn of_history(db: impl PgExecutor<'_>, scenario: &str, workload: &str, metric: &str) -> Result<Vec<Alert>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM alerts WHERE scenario = $1 AND workload = $2 AND metric = $3 ORDER BY run_id, id"
    ))
    .bind(scenario)
    .bind(workload)
    .bind(metric)
    .fetch_all(db)
    .await?)
}

pub async fn get(db: impl PgExecutor<'_>, id: i64) -> Result<Option<Alert>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM alerts WHERE id = $1"))
        .bind(id)
        .fetch_optional(db)
        .await?)
}

/// Sets an alert's triage state (and its note, when given); false when there is no such
/// alert.
pub async fn set_state(db: impl PgExecutor<'_>, id: i64, state: AlertState, note: Option<&str>) -> Result<bool> {
    let done =
        sqlx::query("UPDATE alerts SET state = $2, note = coalesce($3, note), state_changed_at = now() WHERE id = $1")
            .bind(id)
            .bind(state.as_str())
            .bind(note)
            .execute(db)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// The commit a run's kernel was built from, when it was built from git.
pub async fn commit_of(db: impl PgExecutor<'_>, run_id: i64, kernel: &str) -> Result<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT git_commit FROM kernel_build_runs WHERE run_id = $1 AND kernel = $2 AND git_commit IS NOT NULL LIMIT 1",
    )
    .bind(run_id)
    .bind(kernel)
    .fetch_optional(db)
    .await?
    .flatten())
}
