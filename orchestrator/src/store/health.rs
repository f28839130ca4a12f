//! Fleet machines' health: a slot that went well resets a machine's failures in a row; one
//! the lab failed counts against every machine of its pair (bad after `bad_after` in a row)
//! and moves to another pair, starting over there, what it measured set aside; by hand a
//! machine is drained, released or retired.

use sqlx::{PgExecutor, PgPool, Postgres, Transaction};

use super::fleet::Lease;
use super::Result;
use crate::plan::MachineHealth;

/// A slot of `machines` went well: their failures in a row are over.
pub async fn slot_went_well(db: impl PgExecutor<'_>, machines: &[&str]) -> Result<()> {
    sqlx::query("UPDATE machines SET failing = 0, slots_done = slots_done + 1, last_good = now() WHERE name = ANY($1)")
        .bind(machines)
        .execute(db)
        .await?;
    Ok(())
}

/// What became of a slot the lab failed.
#[derive(Debug, Clone, PartialEq)]
pub struct LabFailed {
    /// The machines of the pair that went bad now.
    pub went_bad: Vec<String>,
    /// The slot its measurements on the failed pair were set aside under.
    pub set_aside: i32,
}

/// The slot of lease `f` failed for the lab's reasons (`reason`) on `machines`: each
/// counts a failure, and goes bad at `bad_after` in a row; the slot's jobs are set aside
/// under a slot of their own (kept, apart) and the slot is queued again with fresh jobs, on
/// no machine yet. None when the lease was lost meanwhile (someone else has the slot).
pub async fn lab_failed(
    db: &PgPool,
    f: &Lease,
    machines: &[&str],
    reason: &str,
    bad_after: u32,
) -> Result<Option<LabFailed>> {
    let Some(mut tx) = super::fleet::ending(db, f).await? else {
        return Ok(None);
    };
    let reason = crate::secrets::redact(reason).into_owned();
    let went_bad = count_failure(&mut tx, machines, &reason, bad_after).await?;
    let aside = set_aside(&mut tx, f, &reason).await?;
    tx.commit().await?;
    Ok(Some(LabFailed {
        went_bad,
        set_aside: aside,
    }))
}

/// A failure of the lab counted against `machines`; those that went bad now.
async fn count_failure(
    tx: &mut Transaction<'_, Postgres>,
    machines: &[&str],
    reason: &str,
    bad_after: u32,
) -> Result<Vec<String>> {
    let went_bad: Vec<String> = sqlx::query_scalar::<_, Option<String>>(
        "UPDATE machines m SET failing = m.failing + 1, slots_lab_failed = m.slots_lab_failed + 1,
             health = CASE WHEN m.failing + 1 >= $2 AND m.health = 'good' THEN 'bad' ELSE m.health END,
             health_reason = CASE WHEN m.failing + 1 >= $2 AND m.health = 'good'
                 THEN format('%s failure(s) of the lab in a row; the last: %s', m.failing + 1, $3::TEXT)
                 ELSE m.health_reason END,
             health_since = CASE WHEN m.failing + 1 >= $2 AND m.health = 'good' THEN now() ELSE m.health_since END
         FROM machines old WHERE old.name = m.name AND m.name = ANY($1)
         RETURNING CASE WHEN old.health = 'good' AND m.health = 'bad' THEN m.name END",
    )
    .bind(machines)
    .bind(bad_after as i32)
    .bind(reason)
    .fetch_all(&mut **tx)
    .await?
    .into_iter()
    .flatten()
    .collect();
    Ok(went_bad)
}

/// The slot of `f` set aside and queued again on no pair; the set-aside slot's number.
async fn set_aside(tx: &mut Transaction<'_, Postgres>, f: &Lease, reason: &str) -> Result<i32> {
    // The slot's jobs, with what they stored, under a slot of their own; fresh ones (the
    // same ordinals, boots and iterations) in their place.
    let (aside, max_ordinal, max_boot): (i32, i32, i32) = sqlx::query_as(
        "SELECT (SELECT max(slot) + 1 FROM run_slots WHERE run_id = $1),
                COALESCE(max(ordinal), 0) + 1, COALESCE(max(boot), 0) + 1
         FROM jobs WHERE run_id = $1",
    )
    .bind(f.run_id)
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO run_slots (run_id, slot, state, sut, worker, epoch, leased_at, finished_at, takeovers, error)
         SELECT run_id, $3, 'set_aside', sut, worker, epoch, leased_at, now(), takeovers, $4
         FROM run_slots WHERE run_id = $1 AND slot = $2",
    )
    .bind(f.run_id)
    .bind(f.slot)
    .bind(aside)
    .bind(format!(
        "set aside: the lab failed slot {} ({reason}); it started over on another pair",
        f.slot
    ))
    .execute(&mut **tx)
    .await?;
    sqlx::query("UPDATE jobs SET slot = $3, ordinal = ordinal + $4, boot = boot + $5 WHERE run_id = $1 AND slot = $2")
        .bind(f.run_id)
        .bind(f.slot)
        .bind(aside)
        .bind(max_ordinal)
        .bind(max_boot)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO jobs (run_id, ordinal, kernel, variant, workload, iteration, boot, warmup, slot)
         SELECT run_id, ordinal - $3, kernel, variant, workload, iteration, boot - $4, warmup, $5
         FROM jobs WHERE run_id = $1 AND slot = $2",
    )
    .bind(f.run_id)
    .bind(aside)
    .bind(max_ordinal)
    .bind(max_boot)
    .bind(f.slot)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE run_slots SET state = 'queued', sut = NULL, worker = NULL, epoch = NULL, leased_at = NULL, error = NULL
         WHERE run_id = $1 AND slot = $2",
    )
    .bind(f.run_id)
    .bind(f.slot)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE machines SET lease_worker = NULL, lease_epoch = NULL, lease_heartbeat = NULL, lease_expires = NULL
         WHERE lease_epoch = $1",
    )
    .bind(f.epoch)
    .execute(&mut **tx)
    .await?;
    Ok(aside)
}

/// Sets a machine's health by hand (`kreg machines drain|release|retire`); released, its
/// failures in a row are forgotten. Why not, when there is no such machine.
/// A new epoch from the leases' sequence, for requests made outside a slot (a health
/// check): higher than any a slot holds, so a fenced agent answers them.
pub async fn new_epoch(db: impl PgExecutor<'_>) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT nextval('lease_epochs')")
        .fetch_one(db)
        .await?)
}

pub async fn set_health(
    db: &PgPool,
    name: &str,
    health: MachineHealth,
    reason: &str,
) -> Result<std::result::Result<MachineHealth, String>> {
    let before: Option<String> = sqlx::query_scalar(
        "UPDATE machines m SET health = $2, health_reason = $3, health_since = now(),
             failing = CASE WHEN $2 = 'good' THEN 0 ELSE m.failing END
         FROM machines old WHERE m.name = $1 AND old.name = m.name
         RETURNING old.health",
    )
    .bind(name)
    .bind(health.as_str())
    .bind((health != MachineHealth::Good).then_some(reason))
    .fetch_optional(db)
    .await?;
    match before {
        None => Ok(Err(format!("no machine is named {name:?} (see `kreg machines list`)"))),
        Some(h) => Ok(Ok(MachineHealth::parse(&h).ok_or_else(|| {
            super::StoreError::Malformed(format!("machine {name}: unknown health {h:?}"))
        })?)),
    }
}

/// Why a slot whose drive ended with failed jobs failed: how many of its jobs, by class,
/// and the first reason.
pub async fn slot_failures(db: impl PgExecutor<'_>, run_id: i64, slot: i32) -> Result<String> {
    let (failed, jobs, classes, first): (i64, i64, Vec<String>, Option<String>) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state = 'failed'), count(*),
                COALESCE(array_agg(DISTINCT COALESCE(failure_class, 'unclassed')) FILTER (WHERE state = 'failed'), '{}'),
                (array_agg(error ORDER BY ordinal) FILTER (WHERE state = 'failed'))[1]
         FROM jobs WHERE run_id = $1 AND slot = $2",
    )
    .bind(run_id)
    .bind(slot)
    .fetch_one(db)
    .await?;
    Ok(format!(
        "{failed} of {jobs} jobs failed ({}): {}",
        classes.join(", "),
        first.unwrap_or_else(|| "no reason stored".into())
    ))
}
