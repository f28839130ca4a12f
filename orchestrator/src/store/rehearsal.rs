//! What a rehearsal's run left, read for its sheet (`kreg rehearse`): its jobs,
//! boots, metrics, raw records' kinds and the settings it changed.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgPool;

/// A job of the run, as the sheet reads it.
#[derive(sqlx::FromRow)]
pub struct Job {
    pub id: i64,
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub state: String,
    pub error: Option<String>,
    pub kernel_release: Option<String>,
    pub tool_versions: sqlx::types::Json<BTreeMap<String, String>>,
}

/// What the run left, read once.
pub struct Read {
    pub jobs: Vec<Job>,
    /// kernel release → how it was booted.
    pub boots: BTreeMap<String, String>,
    /// workload → its metrics stored.
    pub metrics: BTreeMap<String, BTreeSet<String>>,
    /// job id → its raw records' kinds.
    pub raw: BTreeMap<i64, Vec<String>>,
    /// (host, setting, after, put back)
    pub settings: Vec<(String, String, String, bool)>,
}

pub async fn read(db: &PgPool, run: i64) -> Result<Read, sqlx::Error> {
    let jobs: Vec<Job> = sqlx::query_as(
        "SELECT id, kernel, variant, workload, state, error, kernel_release, tool_versions FROM jobs
         WHERE run_id = $1 ORDER BY ordinal",
    )
    .bind(run)
    .fetch_all(db)
    .await?;
    let boots: Vec<(String, String)> =
        sqlx::query_as("SELECT kernel_release, boot_method FROM hosts WHERE run_id = $1 ORDER BY id")
            .bind(run)
            .fetch_all(db)
            .await?;
    let metrics: Vec<(String, String)> = sqlx::query_as(
        "SELECT DISTINCT j.workload, r.metric FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = $1",
    )
    .bind(run)
    .fetch_all(db)
    .await?;
    let raw: Vec<(i64, String)> = sqlx::query_as("SELECT job_id, kind FROM raw_outputs WHERE run_id = $1")
        .bind(run)
        .fetch_all(db)
        .await?;
    let settings: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT host, setting, after, restored_at IS NOT NULL FROM host_settings WHERE run_id = $1 ORDER BY id",
    )
    .bind(run)
    .fetch_all(db)
    .await?;
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (w, metric) in metrics {
        m.entry(w).or_default().insert(metric);
    }
    let mut r: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (job, kind) in raw {
        r.entry(job).or_default().push(kind);
    }
    Ok(Read {
        jobs,
        boots: boots.into_iter().collect(),
        metrics: m,
        raw: r,
        settings,
    })
}
