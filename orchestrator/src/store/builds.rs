//! Kernel builds and the runs that used them.

use sqlx::PgExecutor;

use super::Result;
use crate::kernel::build::Built;

/// Records a build (once per key; the first record wins, as the build is the same).
pub async fn record_build(db: impl PgExecutor<'_>, b: &Built, built_on: &str) -> Result<()> {
    let config = std::fs::read_to_string(b.config_path()).unwrap_or_default();
    let log = std::fs::read_to_string(b.log_path()).unwrap_or_default();
    sqlx::query(
        "INSERT INTO kernel_builds (key, release, localversion, tree_hash, config_hash, patches_hash, compiler,
                                    build_id, built_on, path, config, build_log)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (key) DO NOTHING",
    )
    .bind(&b.key)
    .bind(&b.release)
    .bind(&b.made.localversion)
    .bind(&b.made.tree_hash)
    .bind(&b.made.config_hash)
    .bind(&b.made.patches_hash)
    .bind(&b.made.compiler)
    .bind(&b.made.build_id)
    .bind(built_on)
    .bind(b.dir.display().to_string())
    .bind(config.replace('\0', ""))
    .bind(log.replace('\0', ""))
    .execute(db)
    .await?;
    Ok(())
}

/// Says that `run_id` used build `key` as kernel `kernel`, checked out at `commit` (for a
/// git tree): what a history's change point is bisected between.
pub async fn link_build(
    db: impl PgExecutor<'_>,
    key: &str,
    run_id: i64,
    kernel: &str,
    commit: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO kernel_build_runs (build_key, run_id, kernel, git_commit) VALUES ($1, $2, $3, $4)
         ON CONFLICT (build_key, run_id, kernel) DO UPDATE SET git_commit = coalesce(EXCLUDED.git_commit, kernel_build_runs.git_commit)",
    )
    .bind(key)
    .bind(run_id)
    .bind(kernel)
    .bind(commit)
    .execute(db)
    .await?;
    Ok(())
}
