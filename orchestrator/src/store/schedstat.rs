//! The raw outputs the scheduler-statistics views read back: kreg's own /proc/schedstat
//! snapshots of each done job, and `perf sched stats` reports beside them.

use sqlx::PgExecutor;

use super::Result;
use crate::plan::JobState;
use crate::record::{RawKind, When};

/// /proc/schedstat as it was before and after a done job.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SchedstatPair {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub before: String,
    pub after: String,
}

/// /proc/schedstat before and after each done job of a run.
pub async fn schedstat_pairs(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<SchedstatPair>> {
    Ok(sqlx::query_as(
        "SELECT j.kernel, j.variant, j.workload, b.content AS before, a.content AS after
         FROM jobs j
         JOIN raw_outputs b ON b.job_id = j.id AND b.kind = $3
         JOIN raw_outputs a ON a.job_id = j.id AND a.kind = $4
         WHERE j.run_id = $1 AND j.state = $2 ORDER BY j.ordinal",
    )
    .bind(run_id)
    .bind(JobState::Done.as_str())
    .bind(RawKind::Schedstat(When::Before).name())
    .bind(RawKind::Schedstat(When::After).name())
    .fetch_all(db)
    .await?)
}

/// A done job's `perf sched stats` report, with kreg's own snapshots when it took them.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SchedStatsReport {
    pub job_id: i64,
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub iteration: i32,
    pub report: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Every done job of a run that recorded `perf sched stats`, in the order run.
pub async fn sched_stats_reports(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<SchedStatsReport>> {
    Ok(sqlx::query_as(
        "SELECT j.id AS job_id, j.kernel, j.variant, j.workload, j.iteration, p.content AS report,
                b.content AS before, a.content AS after
         FROM jobs j
         JOIN raw_outputs p ON p.job_id = j.id AND p.kind = $5
         LEFT JOIN raw_outputs b ON b.job_id = j.id AND b.kind = $3
         LEFT JOIN raw_outputs a ON a.job_id = j.id AND a.kind = $4
         WHERE j.run_id = $1 AND j.state = $2 ORDER BY j.ordinal",
    )
    .bind(run_id)
    .bind(JobState::Done.as_str())
    .bind(RawKind::Schedstat(When::Before).name())
    .bind(RawKind::Schedstat(When::After).name())
    .bind(RawKind::PerfSchedStatsReport.name())
    .fetch_all(db)
    .await?)
}
