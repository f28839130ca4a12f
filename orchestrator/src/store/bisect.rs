//! Bisections: what a bisection run bisects, and each boot it asked for (a measurement),
//! stored before its jobs run and completed with its value once they ran.

use sqlx::{PgExecutor, PgPool};

use super::Result;
use crate::bisect::{Bisection, Role, Rules, Stored};
use crate::failure::{Failed, FailureClass};
use crate::plan::{Job, RunKind};

pub use crate::bisect::report::Commit;

/// What a bisection run bisects.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BisectionRow {
    pub run_id: i64,
    pub kernel: String,
    pub workload: String,
    pub metric: String,
    pub variant: String,
    pub good: String,
    pub bad: String,
    /// How many commits the range has (good and bad included); the commits themselves
    /// are rows of their own (`commits`, `commits_at`).
    pub commit_count: i32,
    pub rules: sqlx::types::Json<serde_json::Value>,
    pub outcome: Option<sqlx::types::Json<serde_json::Value>>,
}

/// A boot the bisection asked for.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Measurement {
    pub seq: i32,
    pub commit_index: i32,
    /// Why it was asked (stored as its name, and the reverted commit for a revert).
    #[serde(serialize_with = "role_name")]
    pub role: Role,
    pub reverted: Option<i32>,
    pub kernel: String,
    pub boot: i32,
    pub value: Option<f64>,
    pub error: Option<String>,
    /// Who the error is put down to (none stored before classes were).
    #[serde(serialize_with = "class_name")]
    pub failure_class: Option<FailureClass>,
    pub compiled: bool,
    /// Where its time went, phase by phase (none before it was judged, or stored before
    /// phases were).
    pub phases: Option<Vec<(String, f64)>>,
}

fn class_name<S: serde::Serializer>(c: &Option<FailureClass>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_str(c.as_str()),
        None => s.serialize_none(),
    }
}

impl Measurement {
    /// Whether its value (or why there is none) is stored.
    pub fn measured(&self) -> bool {
        self.value.is_some() || self.error.is_some()
    }
}

fn role_name<S: serde::Serializer>(role: &Role, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(role.name())
}

/// A stored row; a role this code does not know is an error of the row's decoding.
impl<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> for Measurement {
    fn from_row(row: &'r sqlx::postgres::PgRow) -> std::result::Result<Self, sqlx::Error> {
        use sqlx::Row;
        let seq: i32 = row.try_get("seq")?;
        let name: String = row.try_get("role")?;
        let reverted: Option<i32> = row.try_get("reverted")?;
        let role = Role::parse(&name, reverted.map(|r| r as usize)).ok_or_else(|| sqlx::Error::ColumnDecode {
            index: "role".into(),
            source: format!("measurement {seq}: unknown role {name:?}").into(),
        })?;
        Ok(Measurement {
            seq,
            commit_index: row.try_get("commit_index")?,
            role,
            reverted,
            kernel: row.try_get("kernel")?,
            boot: row.try_get("boot")?,
            value: row.try_get("value")?,
            error: row.try_get("error")?,
            failure_class: match row.try_get::<Option<String>, _>("failure_class")? {
                Some(name) => Some(FailureClass::parse(&name).ok_or_else(|| sqlx::Error::ColumnDecode {
                    index: "failure_class".into(),
                    source: format!("measurement {seq}: unknown failure class {name:?}").into(),
                })?),
                None => None,
            },
            compiled: row.try_get("compiled")?,
            phases: row
                .try_get::<Option<sqlx::types::Json<Vec<(String, f64)>>>, _>("phases")?
                .map(|j| j.0),
        })
    }
}

/// The bisection replayed from its stored measurements (see [`Bisection::replay`]), and the
/// one asked but not measured yet.
pub fn replay(
    row: &BisectionRow,
    ms: &[Measurement],
) -> std::result::Result<(Bisection, Option<Measurement>), crate::Error> {
    let rules: Rules =
        serde_json::from_value(row.rules.0.clone()).map_err(|e| crate::Error::invalid(format!("stored rules: {e}")))?;
    let stored: Vec<Stored> = ms
        .iter()
        .map(|m| Stored {
            seq: m.seq as i64,
            commit: m.commit_index as usize,
            role: m.role,
            value: m.value,
            error: m.error.as_deref(),
            class: m.failure_class,
        })
        .collect();
    let (b, pending) = Bisection::replay(row.commit_count as usize, rules, &stored)?;
    Ok((b, pending.map(|i| ms[i].clone())))
}

/// Records a bisection: its scenario's text, a run with no jobs yet, and what it bisects,
/// in one transaction. Returns the run's id.
pub async fn record_bisection(
    db: &PgPool,
    text: &super::ScenarioText<'_>,
    b: &BisectionRow,
    commits: &[Commit],
) -> Result<i64> {
    let mut tx = db.begin().await?;
    let scenario_id = super::upsert_scenario(&mut *tx, text).await?;
    let run_id = super::create_run(&mut tx, scenario_id, text.source_path, RunKind::Bisection, &[]).await?;
    super::blobs::record_run_files(&mut tx, run_id, text.files).await?;
    sqlx::query(
        "INSERT INTO bisections (run_id, kernel, workload, metric, variant, good, bad, commit_count, rules)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(run_id)
    .bind(&b.kernel)
    .bind(&b.workload)
    .bind(&b.metric)
    .bind(&b.variant)
    .bind(&b.good)
    .bind(&b.bad)
    .bind(commits.len() as i32)
    .bind(&b.rules)
    .execute(&mut *tx)
    .await?;
    let idx: Vec<i32> = (0..commits.len() as i32).collect();
    let column = |f: fn(&Commit) -> &str| commits.iter().map(|c| f(c).to_string()).collect::<Vec<String>>();
    sqlx::query(
        "INSERT INTO bisect_commits (run_id, idx, hash, subject, author)
         SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[])",
    )
    .bind(run_id)
    .bind(&idx)
    .bind(column(|c| &c.hash))
    .bind(column(|c| &c.subject))
    .bind(column(|c| &c.author))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(run_id)
}

/// The bisection of a run, if it is one.
pub async fn bisection(db: impl PgExecutor<'_>, run_id: i64) -> Result<Option<BisectionRow>> {
    Ok(sqlx::query_as(
        "SELECT run_id, kernel, workload, metric, variant, good, bad, commit_count, rules, outcome
         FROM bisections WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_optional(db)
    .await?)
}

/// The whole range of a bisection, good first (what drives it needs every commit).
pub async fn commits(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<Commit>> {
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT hash, subject, author FROM bisect_commits WHERE run_id = $1 ORDER BY idx")
            .bind(run_id)
            .fetch_all(db)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(hash, subject, author)| Commit { hash, subject, author })
        .collect())
}

/// The commits of a bisection's range at `idx` (a page's few), by index.
pub async fn commits_at(db: impl PgExecutor<'_>, run_id: i64, idx: &[i32]) -> Result<Vec<(i32, Commit)>> {
    let rows: Vec<(i32, String, String, String)> = sqlx::query_as(
        "SELECT idx, hash, subject, author FROM bisect_commits WHERE run_id = $1 AND idx = ANY($2) ORDER BY idx",
    )
    .bind(run_id)
    .bind(idx)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(i, hash, subject, author)| (i, Commit { hash, subject, author }))
        .collect())
}

/// Every bisection's run, with what it bisects and how it ended (the outcome's `kind`, or
/// none while it goes on): what `kreg status` says beside the run.
pub async fn bisection_kinds(db: impl PgExecutor<'_>) -> Result<Vec<(i64, String, Option<String>)>> {
    Ok(sqlx::query_as(
        "SELECT run_id, workload || '/' || metric || ' ' || good || '..' || bad, outcome->>'kind'
         FROM bisections ORDER BY run_id",
    )
    .fetch_all(db)
    .await?)
}

/// Every measurement of a bisection, in the order asked.
pub async fn measurements(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<Measurement>> {
    Ok(sqlx::query_as(
        "SELECT seq, commit_index, role, reverted, kernel, boot, value, error, failure_class, compiled, phases
         FROM bisect_measurements WHERE run_id = $1 AND NOT superseded ORDER BY seq",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}

/// A measurement asked for, with its jobs, in one transaction: a resume finds both or
/// neither.
pub async fn ask_measurement(db: &PgPool, run_id: i64, m: &Measurement, jobs: &[Job]) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO bisect_measurements (run_id, seq, commit_index, role, reverted, kernel, boot)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(run_id)
    .bind(m.seq)
    .bind(m.commit_index)
    .bind(m.role.name())
    .bind(m.reverted)
    .bind(&m.kernel)
    .bind(m.boot)
    .execute(&mut *tx)
    .await?;
    super::insert_jobs(&mut tx, run_id, jobs).await?;
    tx.commit().await?;
    Ok(())
}

/// A measurement cut off after some of its jobs ran moves to a new boot with new jobs
/// (its boot is gone, and a value never mixes two boots); the jobs done in the old one stay
/// stored, counted by nothing.
/// The old boot's jobs not done fail with the reason.
pub async fn move_to_boot(db: &PgPool, run_id: i64, m: &Measurement, boot: i32, jobs: &[Job]) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE bisect_measurements SET boot = $3 WHERE run_id = $1 AND seq = $2")
        .bind(run_id)
        .bind(m.seq)
        .bind(boot)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "UPDATE jobs SET state = 'failed', error = $4
         WHERE run_id = $1 AND kernel = $2 AND boot = $3 AND state IN ('pending', 'running')",
    )
    .bind(run_id)
    .bind(&m.kernel)
    .bind(m.boot)
    .bind(format!(
        "the controller stopped during this boot; measurement {} was taken again in boot {boot}",
        m.seq
    ))
    .execute(&mut *tx)
    .await?;
    super::insert_jobs(&mut tx, run_id, jobs).await?;
    tx.commit().await?;
    Ok(())
}

/// A measurement's value, or why it has none.
pub async fn measured(
    db: impl PgExecutor<'_>,
    run_id: i64,
    seq: i32,
    value: std::result::Result<f64, &Failed>,
    compiled: bool,
) -> Result<()> {
    let (value, error, class) = match value {
        Ok(v) => (Some(v), None, None),
        Err(e) => (None, Some(e.reason.as_str()), Some(e.class.as_str())),
    };
    sqlx::query(
        "UPDATE bisect_measurements SET value = $3, error = $4, failure_class = $6, compiled = $5, measured_at = now()
         WHERE run_id = $1 AND seq = $2",
    )
    .bind(run_id)
    .bind(seq)
    .bind(value)
    .bind(error)
    .bind(compiled)
    .bind(class)
    .execute(db)
    .await?;
    Ok(())
}

/// Where a measurement's time went, phase by phase (seconds, in the order they ran).
pub async fn set_phases(db: impl PgExecutor<'_>, run_id: i64, seq: i32, phases: &[(String, f64)]) -> Result<()> {
    sqlx::query("UPDATE bisect_measurements SET phases = $3 WHERE run_id = $1 AND seq = $2")
        .bind(run_id)
        .bind(seq)
        .bind(sqlx::types::Json(phases))
        .execute(db)
        .await?;
    Ok(())
}

/// The outcome, once the bisection ended.
pub async fn set_outcome(db: impl PgExecutor<'_>, run_id: i64, outcome: &serde_json::Value) -> Result<()> {
    sqlx::query("UPDATE bisections SET outcome = $2 WHERE run_id = $1")
        .bind(run_id)
        .bind(sqlx::types::Json(outcome))
        .execute(db)
        .await?;
    Ok(())
}

/// The sequence number the next measurement takes (after every stored one, set-aside ones
/// included).
pub async fn next_seq(db: impl PgExecutor<'_>, run_id: i64) -> Result<i32> {
    let max: Option<i32> = sqlx::query_scalar("SELECT max(seq) FROM bisect_measurements WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(db)
        .await?;
    Ok(max.unwrap_or(0) + 1)
}

/// The measurements a finished bisection ended on that the lab failed: the last ones, of
/// one commit asked for one reason, each failed with the `infrastructure` class. Empty when
/// the last measurement has a value or failed for another reason.
pub fn lab_failures_at_end(ms: &[Measurement]) -> Vec<i32> {
    let Some(last) = ms.last() else { return Vec::new() };
    ms.iter()
        .rev()
        .take_while(|m| {
            m.commit_index == last.commit_index
                && m.role == last.role
                && m.value.is_none()
                && m.failure_class == Some(FailureClass::Infrastructure)
        })
        .map(|m| m.seq)
        .collect()
}

/// A finished bisection opened again: `seqs` set aside (kept, never replayed) and its
/// outcome cleared, in one transaction.
pub async fn reopen(db: &PgPool, run_id: i64, seqs: &[i32]) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE bisect_measurements SET superseded = true WHERE run_id = $1 AND seq = ANY($2)")
        .bind(run_id)
        .bind(seqs)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE bisections SET outcome = NULL WHERE run_id = $1")
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}
