//! Settings kreg changes on hosts (a variant's sysctl, a tuning's knobs, schedstats): each
//! noted with its value before the change is made, and marked once put back, so that an
//! interrupted run's settings can be put back by whoever drives it next.

use sqlx::PgExecutor;

use super::Result;

/// Notes a setting kreg changed on a host (its value before), before the change is made.
pub async fn record_setting(
    db: impl PgExecutor<'_>,
    run_id: i64,
    host: &str,
    boot_id: &str,
    setting: &str,
    before: &str,
    after: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO host_settings (run_id, host, boot_id, setting, before, after) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (run_id, host, boot_id, setting) DO UPDATE SET after = EXCLUDED.after, restored_at = NULL",
    )
    .bind(run_id)
    .bind(host)
    .bind(boot_id)
    .bind(setting)
    .bind(before)
    .bind(after)
    .execute(db)
    .await?;
    Ok(())
}

/// Notes a knob a tuning setting changes on a host (`write`: the setting, the file, the
/// value it gets), before the change is made; `before` is the value it had.
pub async fn record_tuning(
    db: impl PgExecutor<'_>,
    run_id: i64,
    host: &str,
    boot_id: &str,
    write: &crate::tuning::Write,
    before: &str,
) -> Result<()> {
    let (item, path, after) = (&write.key, &write.path, &write.value);
    sqlx::query(
        "INSERT INTO host_settings (run_id, host, boot_id, setting, before, after, item) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (run_id, host, boot_id, setting) DO UPDATE SET after = EXCLUDED.after, item = EXCLUDED.item, restored_at = NULL",
    )
    .bind(run_id)
    .bind(host)
    .bind(boot_id)
    .bind(path)
    .bind(before)
    .bind(after)
    .bind(item)
    .execute(db)
    .await?;
    Ok(())
}

/// A setting put back to its value before.
pub async fn setting_restored(
    db: impl PgExecutor<'_>,
    run_id: i64,
    host: &str,
    boot_id: &str,
    setting: &str,
) -> Result<()> {
    sqlx::query(
        "UPDATE host_settings SET restored_at = now() WHERE run_id = $1 AND host = $2 AND boot_id = $3 AND setting = $4",
    )
    .bind(run_id)
    .bind(host)
    .bind(boot_id)
    .bind(setting)
    .execute(db)
    .await?;
    Ok(())
}

/// A setting kreg changed on a host's boot and has not put back yet (the latest change
/// first: put back in that order, CPUs come online before their own knobs are).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PendingSetting {
    pub host: String,
    pub boot_id: String,
    pub setting: String,
    pub before: String,
}

pub async fn unrestored_settings(db: impl PgExecutor<'_>, run_id: i64) -> Result<Vec<PendingSetting>> {
    Ok(sqlx::query_as(
        "SELECT host, boot_id, setting, before FROM host_settings WHERE run_id = $1 AND restored_at IS NULL ORDER BY id DESC",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}
