//! The fleet's tables: machines, workers, submitted runs and their slots (a share of a
//! run's jobs for one machine pair), and the leases workers hold on machines.
//!
//! A slot is claimed with `FOR UPDATE SKIP LOCKED` together with a free pair of machines;
//! the lease gets a new epoch from the `lease_epochs` sequence, so epochs only grow. A
//! lease lives while its worker's heartbeat moves its expiry on; once expired, another
//! worker may take the slot over with a higher epoch. A job is stored only while its
//! writer's epoch is the slot's epoch and the lease has not expired ([`check_fence`],
//! which takes the slot's row in share mode: a take-over, which locks it for update,
//! comes strictly before or after).

use std::collections::BTreeMap;

use sqlx::types::Json;
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};

use super::{Result, StoreError};
use crate::plan::{Job, MachineHealth, SlotState};
use crate::scenario::Role;

/// The labels of a machine, or those a run asks for.
pub type Labels = BTreeMap<String, String>;

/// A machine as the pool keeps it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MachineRow {
    pub name: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub pool_yaml: String,
    pub pool_dir: String,
    pub loadgen: Option<String>,
    pub labels: Json<Labels>,
    /// Labels that only describe it (never matched nor compared).
    pub about: Json<Labels>,
    pub lease_worker: Option<i64>,
    pub lease_epoch: Option<i64>,
    /// When the current lease began, or the last one when free.
    pub lease_since: Option<chrono::DateTime<chrono::Utc>>,
    pub lease_heartbeat: Option<chrono::DateTime<chrono::Utc>>,
    pub lease_expires: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether the lease (if any) is still in force, by the database's clock.
    pub leased: bool,
    /// The id its agent reported when the machine was last added and reached.
    pub agent_id: Option<String>,
    #[sqlx(try_from = "String")]
    pub health: MachineHealth,
    /// Why it is not good (what went wrong last, or what the operator said).
    pub health_reason: Option<String>,
    pub health_since: Option<chrono::DateTime<chrono::Utc>>,
    /// Slots the lab failed on it in a row.
    pub failing: i32,
    pub slots_done: i32,
    pub slots_lab_failed: i32,
    /// When a slot last went well on it.
    pub last_good: Option<chrono::DateTime<chrono::Utc>>,
}

const MACHINE_COLUMNS: &str = "name, role, pool_yaml, pool_dir, loadgen, labels, about, lease_worker, lease_epoch, lease_since, lease_heartbeat, lease_expires, COALESCE(lease_expires > now(), false) AS leased, agent_id, health, health_reason, health_since, failing, slots_done, slots_lab_failed, last_good";

/// A machine to register (or update): its role, its pool file's text and folder.
pub struct NewMachine<'a> {
    pub name: &'a str,
    pub role: Role,
    pub loadgen: Option<&'a str>,
    pub labels: &'a Labels,
    pub about: &'a Labels,
    /// The id its agent reported now (None: not reached; the one on record stays).
    pub agent_id: Option<&'a str>,
}

/// Registers the machines of one pool file, or updates them (their leases are kept).
pub async fn add_machines(db: &PgPool, pool_yaml: &str, pool_dir: &str, machines: &[NewMachine<'_>]) -> Result<()> {
    let mut tx = db.begin().await?;
    for m in machines {
        sqlx::query(
            "INSERT INTO machines (name, role, pool_yaml, pool_dir, loadgen, labels, agent_id, about) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (name) DO UPDATE SET role = EXCLUDED.role, pool_yaml = EXCLUDED.pool_yaml, pool_dir = EXCLUDED.pool_dir,
                 loadgen = EXCLUDED.loadgen, labels = EXCLUDED.labels, about = EXCLUDED.about,
                 agent_id = COALESCE(EXCLUDED.agent_id, machines.agent_id)",
        )
        .bind(m.name)
        .bind(m.role.as_str())
        .bind(pool_yaml)
        .bind(pool_dir)
        .bind(m.loadgen)
        .bind(Json(m.labels))
        .bind(m.agent_id)
        .bind(Json(m.about))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Every machine, by name.
pub async fn machines(db: impl PgExecutor<'_>) -> Result<Vec<MachineRow>> {
    Ok(
        sqlx::query_as(&format!("SELECT {MACHINE_COLUMNS} FROM machines ORDER BY name"))
            .fetch_all(db)
            .await?,
    )
}

/// Removes a machine that no lease holds and no unfinished slot is pinned to; why not
/// otherwise.
pub async fn remove_machine(db: &PgPool, name: &str) -> Result<std::result::Result<(), String>> {
    let mut tx = db.begin().await?;
    let row: Option<(bool,)> =
        sqlx::query_as("SELECT COALESCE(lease_expires > now(), false) FROM machines WHERE name = $1 FOR UPDATE")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((leased,)) = row else {
        return Ok(Err(format!("no machine is named {name:?} (see `kreg machines list`)")));
    };
    if leased {
        return Ok(Err(format!("{name} is leased by a worker right now")));
    }
    let pinned: Vec<(i64, i32)> = sqlx::query_as(
        "SELECT run_id, slot FROM run_slots WHERE sut = $1 AND state IN ('queued', 'leased') ORDER BY run_id, slot",
    )
    .bind(name)
    .fetch_all(&mut *tx)
    .await?;
    if let Some((run, slot)) = pinned.first() {
        return Ok(Err(format!(
            "{name} runs slot {slot} of run {run}, not finished (its jobs stay on one machine)"
        )));
    }
    sqlx::query("UPDATE machines SET loadgen = NULL WHERE loadgen = $1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE run_slots SET sut = NULL WHERE sut = $1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM machines WHERE name = $1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Ok(()))
}

/// What `kreg submit` records beside the run.
pub struct Submission<'a> {
    pub pairs: i32,
    pub labels: &'a Labels,
    pub mix_labels: bool,
    pub needs_loadgen: bool,
}

/// Records a submitted run: the scenario, the run, its jobs each with its slot, the run's
/// fleet settings and its slots queued, in one transaction. Returns the run's id.
pub async fn submit(
    db: &PgPool,
    text: &super::ScenarioText<'_>,
    jobs: &[(Job, i32)],
    s: &Submission<'_>,
) -> Result<i64> {
    let plain: Vec<Job> = jobs.iter().map(|(j, _)| j.clone()).collect();
    let mut tx = db.begin().await?;
    let run_id = super::record_run_in(&mut tx, text, crate::plan::RunKind::Fleet, &plain).await?;
    for (j, slot) in jobs {
        sqlx::query("UPDATE jobs SET slot = $3 WHERE run_id = $1 AND ordinal = $2")
            .bind(run_id)
            .bind(j.ordinal as i32)
            .bind(slot)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO fleet_runs (run_id, pairs, labels, mix_labels, needs_loadgen) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(run_id)
    .bind(s.pairs)
    .bind(Json(s.labels))
    .bind(s.mix_labels)
    .bind(s.needs_loadgen)
    .execute(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO run_slots (run_id, slot) SELECT $1, g FROM generate_series(0, $2 - 1) g")
        .bind(run_id)
        .bind(s.pairs)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(run_id)
}

/// A run's fleet settings, when it was submitted (None: a run of `kreg run`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FleetRun {
    pub pairs: i32,
    pub labels: Json<Labels>,
    pub mix_labels: bool,
    pub needs_loadgen: bool,
}

pub async fn fleet_run(db: impl PgExecutor<'_>, run_id: i64) -> Result<Option<FleetRun>> {
    Ok(
        sqlx::query_as("SELECT pairs, labels, mix_labels, needs_loadgen FROM fleet_runs WHERE run_id = $1")
            .bind(run_id)
            .fetch_optional(db)
            .await?,
    )
}

/// A worker comes up, saying it is alive at least every `every_secs`: its id.
pub async fn register_worker(db: &PgPool, name: &str, every_secs: f64) -> Result<i64> {
    Ok(
        sqlx::query_scalar("INSERT INTO workers (name, heartbeat_every_secs) VALUES ($1, $2) RETURNING id")
            .bind(name)
            .bind(every_secs)
            .fetch_one(db)
            .await?,
    )
}

/// A worker stops on purpose; its leases go (the slots it held are queued again for
/// whoever comes next).
pub async fn worker_stopped(db: &PgPool, worker: i64) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE workers SET stopped_at = now() WHERE id = $1")
        .bind(worker)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE machines SET lease_expires = now() WHERE lease_worker = $1 AND lease_expires > now()")
        .bind(worker)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// A slot a worker holds now: the run, the slot, the lease's epoch, its machines.
#[derive(Debug, Clone)]
pub struct Claim {
    pub run_id: i64,
    pub slot: i32,
    pub epoch: i64,
    pub sut: MachineRow,
    pub loadgen: Option<MachineRow>,
    /// Another worker held the slot before and lost its lease.
    pub takeover: bool,
}

impl Claim {
    /// The lease the claim holds.
    pub fn lease(&self) -> Lease {
        Lease {
            run_id: self.run_id,
            slot: self.slot,
            epoch: self.epoch,
        }
    }
}

#[derive(sqlx::FromRow)]
struct Candidate {
    run_id: i64,
    slot: i32,
    #[sqlx(try_from = "String")]
    state: SlotState,
    sut: Option<String>,
    labels: Json<Labels>,
    mix_labels: bool,
    needs_loadgen: bool,
}

/// Claims the first slot (first in, first out: by run, then slot) that is queued, or whose
/// lease expired, together with a free pair of machines for it, under a new lease of
/// `lease_secs`. Only slots a free good machine could take are looked at, so that runs
/// waiting for busy machines of one label never hold up a run whose machines are free.
/// None: nothing to do now.
pub async fn claim(db: &PgPool, worker: i64, lease_secs: f64) -> Result<Option<Claim>> {
    let mut tx = db.begin().await?;
    // Each look at the queue says the worker is alive, idle or not.
    worker_alive(&mut *tx, worker).await?;
    let candidates: Vec<Candidate> = sqlx::query_as(
        "SELECT s.run_id, s.slot, s.state, s.sut, f.labels, f.mix_labels, f.needs_loadgen
         FROM run_slots s JOIN fleet_runs f ON f.run_id = s.run_id
         WHERE s.state IN ('queued', 'leased')
           AND (s.state = 'queued' OR NOT EXISTS (
                SELECT 1 FROM machines m WHERE m.name = s.sut AND m.lease_epoch = s.epoch AND m.lease_expires > now()))
           AND EXISTS (
                SELECT 1 FROM machines m
                WHERE m.role = 'sut' AND m.health = 'good' AND (m.lease_expires IS NULL OR m.lease_expires <= now())
                  AND CASE WHEN s.sut IS NOT NULL THEN m.name = s.sut
                           ELSE m.labels @> f.labels AND (NOT f.needs_loadgen OR m.loadgen IS NOT NULL) END)
         ORDER BY s.run_id, s.slot
         LIMIT 16
         FOR UPDATE OF s SKIP LOCKED",
    )
    .fetch_all(&mut *tx)
    .await?;
    for c in candidates {
        let Some((sut, loadgen)) = free_pair(&mut tx, &c).await? else {
            continue;
        };
        let epoch: i64 = sqlx::query_scalar("SELECT nextval('lease_epochs')")
            .fetch_one(&mut *tx)
            .await?;
        let names: Vec<&str> = std::iter::once(sut.name.as_str())
            .chain(loadgen.as_ref().map(|l| l.name.as_str()))
            .collect();
        sqlx::query(
            "UPDATE machines SET lease_worker = $2, lease_epoch = $3, lease_since = now(), lease_heartbeat = now(),
                 lease_expires = now() + make_interval(secs => $4)
             WHERE name = ANY($1)",
        )
        .bind(&names)
        .bind(worker)
        .bind(epoch)
        .bind(lease_secs)
        .execute(&mut *tx)
        .await?;
        let takeover = c.state == SlotState::Leased;
        sqlx::query(
            "UPDATE run_slots SET state = 'leased', sut = $3, worker = $4, epoch = $5, leased_at = now(),
                 takeovers = takeovers + $6, error = NULL
             WHERE run_id = $1 AND slot = $2",
        )
        .bind(c.run_id)
        .bind(c.slot)
        .bind(&sut.name)
        .bind(worker)
        .bind(epoch)
        .bind(takeover as i32)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE jobs SET machine = $3 WHERE run_id = $1 AND slot = $2 AND machine IS DISTINCT FROM $3")
            .bind(c.run_id)
            .bind(c.slot)
            .bind(&sut.name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        return Ok(Some(Claim {
            run_id: c.run_id,
            slot: c.slot,
            epoch,
            sut,
            loadgen,
            takeover,
        }));
    }
    tx.commit().await?;
    Ok(None)
}

/// The free machines for candidate `c`, locked: its pinned SUT (and load generator), or
/// the free SUT least recently leased (work spreads over the pool) whose labels match what the run asks (and, unless the run mixes
/// labels, those of the machines it already runs on) that no other slot of the run has.
async fn free_pair(
    tx: &mut Transaction<'_, Postgres>,
    c: &Candidate,
) -> Result<Option<(MachineRow, Option<MachineRow>)>> {
    // Free, and good: a machine bad, drained or retired takes nothing new.
    let free = "(lease_expires IS NULL OR lease_expires <= now()) AND health = 'good'";
    let sut: Option<MachineRow> = match &c.sut {
        Some(name) => {
            sqlx::query_as(&format!(
                "SELECT {MACHINE_COLUMNS} FROM machines WHERE name = $1 AND {free} FOR UPDATE SKIP LOCKED"
            ))
            .bind(name)
            .fetch_optional(&mut **tx)
            .await?
        }
        None => {
            // The machines the run already has, and their labels (read once, not per machine).
            let (taken, labels): (Vec<String>, Option<Json<Labels>>) = sqlx::query_as(
                "SELECT COALESCE(array_agg(o.sut), '{}'), (array_agg(p.labels))[1]
                 FROM run_slots o JOIN machines p ON p.name = o.sut WHERE o.run_id = $1",
            )
            .bind(c.run_id)
            .fetch_one(&mut **tx)
            .await?;
            let same = if c.mix_labels { None } else { labels };
            sqlx::query_as(&format!(
                "SELECT {MACHINE_COLUMNS} FROM machines m
                 WHERE m.role = 'sut' AND m.labels @> $1 AND {free}
                   AND (NOT $2 OR m.loadgen IS NOT NULL)
                   AND NOT (m.name = ANY($3))
                   AND ($4::JSONB IS NULL OR m.labels = $4)
                 ORDER BY m.lease_since NULLS FIRST, m.name
                 LIMIT 1
                 FOR UPDATE OF m SKIP LOCKED"
            ))
            .bind(&c.labels)
            .bind(c.needs_loadgen)
            .bind(&taken)
            .bind(same)
            .fetch_optional(&mut **tx)
            .await?
        }
    };
    let Some(sut) = sut else { return Ok(None) };
    let loadgen = match (&sut.loadgen, c.needs_loadgen) {
        (Some(l), true) => {
            let row: Option<MachineRow> = sqlx::query_as(&format!(
                "SELECT {MACHINE_COLUMNS} FROM machines WHERE name = $1 AND {free} FOR UPDATE SKIP LOCKED"
            ))
            .bind(l)
            .fetch_optional(&mut **tx)
            .await?;
            match row {
                Some(r) => Some(r),
                None => return Ok(None),
            }
        }
        (None, true) => return Ok(None),
        (_, false) => None,
    };
    Ok(Some((sut, loadgen)))
}

/// Moves the expiry of the lease of `epoch` on; false when the lease is gone (expired or
/// taken over): the worker must stop driving its machines.
pub async fn heartbeat(db: &PgPool, worker: i64, epoch: i64, lease_secs: f64) -> Result<bool> {
    let mut tx = db.begin().await?;
    let held: Vec<(String,)> = sqlx::query_as(
        "UPDATE machines SET lease_heartbeat = now(), lease_expires = now() + make_interval(secs => $3)
         WHERE lease_epoch = $2 AND lease_worker = $1 AND lease_expires > now()
         RETURNING name",
    )
    .bind(worker)
    .bind(epoch)
    .bind(lease_secs)
    .fetch_all(&mut *tx)
    .await?;
    worker_alive(&mut *tx, worker).await?;
    tx.commit().await?;
    Ok(!held.is_empty())
}

/// A worker says it is alive (between claims too).
pub async fn worker_alive(db: impl PgExecutor<'_>, worker: i64) -> Result<()> {
    sqlx::query("UPDATE workers SET heartbeat_at = now() WHERE id = $1")
        .bind(worker)
        .execute(db)
        .await?;
    Ok(())
}

/// A worker's lease on a slot: what a drive of the slot writes under (checked in each
/// write's transaction) and what every agent request of it carries (the epoch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lease {
    pub run_id: i64,
    pub slot: i32,
    pub epoch: i64,
}

impl Lease {
    /// The epoch as the agents keep it (`X-Kreg-Epoch`): the database's sequence issues
    /// 1 and up, within both types.
    pub fn agent_epoch(&self) -> u64 {
        self.epoch as u64
    }
}

/// In `tx`: whether `f` still holds its slot (same epoch, lease not expired); the slot's
/// row stays locked in share mode until `tx` ends, so that no take-over comes between this
/// check and the commit. `StoreError::Fenced` otherwise.
pub async fn check_fence(tx: &mut Transaction<'_, Postgres>, f: &Lease) -> Result<()> {
    let held: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM run_slots s JOIN machines m ON m.name = s.sut
         WHERE s.run_id = $1 AND s.slot = $2 AND s.epoch = $3 AND s.state = 'leased'
           AND m.lease_epoch = $3 AND m.lease_expires > now()
         FOR SHARE OF s",
    )
    .bind(f.run_id)
    .bind(f.slot)
    .bind(f.epoch)
    .fetch_optional(&mut **tx)
    .await?;
    match held {
        Some(_) => Ok(()),
        None => Err(StoreError::Fenced {
            run_id: f.run_id,
            slot: f.slot,
            epoch: f.epoch,
        }),
    }
}

/// Notes the epoch a job was stored under (in its storing transaction).
pub async fn stored_under(db: impl PgExecutor<'_>, job_id: i64, epoch: i64) -> Result<()> {
    sqlx::query("UPDATE jobs SET epoch = $2 WHERE id = $1")
        .bind(job_id)
        .bind(epoch)
        .execute(db)
        .await?;
    Ok(())
}

/// A transaction that ends the slot of lease `f`: its run locked (the last slot to end
/// sets the run's state), the lease checked; None when the lease was lost meanwhile.
pub(super) async fn ending(db: &PgPool, f: &Lease) -> Result<Option<Transaction<'static, Postgres>>> {
    let mut tx = db.begin().await?;
    sqlx::query("SELECT id FROM runs WHERE id = $1 FOR UPDATE")
        .bind(f.run_id)
        .execute(&mut *tx)
        .await?;
    if check_fence(&mut tx, f).await.is_err() {
        return Ok(None);
    }
    Ok(Some(tx))
}

/// A slot's drive ended (`failed`: with failed jobs, or `error` said why it stopped):
/// the slot is finished, its machines free; the last slot of a run to finish sets the
/// run's state. Nothing happens when the lease was lost meanwhile.
pub async fn finish_slot(db: &PgPool, f: &Lease, failed: bool, error: Option<&str>) -> Result<bool> {
    let Some(mut tx) = ending(db, f).await? else {
        return Ok(false);
    };
    sqlx::query("UPDATE run_slots SET state = $4, finished_at = now(), error = $5 WHERE run_id = $1 AND slot = $2 AND epoch = $3")
        .bind(f.run_id)
        .bind(f.slot)
        .bind(f.epoch)
        .bind(if failed { "failed" } else { "done" })
        .bind(error.map(|e| crate::secrets::redact(e).into_owned()))
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "UPDATE machines SET lease_worker = NULL, lease_epoch = NULL, lease_heartbeat = NULL, lease_expires = NULL
         WHERE lease_epoch = $1",
    )
    .bind(f.epoch)
    .execute(&mut *tx)
    .await?;
    let (open, bad): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state IN ('queued', 'leased')), count(*) FILTER (WHERE state = 'failed')
         FROM run_slots WHERE run_id = $1",
    )
    .bind(f.run_id)
    .fetch_one(&mut *tx)
    .await?;
    if open == 0 {
        let state = if bad == 0 {
            crate::plan::RunState::Done
        } else {
            crate::plan::RunState::Failed
        };
        super::set_run_state(&mut *tx, f.run_id, state).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// `kreg resume` of a submitted run: its failed slots queued again (their jobs not done
/// run again, on the same machines). How many.
pub async fn requeue_failed(db: &PgPool, run_id: i64) -> Result<u64> {
    let mut tx = db.begin().await?;
    let n =
        sqlx::query("UPDATE run_slots SET state = 'queued', finished_at = NULL WHERE run_id = $1 AND state = 'failed'")
            .bind(run_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
    if n > 0 {
        super::set_run_state(&mut *tx, run_id, crate::plan::RunState::Running).await?;
    }
    tx.commit().await?;
    Ok(n)
}

/// Whether the queue has nothing left to claim or wait for (no run with a slot not
/// finished).
pub async fn queue_empty(db: impl PgExecutor<'_>) -> Result<bool> {
    Ok(
        sqlx::query_scalar("SELECT NOT EXISTS (SELECT 1 FROM run_slots WHERE state IN ('queued', 'leased'))")
            .fetch_one(db)
            .await?,
    )
}

/// A slot as `kreg status` and the dashboard show it.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct SlotRow {
    pub run_id: i64,
    pub scenario: String,
    pub slot: i32,
    #[sqlx(try_from = "String")]
    pub state: SlotState,
    pub sut: Option<String>,
    pub worker: Option<i64>,
    pub epoch: Option<i64>,
    pub takeovers: i32,
    pub jobs: i64,
    pub done: i64,
    pub error: Option<String>,
}

/// The slots of runs not finished (queued or leased), then those of `finished` finished runs.
pub async fn open_slots(db: impl PgExecutor<'_>) -> Result<Vec<SlotRow>> {
    Ok(sqlx::query_as(
        "SELECT s.run_id, sc.name AS scenario, s.slot, s.state, s.sut, s.worker, s.epoch, s.takeovers,
                (SELECT count(*) FROM jobs j WHERE j.run_id = s.run_id AND j.slot = s.slot) AS jobs,
                (SELECT count(*) FROM jobs j WHERE j.run_id = s.run_id AND j.slot = s.slot AND j.state = 'done') AS done,
                s.error
         FROM run_slots s JOIN runs r ON r.id = s.run_id JOIN scenarios sc ON sc.id = r.scenario_id
         WHERE r.state IN ('running', 'interrupted')
         ORDER BY s.run_id, s.slot",
    )
    .fetch_all(db)
    .await?)
}

/// A worker as `kreg status` shows it.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct WorkerRow {
    pub id: i64,
    pub name: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub heartbeat_at: chrono::DateTime<chrono::Utc>,
    pub stopped_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Seconds since its last heartbeat.
    pub silent_secs: f64,
    /// Not stopped, and silent for three of its heartbeats: gone without saying so.
    pub gone: bool,
    /// Slots it holds a live lease for.
    pub holding: i64,
}

/// Workers seen in the last `hours` (or still holding a lease).
pub async fn workers(db: impl PgExecutor<'_>, hours: f64) -> Result<Vec<WorkerRow>> {
    Ok(sqlx::query_as(
        "SELECT w.id, w.name, w.started_at, w.heartbeat_at, w.stopped_at,
                EXTRACT(EPOCH FROM now() - w.heartbeat_at)::FLOAT8 AS silent_secs,
                (w.stopped_at IS NULL AND now() - w.heartbeat_at > make_interval(secs => 3 * w.heartbeat_every_secs)) AS gone,
                (SELECT count(*) FROM run_slots s JOIN machines m ON m.name = s.sut
                  WHERE s.worker = w.id AND s.state = 'leased' AND m.lease_epoch = s.epoch AND m.lease_expires > now()) AS holding
         FROM workers w
         WHERE w.heartbeat_at > now() - make_interval(secs => $1 * 3600)
         ORDER BY w.id",
    )
    .bind(hours)
    .fetch_all(db)
    .await?)
}

/// For a submitted run whose pairs' labels differ (allowed by `--mix-labels`): each machine
/// it ran on with its labels. None when its machines share their labels (or it is not a
/// submitted run).
pub async fn mixed_labels(db: impl PgExecutor<'_>, run_id: i64) -> Result<Option<Vec<(String, Labels)>>> {
    let rows: Vec<(String, Json<Labels>)> = sqlx::query_as(
        "SELECT m.name, m.labels FROM run_slots s JOIN machines m ON m.name = s.sut WHERE s.run_id = $1 ORDER BY m.name",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?;
    let differ = rows.windows(2).any(|w| w[0].1 .0 != w[1].1 .0);
    Ok(differ.then(|| rows.into_iter().map(|(n, l)| (n, l.0)).collect()))
}
