//! PostgreSQL through sqlx: the only module that speaks SQL. Functions take any executor
//! (pool, connection or transaction) so callers choose the transaction boundaries.

pub mod alerts;
pub mod bench;
pub mod bisect;
pub mod blobs;
mod builds;
pub mod bundle;
pub mod cluster;
mod copy;
pub mod fleet;
pub mod health;
pub mod pages;
mod provenance;
pub mod rehearsal;
mod runlock;
mod samples;
mod schedstat;
mod settings;

pub use builds::{link_build, record_build};
pub use provenance::provenance;
pub use runlock::{lock_run, RunLock};
pub use samples::{boot_samples, samples, samples_and_warmups};
pub use schedstat::{sched_stats_reports, schedstat_pairs, SchedStatsReport, SchedstatPair};
pub use settings::{record_setting, record_tuning, setting_restored, unrestored_settings, PendingSetting};

pub use crate::results::{KernelProvenance, Sample};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};

use crate::failure::FailureClass;
use crate::plan::{Job, JobState, RunKind, RunState};
use crate::record::RawKind;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// The database's errors. Each says its cause in its own message (no `source` chain, so
/// that a cause is printed once).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Db(sqlx::Error),
    #[error("database migration: {0}")]
    Migrate(sqlx::migrate::MigrateError),
    #[error("run {0} does not exist (see `kreg status`)")]
    NoSuchRun(i64),
    #[error("cannot connect to PostgreSQL at {target}: {cause}")]
    Unreachable { target: String, cause: String },
    /// A fleet worker's write under a lease it no longer holds: refused, nothing stored.
    #[error("run {run_id}, slot {slot}: the lease of epoch {epoch} is no longer held (expired, or taken over by another worker); nothing was stored")]
    Fenced { run_id: i64, slot: i32, epoch: i64 },
    /// Bytes from the server that do not read as they must (a COPY stream cut or garbled,
    /// a blob whose chunks do not hash to its name).
    #[error("{0}")]
    Malformed(String),
    /// A file to store that cannot be read, is too large, or changed while it was read.
    #[error("{0}")]
    File(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Db(e)
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        StoreError::Migrate(e)
    }
}

impl StoreError {
    /// Whether the database went away (restarted, shut down, the network to it cut), as
    /// opposed to refusing a statement: what waiting for it may cure.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            StoreError::Db(e) => connection_lost(e),
            StoreError::Unreachable { .. } => true,
            _ => false,
        }
    }
}

/// Connection failures and the server's own "shutting down" / "starting up" answers
/// (SQLSTATE class 08, 57P01–57P03).
fn connection_lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
        _ => false,
    }
}

/// Waits until the database answers again (a restarted server), looking every second, for
/// at most `limit`. The last error when it does not.
pub async fn wait_until_back(db: &PgPool, limit: std::time::Duration) -> Result<()> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let err = match sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(db).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if std::time::Instant::now() >= deadline {
            return Err(StoreError::Db(err));
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// How long connecting may take before kreg says why it could not.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

pub type Result<T> = std::result::Result<T, StoreError>;

/// Connects and brings the schema up to date.
/// One connection is made first, within [`CONNECT_TIMEOUT`], so that a server that is
/// down or refuses kreg is reported with its own reason ("connection refused", "password
/// authentication failed"), not as a pool that timed out.
pub async fn open(options: PgConnectOptions) -> Result<PgPool> {
    use sqlx::{ConnectOptions, Connection};
    let target = match options.get_socket() {
        Some(dir) => format!(
            "{} (socket in {})",
            options.get_database().unwrap_or("postgres"),
            dir.display()
        ),
        None => format!(
            "{}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("postgres")
        ),
    };
    let unreachable = |cause: String| StoreError::Unreachable {
        target: target.clone(),
        cause,
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, options.connect()).await {
        Err(_) => return Err(unreachable(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))),
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
        }
    }
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(std::time::Duration::from_secs(30))
        .connect_lazy_with(options);
    MIGRATOR.run(&pool).await?;
    settle_kinds(&pool).await?;
    Ok(pool)
}

/// Runs recorded before runs had a kind (migration 0018 settled the bisections and the
/// fleet's): an adaptive one or a plain matrix, as its stored scenario says (a scenario that
/// no longer loads is taken for a matrix; it cannot be driven either way).
async fn settle_kinds(db: &PgPool) -> Result<()> {
    let open: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT r.id, s.yaml, r.source_path FROM runs r JOIN scenarios s ON s.id = r.scenario_id WHERE r.kind IS NULL",
    )
    .fetch_all(db)
    .await?;
    for (id, yaml, source) in open {
        let dir = std::path::Path::new(&source)
            .parent()
            .unwrap_or(std::path::Path::new("/"));
        let kind = crate::scenario::from_str(&yaml, dir).map_or(RunKind::Matrix, |s| RunKind::of(&s));
        sqlx::query("UPDATE runs SET kind = $2 WHERE id = $1 AND kind IS NULL")
            .bind(id)
            .bind(kind.as_str())
            .execute(db)
            .await?;
    }
    Ok(())
}

/// Records a new run of a scenario: its text (stored once per distinct content, known by
/// its SHA-256), the run, and all its jobs pending, in one transaction. Returns the run's id.
pub async fn record_run(db: &PgPool, text: &ScenarioText<'_>, kind: RunKind, jobs: &[Job]) -> Result<i64> {
    let mut tx = db.begin().await?;
    let run_id = record_run_in(&mut tx, text, kind, jobs).await?;
    tx.commit().await?;
    Ok(run_id)
}

/// [`record_run`] within the caller's transaction.
async fn record_run_in(
    tx: &mut Transaction<'_, Postgres>,
    text: &ScenarioText<'_>,
    kind: RunKind,
    jobs: &[Job],
) -> Result<i64> {
    let scenario_id = upsert_scenario(&mut **tx, text).await?;
    let run_id = create_run(tx, scenario_id, text.source_path, kind, jobs).await?;
    blobs::record_run_files(tx, run_id, text.files).await?;
    Ok(run_id)
}

/// A scenario as a run records it: its name, its text, the path it came from, and the
/// files it carries (stored already, [`blobs::carry`]).
pub struct ScenarioText<'a> {
    pub name: &'a str,
    pub yaml: &'a str,
    pub source_path: &'a str,
    pub files: &'a [blobs::RunFile],
}

/// Stores the scenario text once per distinct content; returns its id.
async fn upsert_scenario(db: impl PgExecutor<'_>, text: &ScenarioText<'_>) -> Result<i64> {
    use sha2::Digest;
    let sha256 = hex::encode(sha2::Sha256::digest(text.yaml.as_bytes()));
    let id = sqlx::query_scalar(
        "INSERT INTO scenarios (name, yaml, sha256) VALUES ($1, $2, $3)
         ON CONFLICT (sha256) DO UPDATE SET name = EXCLUDED.name RETURNING id",
    )
    .bind(text.name)
    .bind(text.yaml)
    .bind(sha256)
    .fetch_one(db)
    .await?;
    Ok(id)
}

/// Creates a run and all its jobs, pending.
async fn create_run(
    tx: &mut Transaction<'_, Postgres>,
    scenario_id: i64,
    source_path: &str,
    kind: RunKind,
    jobs: &[Job],
) -> Result<i64> {
    let plan = crate::stats::Settings::default();
    let run_id: i64 = sqlx::query_scalar(
        "INSERT INTO runs (scenario_id, source_path, plan_alpha, plan_min_effect, kind) VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(scenario_id)
    .bind(source_path)
    .bind(plan.alpha)
    .bind(plan.min_effect)
    .bind(kind.as_str())
    .fetch_one(&mut **tx)
    .await?;
    insert_jobs(tx, run_id, jobs).await?;
    Ok(run_id)
}

async fn insert_jobs(tx: &mut Transaction<'_, Postgres>, run_id: i64, jobs: &[Job]) -> Result<()> {
    for j in jobs {
        sqlx::query(
            "INSERT INTO jobs (run_id, ordinal, kernel, variant, workload, iteration, boot, warmup) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(run_id)
        .bind(j.ordinal as i32)
        .bind(&j.kernel)
        .bind(&j.variant)
        .bind(&j.workload)
        .bind(j.iteration as i32)
        .bind(j.boot as i32)
        .bind(j.warmup)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Adds an adaptive round's jobs to a run, all or none.
pub async fn add_jobs(db: &sqlx::PgPool, run_id: i64, jobs: &[Job]) -> Result<()> {
    let mut tx = db.begin().await?;
    insert_jobs(&mut tx, run_id, jobs).await?;
    tx.commit().await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    pub id: i64,
    pub scenario_name: String,
    pub yaml: String,
    pub source_path: String,
    #[sqlx(try_from = "String")]
    pub state: RunState,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub plan_alpha: Option<f64>,
    pub plan_min_effect: Option<f64>,
    #[sqlx(try_from = "String")]
    pub kind: RunKind,
}

impl RunRow {
    /// The settings the run's adaptive rounds are decided with (kreg's defaults for a run
    /// made before they were stored).
    pub fn plan_settings(&self) -> crate::stats::Settings {
        let d = crate::stats::Settings::default();
        crate::stats::Settings {
            alpha: self.plan_alpha.unwrap_or(d.alpha),
            min_effect: self.plan_min_effect.unwrap_or(d.min_effect),
            ..d
        }
    }
}

pub async fn run(db: impl PgExecutor<'_>, run_id: i64) -> Result<RunRow> {
    sqlx::query_as(
        "SELECT r.id, s.name AS scenario_name, s.yaml, r.source_path, r.state, r.created_at, r.plan_alpha, r.plan_min_effect,
                COALESCE(r.kind, 'matrix') AS kind
         FROM runs r JOIN scenarios s ON s.id = r.scenario_id WHERE r.id = $1",
    )
    .bind(run_id)
    .fetch_optional(db)
    .await?
    .ok_or(StoreError::NoSuchRun(run_id))
}

/// A run stopped before its end: the job that was running goes back to pending (nothing of
/// it was stored) and the run is `interrupted`, to be resumed.
pub async fn interrupt_run(db: &PgPool, run_id: i64) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE jobs SET state = $2, error = NULL WHERE run_id = $1 AND state = $3")
        .bind(run_id)
        .bind(JobState::Pending.as_str())
        .bind(JobState::Running.as_str())
        .execute(&mut *tx)
        .await?;
    set_run_state(&mut *tx, run_id, RunState::Interrupted).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn set_run_state(db: impl PgExecutor<'_>, run_id: i64, state: RunState) -> Result<()> {
    sqlx::query(
        "UPDATE runs SET state = $2, updated_at = now(),
                finished_at = CASE WHEN $3 THEN NULL ELSE now() END
         WHERE id = $1",
    )
    .bind(run_id)
    .bind(state.as_str())
    .bind(state == RunState::Running)
    .execute(db)
    .await?;
    Ok(())
}

/// A job as the jobs table keeps it (what every page and the engine read of it).
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub ordinal: i32,
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub iteration: i32,
    pub boot: i32,
    #[sqlx(try_from = "String")]
    pub state: JobState,
    pub attempts: i32,
    pub error: Option<String>,
    /// Who a failed job's failure is put down to (none before classes were stored).
    #[sqlx(try_from = "OptClass")]
    pub failure_class: Option<FailureClass>,
    pub warmup: bool,
}

/// A stored failure class, or none: an unknown one is an error, never a default.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub struct OptClass(Option<String>);

impl TryFrom<OptClass> for Option<FailureClass> {
    type Error = crate::Error;

    fn try_from(c: OptClass) -> std::result::Result<Option<FailureClass>, crate::Error> {
        c.0.map(FailureClass::try_from).transpose()
    }
}

impl JobRow {
    /// The job as the plan knows it.
    pub fn to_job(&self) -> Job {
        Job {
            ordinal: self.ordinal as u32,
            kernel: self.kernel.clone(),
            variant: self.variant.clone(),
            workload: self.workload.clone(),
            iteration: self.iteration as u32,
            boot: self.boot as u32,
            warmup: self.warmup,
        }
    }
}

pub async fn jobs(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<JobRow>> {
    Ok(sqlx::query_as(
        "SELECT id, ordinal, kernel, variant, workload, iteration, boot, state, attempts, error, failure_class, warmup
         FROM jobs WHERE run_id = $1 AND slot NOT IN (SELECT slot FROM run_slots WHERE run_id = $1 AND state = 'set_aside')
         ORDER BY ordinal",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}

/// The jobs of one slot of a submitted run, in run order.
pub async fn slot_jobs(db: impl PgExecutor<'_>, run_id: i64, slot: i32) -> Result<Vec<JobRow>> {
    Ok(sqlx::query_as(
        "SELECT id, ordinal, kernel, variant, workload, iteration, boot, state, attempts, error, failure_class, warmup
         FROM jobs WHERE run_id = $1 AND slot = $2 ORDER BY ordinal",
    )
    .bind(run_id)
    .bind(slot)
    .fetch_all(db)
    .await?)
}

pub async fn start_job(db: impl PgExecutor<'_>, job_id: i64) -> Result<()> {
    sqlx::query("UPDATE jobs SET state = $2, attempts = attempts + 1, started_at = now(), error = NULL WHERE id = $1")
        .bind(job_id)
        .bind(JobState::Running.as_str())
        .execute(db)
        .await?;
    Ok(())
}

pub async fn fail_job(db: impl PgExecutor<'_>, job_id: i64, error: &str, class: FailureClass) -> Result<()> {
    sqlx::query("UPDATE jobs SET state = $3, error = $2, failure_class = $4, finished_at = now() WHERE id = $1")
        .bind(job_id)
        .bind(crate::secrets::redact(error).as_ref())
        .bind(JobState::Failed.as_str())
        .bind(class.as_str())
        .execute(db)
        .await?;
    Ok(())
}

/// What one finished job produced; stored with the job's `done` state in one transaction.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    pub kernel_release: String,
    pub boot_id: String,
    pub observed_policy: String,
    pub metrics: Vec<crate::parse::Metric>,
    /// The raw outputs, each of its kind.
    pub raw: crate::record::Outputs,
    /// "tool@host" → version.
    pub tool_versions: std::collections::BTreeMap<String, String>,
}

/// A job done: its metrics, raw outputs and `done` state (in the caller's transaction).
pub async fn finish_job(tx: &mut Transaction<'_, Postgres>, run_id: i64, job_id: i64, o: &JobOutcome) -> Result<()> {
    for m in &o.metrics {
        sqlx::query(
            "INSERT INTO results (run_id, job_id, metric, value, unit, higher_is_better, kernel_release, observed_policy, kind)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (run_id, job_id, metric) DO UPDATE SET value = EXCLUDED.value, unit = EXCLUDED.unit,
                 higher_is_better = EXCLUDED.higher_is_better, kernel_release = EXCLUDED.kernel_release,
                 observed_policy = EXCLUDED.observed_policy, kind = EXCLUDED.kind",
        )
        .bind(run_id)
        .bind(job_id)
        .bind(&m.name)
        .bind(m.value)
        .bind(&m.unit)
        .bind(m.higher_is_better)
        .bind(&o.kernel_release)
        .bind(&o.observed_policy)
        .bind(m.kind.as_str())
        .execute(&mut **tx)
        .await?;
    }
    store_raw(tx, run_id, job_id, &o.raw).await?;
    sqlx::query(
        "UPDATE jobs SET state = $6, error = NULL, finished_at = now(),
                kernel_release = $2, boot_id = $3, observed_policy = $4, tool_versions = $5 WHERE id = $1",
    )
    .bind(job_id)
    .bind(&o.kernel_release)
    .bind(&o.boot_id)
    .bind(&o.observed_policy)
    .bind(sqlx::types::Json(&o.tool_versions))
    .bind(JobState::Done.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Raw outputs are kept even for failed jobs, so the failure can be read later; with every
/// secret kreg holds masked (see [`crate::secrets`]).
pub async fn store_raw(
    tx: &mut Transaction<'_, Postgres>,
    run_id: i64,
    job_id: i64,
    raw: &crate::record::Outputs,
) -> Result<()> {
    for (kind, content) in raw.iter() {
        sqlx::query(
            "INSERT INTO raw_outputs (run_id, job_id, kind, content) VALUES ($1, $2, $3, $4)
             ON CONFLICT (job_id, kind) DO UPDATE SET content = EXCLUDED.content, created_at = now()",
        )
        .bind(run_id)
        .bind(job_id)
        .bind(kind.name())
        .bind(crate::secrets::redact(content).replace('\0', ""))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

pub async fn record_host(
    db: impl PgExecutor<'_>,
    run_id: i64,
    name: &str,
    id: &kreg_protocol::wire::Identity,
    boot_method: &str,
    reached: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO hosts (run_id, name, boot_id, kernel_release, proc_version, nr_cpus, schedstat_version, boot_method,
                            cpu_model, cmdline, reached)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (run_id, name, boot_id) DO NOTHING",
    )
    .bind(run_id)
    .bind(name)
    .bind(&id.boot_id)
    .bind(&id.kernel_release)
    .bind(&id.proc_version)
    .bind(id.nr_cpus as i32)
    .bind(id.schedstat_version.map(|v| v as i32))
    .bind(boot_method)
    .bind(&id.cpu_model)
    .bind(&id.cmdline)
    .bind(reached)
    .execute(db)
    .await?;
    Ok(())
}

pub async fn raw_output(db: impl PgExecutor<'_>, job_id: i64, kind: &RawKind) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT content FROM raw_outputs WHERE job_id = $1 AND kind = $2")
            .bind(job_id)
            .bind(kind.name())
            .fetch_optional(db)
            .await?,
    )
}
