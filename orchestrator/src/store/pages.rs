//! The dashboard's reads: runs with their progress and times, a run's boots, a job with its
//! results and raw outputs, kernel builds, and one metric across the runs of a scenario.
//! Read-only: nothing here writes. What may not exist comes back as an `Option`.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgExecutor;

use super::Result;
use crate::kernel::build::Fingerprint;
use crate::plan::{JobState, RunKind, RunState};

/// A run as the runs page lists it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RunItem {
    pub id: i64,
    pub scenario: String,
    #[sqlx(try_from = "String")]
    pub state: RunState,
    /// A matrix, adaptive, a bisection or a fleet run.
    #[sqlx(try_from = "String")]
    pub kind: RunKind,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    pub jobs: i64,
    pub done: i64,
    pub failed: i64,
    pub running: i64,
    pub pending: i64,
}

impl RunItem {
    /// Seconds from start to end (or to now while it runs, or to its last change when it
    /// stopped without an end).
    pub fn duration_s(&self, now: DateTime<Utc>) -> i64 {
        let end = match (self.finished_at, self.state) {
            (Some(f), _) => f,
            (None, RunState::Running) => now,
            (None, _) => self.updated_at,
        };
        (end - self.created_at).num_seconds().max(0)
    }
}

/// The runs with their jobs counted by state (each state spelled by `JobState`), each run's
/// counted on its own from the (run, state) index alone: no sort of every job of the runs
/// shown, however large they are.
static RUN_ITEMS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let count = |s: JobState| format!("count(*) FILTER (WHERE j.state = '{s}') AS {s}");
    format!(
        "SELECT r.id, s.name AS scenario, r.state, COALESCE(r.kind, 'matrix') AS kind, r.created_at, r.finished_at, r.updated_at,
                c.jobs, c.done, c.failed, c.running, c.pending
         FROM runs r JOIN scenarios s ON s.id = r.scenario_id
         CROSS JOIN LATERAL (SELECT count(*) AS jobs, {}, {}, {}, {} FROM jobs j WHERE j.run_id = r.id) c",
        count(JobState::Done),
        count(JobState::Failed),
        count(JobState::Running),
        count(JobState::Pending)
    )
});

/// Every run, newest first.
pub async fn run_items(db: impl PgExecutor<'_>) -> Result<Vec<RunItem>> {
    Ok(sqlx::query_as(&format!("{} ORDER BY r.id DESC", *RUN_ITEMS))
        .fetch_all(db)
        .await?)
}

/// Which runs a page of the list holds, newest first: those older than run `after` (when
/// given), less the first `skip`, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunsPage {
    pub after: Option<i64>,
    pub skip: i64,
    pub limit: i64,
}

/// One page of the runs, newest first (only its runs' jobs are counted).
pub async fn run_items_page(db: impl PgExecutor<'_>, page: RunsPage) -> Result<Vec<RunItem>> {
    Ok(sqlx::query_as(&format!(
        "{} WHERE r.id IN (SELECT id FROM runs WHERE $1::bigint IS NULL OR id < $1 ORDER BY id DESC OFFSET $2 LIMIT $3)
         ORDER BY r.id DESC",
        *RUN_ITEMS
    ))
    .bind(page.after)
    .bind(page.skip)
    .bind(page.limit)
    .fetch_all(db)
    .await?)
}

/// How many runs there are, and how many of them are older than run `after`.
pub async fn run_counts(db: impl PgExecutor<'_>, after: Option<i64>) -> Result<(i64, i64)> {
    Ok(
        sqlx::query_as("SELECT count(*), count(*) FILTER (WHERE $1::bigint IS NULL OR id < $1) FROM runs")
            .bind(after)
            .fetch_one(db)
            .await?,
    )
}

/// What a run's pages depend on, as text: its state and last change, the settings put
/// back, and while it has not finished its jobs done and failed and the last to finish.
/// `None` for no such run.
pub async fn run_version(db: impl PgExecutor<'_>, id: i64) -> Result<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT r.state || ' ' || r.updated_at::text
                || ' ' || (SELECT count(restored_at) FROM host_settings WHERE run_id = r.id) || CASE WHEN r.state IN ('running', 'interrupted') THEN
                  ' ' || (SELECT count(*) FILTER (WHERE state = 'done') || ' ' || count(*) FILTER (WHERE state = 'failed')
                                 || ' ' || count(*) || ' ' || coalesce(max(finished_at)::text, '-')
                          FROM jobs WHERE run_id = r.id)
                  ELSE '' END
         FROM runs r WHERE r.id = $1",
    )
    .bind(id)
    .fetch_optional(db)
    .await?)
}

pub async fn run_item(db: impl PgExecutor<'_>, id: i64) -> Result<Option<RunItem>> {
    Ok(sqlx::query_as(&format!("{} WHERE r.id = $1", *RUN_ITEMS))
        .bind(id)
        .fetch_optional(db)
        .await?)
}

/// A run's stored row (its scenario's text, its plan's settings) with its jobs counted:
/// what a run's page shows, read in one query.
#[derive(sqlx::FromRow)]
struct RunWithItem {
    #[sqlx(flatten)]
    row: super::RunRow,
    finished_at: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
    jobs: i64,
    done: i64,
    failed: i64,
    running: i64,
    pending: i64,
}

pub async fn run_with_item(db: impl PgExecutor<'_>, id: i64) -> Result<Option<(super::RunRow, RunItem)>> {
    let count = |s: JobState| format!("count(j.id) FILTER (WHERE j.state = '{s}') AS {s}");
    let found: Option<RunWithItem> = sqlx::query_as(&format!(
        "SELECT r.id, s.name AS scenario_name, s.yaml, r.source_path, r.state, r.created_at, r.plan_alpha,
                r.plan_min_effect, COALESCE(r.kind, 'matrix') AS kind, r.finished_at, r.updated_at, count(j.id) AS jobs, {}, {}, {}, {}
         FROM runs r JOIN scenarios s ON s.id = r.scenario_id LEFT JOIN jobs j ON j.run_id = r.id
         WHERE r.id = $1 GROUP BY r.id, s.name, s.yaml",
        count(JobState::Done),
        count(JobState::Failed),
        count(JobState::Running),
        count(JobState::Pending)
    ))
    .bind(id)
    .fetch_optional(db)
    .await?;
    Ok(found.map(|f| {
        let item = RunItem {
            id: f.row.id,
            scenario: f.row.scenario_name.clone(),
            state: f.row.state,
            kind: f.row.kind,
            created_at: f.row.created_at,
            finished_at: f.finished_at,
            updated_at: f.updated_at,
            jobs: f.jobs,
            done: f.done,
            failed: f.failed,
            running: f.running,
            pending: f.pending,
        };
        (f.row, item)
    }))
}

/// The runs of one scenario, oldest first.
pub async fn runs_of(db: impl PgExecutor<'_>, scenario: &str) -> Result<Vec<RunItem>> {
    Ok(
        sqlx::query_as(&format!("{} WHERE s.name = $1 ORDER BY r.id", *RUN_ITEMS))
            .bind(scenario)
            .fetch_all(db)
            .await?,
    )
}

/// A boot a run's jobs ran in, with how the engine got there.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct BootItem {
    pub kernel: String,
    pub host: String,
    pub boot_id: String,
    pub release: String,
    pub proc_version: String,
    pub nr_cpus: i32,
    pub cpu_model: String,
    pub cmdline: String,
    pub boot_method: String,
    pub schedstat_version: Option<i32>,
    pub seen_at: DateTime<Utc>,
    /// How the engine reached the host (`http URL`, `ssh USER@HOST:PORT (host key …)`, `lab`).
    pub reached: String,
}

pub async fn boots(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<BootItem>> {
    Ok(sqlx::query_as(
        "SELECT DISTINCT j.kernel, h.name AS host, h.boot_id, h.kernel_release AS release, h.proc_version,
                h.nr_cpus, h.cpu_model, h.cmdline, h.boot_method, h.schedstat_version, h.seen_at, h.reached
         FROM hosts h JOIN jobs j ON j.run_id = h.run_id AND j.boot_id = h.boot_id
         WHERE h.run_id = $1 ORDER BY h.seen_at, h.name",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}

/// A job with everything stored about it but its raw outputs' text.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct JobItem {
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub job: super::JobRow,
    pub run_id: i64,
    pub kernel_release: Option<String>,
    pub boot_id: Option<String>,
    pub observed_policy: Option<String>,
    pub tool_versions: serde_json::Value,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

pub async fn job(db: impl PgExecutor<'_>, id: i64) -> Result<Option<JobItem>> {
    Ok(sqlx::query_as(
        "SELECT id, run_id, ordinal, kernel, variant, workload, iteration, boot, state, attempts, error, failure_class, warmup,
                kernel_release, boot_id, observed_policy, tool_versions, started_at, finished_at
         FROM jobs WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(db)
    .await?)
}

/// One metric a job produced.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ResultItem {
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub kind: String,
    pub higher_is_better: bool,
}

pub async fn results_of(db: impl PgExecutor<'_>, job_id: i64) -> Result<Vec<ResultItem>> {
    Ok(sqlx::query_as(
        "SELECT metric, value, unit, kind, higher_is_better FROM results WHERE job_id = $1 ORDER BY metric",
    )
    .bind(job_id)
    .fetch_all(db)
    .await?)
}

/// A raw output of a job: its kind, its size, and its first characters (for showing
/// inline; the whole text is fetched on its own).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RawItem {
    pub kind: String,
    pub bytes: i32,
    #[serde(skip)]
    pub head: String,
}

/// A job's raw outputs, each with its first `head_chars` characters, in one query.
pub async fn raw_list(db: impl PgExecutor<'_>, job_id: i64, head_chars: i32) -> Result<Vec<RawItem>> {
    Ok(sqlx::query_as(
        "SELECT kind, octet_length(content) AS bytes, left(content, $2) AS head
         FROM raw_outputs WHERE job_id = $1 ORDER BY id",
    )
    .bind(job_id)
    .bind(head_chars)
    .fetch_all(db)
    .await?)
}

/// A kernel kreg built, with its config and log.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct BuildItem {
    pub key: String,
    pub release: String,
    #[serde(flatten)]
    #[sqlx(flatten)]
    pub made: Fingerprint,
    pub built_on: String,
    pub path: String,
    pub created_at: DateTime<Utc>,
    /// "run:kernel" pairs.
    pub used_by: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_log: Option<String>,
}

const BUILDS: &str = "SELECT b.key, b.release, b.localversion, b.tree_hash, b.config_hash, b.patches_hash, b.compiler,
        b.build_id, b.built_on, b.path, b.created_at,
        COALESCE(array_agg(r.run_id::TEXT || ':' || r.kernel ORDER BY r.run_id, r.kernel)
                 FILTER (WHERE r.run_id IS NOT NULL), '{}') AS used_by";

pub async fn builds(db: impl PgExecutor<'_>) -> Result<Vec<BuildItem>> {
    Ok(sqlx::query_as(&format!(
        "{BUILDS}, NULL::TEXT AS config, NULL::TEXT AS build_log
         FROM kernel_builds b LEFT JOIN kernel_build_runs r ON r.build_key = b.key
         GROUP BY b.key ORDER BY b.created_at DESC"
    ))
    .fetch_all(db)
    .await?)
}

pub async fn build(db: impl PgExecutor<'_>, key: &str) -> Result<Option<BuildItem>> {
    Ok(sqlx::query_as(&format!(
        "{BUILDS}, b.config, b.build_log
         FROM kernel_builds b LEFT JOIN kernel_build_runs r ON r.build_key = b.key
         WHERE b.key = $1 GROUP BY b.key"
    ))
    .bind(key)
    .fetch_optional(db)
    .await?)
}

/// The builds a run used, as (kernel, build key), in the order of the run's kernels.
pub async fn builds_of_run(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT r.kernel, min(r.build_key) FROM kernel_build_runs r
         WHERE r.run_id = $1 AND r.kernel IN (SELECT kernel FROM jobs WHERE run_id = $1)
         GROUP BY r.kernel
         ORDER BY (SELECT min(ordinal) FROM jobs j WHERE j.run_id = $1 AND j.kernel = r.kernel)",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}

/// The build a run used for one of its kernels, if kreg built it.
pub async fn build_of(db: impl PgExecutor<'_>, run_id: i64, kernel: &str) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT build_key FROM kernel_build_runs WHERE run_id = $1 AND kernel = $2 LIMIT 1")
            .bind(run_id)
            .bind(kernel)
            .fetch_optional(db)
            .await?,
    )
}

/// One sample of a metric in a run of a scenario.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct HistoryPoint {
    pub run_id: i64,
    pub created_at: DateTime<Utc>,
    /// The run's state: only finished runs (`done`) count for change points.
    #[sqlx(try_from = "String")]
    pub run_state: crate::plan::RunState,
    pub kernel: String,
    pub variant: String,
    pub value: f64,
    pub unit: String,
    #[sqlx(try_from = "String")]
    pub kind: crate::stats::MetricKind,
    pub higher_is_better: bool,
    /// Jobs of the sample's cell (run, kernel, variant, workload) that failed for the lab
    /// (infrastructure: missing measurements) and for any other reason (the kernel, the
    /// workload, a build).
    pub cell_missing: i64,
    pub cell_failed: i64,
}

pub async fn history(
    db: impl PgExecutor<'_>,
    scenario: &str,
    workload: &str,
    metric: &str,
) -> Result<Vec<HistoryPoint>> {
    Ok(sqlx::query_as(
        "SELECT r.id AS run_id, r.created_at, r.state AS run_state, j.kernel, j.variant, x.value, x.unit, x.kind,
                x.higher_is_better, f.missing AS cell_missing, f.failed AS cell_failed
         FROM results x JOIN jobs j ON j.id = x.job_id JOIN runs r ON r.id = x.run_id
         JOIN scenarios s ON s.id = r.scenario_id
         CROSS JOIN LATERAL (
             SELECT count(*) FILTER (WHERE o.failure_class = 'infrastructure') AS missing,
                    count(*) FILTER (WHERE o.failure_class IS DISTINCT FROM 'infrastructure') AS failed
             FROM jobs o WHERE o.run_id = j.run_id AND o.kernel = j.kernel AND o.variant = j.variant
               AND o.workload = j.workload AND o.state = 'failed') f
         WHERE s.name = $1 AND j.workload = $2 AND x.metric = $3 AND NOT j.warmup
         ORDER BY r.id, j.kernel, j.variant, j.iteration",
    )
    .bind(scenario)
    .bind(workload)
    .bind(metric)
    .fetch_all(db)
    .await?)
}

/// Scenario, workload and metric names that have samples, for the history page's choices.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SeriesName {
    pub scenario: String,
    pub workload: String,
    pub metric: String,
    pub runs: i64,
}

pub async fn series(db: impl PgExecutor<'_>) -> Result<Vec<SeriesName>> {
    Ok(sqlx::query_as(
        "SELECT s.name AS scenario, j.workload, x.metric, count(DISTINCT r.id) AS runs
         FROM results x JOIN jobs j ON j.id = x.job_id JOIN runs r ON r.id = x.run_id
         JOIN scenarios s ON s.id = r.scenario_id
         WHERE NOT j.warmup
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    .fetch_all(db)
    .await?)
}

/// One sample of a report row with the job that gave it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SampleItem {
    pub job_id: i64,
    pub iteration: i32,
    pub boot: i32,
    pub boot_id: Option<String>,
    pub value: f64,
    pub unit: String,
    /// A warm-up run (`warmup:`): stored and shown, never judged.
    pub warmup: bool,
    /// The command lines its measured phase ran (`commands`), when recorded.
    pub commands: Option<String>,
    /// The kernel release it ran on.
    pub kernel_release: Option<String>,
}

/// The samples of one row (workload, metric, kernel, variant) of a run, in iteration order,
/// warm-ups included (marked).
pub async fn row_samples(
    db: impl PgExecutor<'_>,
    run_id: i64,
    workload: &str,
    metric: &str,
    kernel: &str,
    variant: &str,
) -> Result<Vec<SampleItem>> {
    Ok(sqlx::query_as(
        "SELECT j.id AS job_id, j.iteration, j.boot, j.boot_id, x.value, x.unit, j.warmup, o.content AS commands,
                j.kernel_release
         FROM results x JOIN jobs j ON j.id = x.job_id
         LEFT JOIN raw_outputs o ON o.job_id = j.id AND o.kind = 'commands'
         WHERE x.run_id = $1 AND j.workload = $2 AND x.metric = $3 AND j.kernel = $4 AND j.variant = $5
         ORDER BY j.ordinal",
    )
    .bind(run_id)
    .bind(workload)
    .bind(metric)
    .bind(kernel)
    .bind(variant)
    .fetch_all(db)
    .await?)
}

/// A run's failed jobs, in run order (what a live run page lists as they fail).
pub async fn failed_jobs(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<super::JobRow>> {
    Ok(sqlx::query_as(
        "SELECT id, ordinal, kernel, variant, workload, iteration, boot, state, attempts, error, failure_class, warmup
         FROM jobs WHERE run_id = $1 AND state = 'failed' ORDER BY ordinal",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}

/// Opens the connections a report's first load uses at once (its samples on two, the rest
/// on a third) and has each read the tables a report reads, so that the first reader does
/// not wait for new PostgreSQL backends and their first look at the catalog.
pub async fn warm(db: sqlx::PgPool) {
    let one = |db: sqlx::PgPool| async move {
        let mut conn = db.acquire().await?;
        sqlx::query("SELECT 1 FROM runs r, jobs j, results x, raw_outputs o WHERE false")
            .execute(&mut *conn)
            .await?;
        Ok::<_, sqlx::Error>(conn)
    };
    // Held together, so that three distinct connections are made.
    if let Err(e) = tokio::try_join!(one(db.clone()), one(db.clone()), one(db.clone())) {
        tracing::debug!("dashboard: warming the database's connections: {e}");
    }
}
