//! `kreg worker`: takes slots of submitted runs from the queue, each with a lease on a
//! machine pair, and drives them as `kreg run` would, heartbeating the lease. A worker that
//! loses its lease (it stalled, or was cut off longer than the lease) stops driving at
//! once; whatever it still sends is refused by the agents (older epoch) and by the
//! database (the slot's epoch moved on).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use sqlx::PgPool;

use kreg::config::Config;
use kreg::engine::part::{self, Part};
use kreg::engine::session::Session;
use kreg::engine::EngineError;
use kreg::store::{self, fleet, health};

/// `kreg worker`'s arguments.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// How long a lease lasts without a heartbeat (seconds); another worker takes the
    /// machines over after it. The heartbeat comes every third of it.
    #[arg(long, default_value_t = 60.0)]
    pub lease: f64,
    /// How often an idle worker looks at the queue (seconds).
    #[arg(long, default_value_t = 2.0)]
    pub poll: f64,
    /// Stop once the queue has nothing left to claim or wait for.
    #[arg(long)]
    pub until_empty: bool,
    /// The worker's name in `kreg status` (default HOST:PID).
    #[arg(long)]
    pub name: Option<String>,
    /// A secret a submitted scenario names (a database's `password_file`, by the name the
    /// scenario wrote), read from FILE on this host: a worker opens no path a submitter
    /// wrote. Repeatable; a slot whose scenario names a secret not given here fails, saying
    /// which.
    #[arg(long = "secret", value_name = "NAME=FILE", value_parser = parse_secret)]
    pub secrets: Vec<(String, std::path::PathBuf)>,
    /// Slots the lab fails on a machine in a row (a host that does not answer, an agent
    /// lost, a boot that never came up) before the machine goes bad and leaves the pool
    /// until `kreg machines release`. A slot the lab failed moves to another pair.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub bad_after: u32,
    /// How long a job that lost its host waits for it to answer again before it fails
    /// (seconds; a fleet has other pairs to go on with).
    #[arg(long, default_value_t = 90.0)]
    pub reconnect_wait: f64,
}

/// `NAME=FILE` of `--secret` (clap's value parser: its error is the message clap prints).
fn parse_secret(s: &str) -> std::result::Result<(String, std::path::PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => Ok((name.to_string(), file.into())),
        _ => Err(format!("{s:?}: give NAME=FILE")),
    }
}

/// How a slot's drive ended, for the worker.
enum Ended {
    Finished,
    /// The lease went (expired, taken over, or refused a write): someone else goes on.
    Lost(String),
    /// SIGINT or SIGTERM: the worker stops and gives its lease up.
    Signal(&'static str),
}

pub async fn worker(a: &WorkerArgs, cfg: &Config) -> Result<ExitCode> {
    if !(a.reconnect_wait >= 0.0 && a.reconnect_wait.is_finite()) {
        anyhow::bail!("--reconnect-wait {}: give seconds, 0 or more", a.reconnect_wait);
    }
    let cfg = &Config {
        reconnect_wait: Duration::from_secs_f64(a.reconnect_wait),
        ..cfg.clone()
    };
    if a.lease.is_nan() || a.lease < 3.0 {
        anyhow::bail!("--lease {}: give 3 seconds or more", a.lease);
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("{}:{}", host.trim(), std::process::id()));
    if name.is_empty() || name.chars().any(char::is_control) || kreg::text::one_line(&name) != name {
        anyhow::bail!(
            "--name {}: give a name without control characters or direction overrides (it is shown in `kreg status` and on the fleet page)",
            kreg::text::one_line(&name)
        );
    }
    let (db, id) = tokio::select! {
        // Alive at least every poll (idle) or third of a lease (driving).
        r = register(cfg, &name, a.poll.max(a.lease / 3.0)) => r?,
        s = super::run::interrupted() => {
            say(&format!("worker {name}: stopped by {s} before it could reach the database"));
            return Ok(ExitCode::SUCCESS);
        }
    };
    say(&format!("worker {id} ({name}) up, lease {} s", a.lease));
    let signal = loop {
        let claim = tokio::select! {
            c = claim_when_db(&db, id, a.lease) => c,
            s = super::run::interrupted() => break s,
        };
        let Some((c, took)) = claim else {
            if a.until_empty && fleet::queue_empty(&db).await.unwrap_or(false) {
                say(&format!("worker {id}: the queue is empty; stopping"));
                break "an empty queue";
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(a.poll)) => continue,
                s = super::run::interrupted() => break s,
            }
        };
        match drive_claim(&db, id, &c, took, a, cfg).await {
            Ended::Finished => {}
            Ended::Lost(why) => say(&format!(
                "worker {id}: run {} slot {}: lease of epoch {} lost ({why}); stopped driving it",
                c.run_id, c.slot, c.epoch
            )),
            Ended::Signal(s) => break s,
        }
    };
    let _ = fleet::worker_stopped(&db, id).await;
    say(&format!("worker {id}: stopped by {signal}"));
    Ok(ExitCode::SUCCESS)
}

/// Connects and registers the worker, waiting for a database that does not answer yet (a
/// worker started while PostgreSQL restarts, or before it is up, waits rather than exits);
/// a database that answers with an error (a bad URL, a refused login) stops it.
async fn register(cfg: &Config, name: &str, every: f64) -> Result<(PgPool, i64)> {
    let mut said = false;
    loop {
        let tried = async {
            let db = super::db::connect(cfg).await?;
            let id = fleet::register_worker(&db, name, every).await?;
            anyhow::Ok((db, id))
        };
        match tried.await {
            Ok(x) => return Ok(x),
            Err(e) if !unreachable(&e) => return Err(e),
            Err(e) => {
                if !said {
                    say(&format!("worker {name}: waiting for the database ({e:#})"));
                    said = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Whether an error is the database not answering (rather than answering no).
fn unreachable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<store::StoreError>()
            .is_some_and(|s| s.is_connection_lost() || matches!(s, store::StoreError::Unreachable { .. }))
    })
}

fn say(line: &str) {
    eprintln!("{}", kreg::text::printable(&kreg::secrets::redact(line)));
}

/// A claim and how long it took, or None; a database that went away is waited for (and
/// said once).
async fn claim_when_db(db: &PgPool, id: i64, lease: f64) -> Option<(fleet::Claim, Duration)> {
    let started = Instant::now();
    match fleet::claim(db, id, lease).await {
        Ok(c) => c.map(|c| (c, started.elapsed())),
        Err(e) => {
            say(&format!("worker {id}: cannot claim: {e}"));
            let _ = store::wait_until_back(db, Duration::from_secs(300)).await;
            None
        }
    }
}

/// The pool machine `row` describes, parsed from its pool file as stored.
pub(super) fn pool_machine(row: &fleet::MachineRow) -> Result<kreg::scenario::PoolMachine, kreg::Error> {
    let dir = std::path::Path::new(&row.pool_dir);
    let machines = kreg::scenario::pool_from_str(&row.pool_yaml, dir).map_err(|d| {
        kreg::Error::invalid(format!(
            "machine {}: its pool file no longer loads: {}",
            row.name,
            d.first().map(|d| d.render("pool")).unwrap_or_default()
        ))
    })?;
    machines
        .into_iter()
        .find(|m| m.name == row.name)
        .ok_or_else(|| kreg::Error::invalid(format!("machine {} is not in its pool file any more", row.name)))
}

/// The slot's part: the run's scenario on the claimed pair.
/// Why a claimed slot cannot start: the database went away (the lease lapses and the slot
/// is taken again), or the slot cannot be driven at all (it ends failed, saying why).
enum NoPart {
    Db(store::StoreError),
    Bad(String),
}

impl From<String> for NoPart {
    fn from(s: String) -> NoPart {
        NoPart::Bad(s)
    }
}

impl From<kreg::Error> for NoPart {
    fn from(e: kreg::Error) -> NoPart {
        NoPart::Bad(e.to_string())
    }
}

async fn part_of(
    db: &PgPool,
    c: &fleet::Claim,
    cfg: &Config,
    secrets: &[(String, std::path::PathBuf)],
) -> Result<Part, NoPart> {
    let run = store::run(db, c.run_id)
        .await
        .map_err(|e| match e.is_connection_lost() {
            true => NoPart::Db(e),
            false => NoPart::Bad(e.to_string()),
        })?;
    let mut session = Session::of(run).map_err(|e| e.to_string())?;
    let sut = pool_machine(&c.sut)?;
    let loadgen = c.loadgen.as_ref().map(pool_machine).transpose()?;
    // What `kreg submit` checked, again: a worker opens no path a submitter wrote.
    part::fleet_fit(&session.scenario)?;
    session.scenario = part::on_pair(&session.scenario, &sut, loadgen.as_ref())?;
    // The run's files from the store: a worker reads no path the submitted scenario names.
    session.localize(db, cfg).await.map_err(|e| match e {
        kreg::engine::EngineError::Store(e) if e.is_connection_lost() => NoPart::Db(e),
        e => NoPart::Bad(e.to_string()),
    })?;
    let secrets = secrets.iter().cloned().collect();
    session.scenario.map_secrets(&secrets).map_err(|missing| {
        NoPart::Bad(format!(
            "the scenario names secret(s) this worker does not have: {}; give `kreg worker --secret NAME=FILE` (a worker reads no path a submitter wrote)",
            missing.join(", ")
        ))
    })?;
    Ok(Part {
        lease: c.lease(),
        session,
    })
}

/// Keeps the lease of `epoch` alive every third of `lease`; returns when it is lost (the
/// database says so, or no heartbeat got through for a whole lease).
async fn keep_lease(db: PgPool, id: i64, epoch: i64, lease: f64) -> String {
    let every = Duration::from_secs_f64(lease / 3.0);
    let mut last_ok = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        match tokio::time::timeout(every, fleet::heartbeat(&db, id, epoch, lease)).await {
            Ok(Ok(true)) => last_ok = Instant::now(),
            Ok(Ok(false)) => return "the database says it is no longer held".into(),
            Ok(Err(_)) | Err(_) if last_ok.elapsed().as_secs_f64() >= lease => {
                return format!("no heartbeat got through for {lease} s")
            }
            _ => {}
        }
    }
}

/// Drives claim `c` (made in `took`) under worker `id`'s lease of `lease` seconds.
async fn drive_claim(db: &PgPool, id: i64, c: &fleet::Claim, took: Duration, a: &WorkerArgs, cfg: &Config) -> Ended {
    let lease = a.lease;
    let f = c.lease();
    say(&format!(
        "worker {id}: run {} slot {} on {}{} at epoch {} (claimed in {:.1} ms){}",
        c.run_id,
        c.slot,
        c.sut.name,
        c.loadgen.as_ref().map(|l| format!(" + {}", l.name)).unwrap_or_default(),
        c.epoch,
        took.as_secs_f64() * 1000.0,
        if c.takeover {
            "; taken over from a worker that lost its lease"
        } else {
            ""
        }
    ));
    let part = match part_of(db, c, cfg, &a.secrets).await {
        Ok(p) => Arc::new(p),
        Err(NoPart::Db(e)) => return Ended::Lost(format!("the database went away before the slot began: {e}")),
        Err(NoPart::Bad(why)) => {
            let _ = fleet::finish_slot(db, &f, true, Some(&why)).await;
            say(&format!("worker {id}: run {} slot {}: {why}", c.run_id, c.slot));
            return Ended::Finished;
        }
    };
    let lost = keep_lease(db.clone(), id, c.epoch, lease);
    tokio::pin!(lost);
    loop {
        let mut progress = super::run::Progress::new();
        let mut on_event = |e| progress.show(e);
        let result = tokio::select! {
            r = part::drive_part(db, &part, cfg, &mut on_event) => r,
            why = &mut lost => return Ended::Lost(why),
            s = super::run::interrupted() => return Ended::Signal(s),
        };
        match result {
            Ok(o) if o.failed > 0 && lab_failed_jobs(db, c).await > 0 => {
                let why = health::slot_failures(db, c.run_id, c.slot).await.unwrap_or_default();
                return lab_failed(db, id, c, &why, a).await;
            }
            Ok(o) => {
                let failed = o.failed > 0;
                let why = match failed {
                    true => health::slot_failures(db, c.run_id, c.slot).await.ok(),
                    false => None,
                };
                if !failed {
                    let _ = health::slot_went_well(db, &pair_of(c)).await;
                }
                match fleet::finish_slot(db, &f, failed, why.as_deref()).await {
                    Ok(true) => say(&format!(
                        "worker {id}: run {} slot {}: {} jobs done, {} failed",
                        c.run_id, c.slot, o.done, o.failed
                    )),
                    Ok(false) => return Ended::Lost("refused when finishing the slot".into()),
                    Err(e) => return Ended::Lost(format!("finishing the slot: {e}")),
                }
                return Ended::Finished;
            }
            Err(EngineError::Store(e @ store::StoreError::Fenced { .. })) => return Ended::Lost(e.to_string()),
            Err(EngineError::Store(e)) if e.is_connection_lost() => {
                say(&format!("worker {id}: the database went away ({e}); going on where the slot stands once it is back, if the lease is still held"));
                tokio::select! {
                    _ = store::wait_until_back(db, Duration::from_secs(300)) => {}
                    why = &mut lost => return Ended::Lost(why),
                }
            }
            // A host of the pair that could not be reached or driven: the lab's.
            Err(e @ EngineError::Host { .. }) => return lab_failed(db, id, c, &e.to_string(), a).await,
            Err(e) => {
                let why = e.to_string();
                let _ = fleet::finish_slot(db, &f, true, Some(&why)).await;
                say(&format!("worker {id}: run {} slot {} stopped: {why}", c.run_id, c.slot));
                return Ended::Finished;
            }
        }
    }
}

/// The machines of a claim's pair.
fn pair_of(c: &fleet::Claim) -> Vec<&str> {
    std::iter::once(c.sut.name.as_str())
        .chain(c.loadgen.as_ref().map(|l| l.name.as_str()))
        .collect()
}

/// Jobs of the claim's slot the lab failed (class `infrastructure`).
async fn lab_failed_jobs(db: &PgPool, c: &fleet::Claim) -> i64 {
    let jobs = store::slot_jobs(db, c.run_id, c.slot).await.unwrap_or_default();
    jobs.iter()
        .filter(|j| j.failure_class == Some(kreg::failure::FailureClass::Infrastructure))
        .count() as i64
}

/// The lab failed the claim's slot: its pair counts a failure (bad after `--bad-after` in
/// a row), the slot moves to another pair and starts over, what it measured set aside.
async fn lab_failed(db: &PgPool, id: i64, c: &fleet::Claim, why: &str, a: &WorkerArgs) -> Ended {
    match health::lab_failed(db, &c.lease(), &pair_of(c), why, a.bad_after).await {
        Ok(Some(moved)) => {
            say(&format!(
                "worker {id}: run {} slot {}: the lab failed it on {} ({why}); it starts over on another pair, what it measured set aside as slot {}",
                c.run_id,
                c.slot,
                pair_of(c).join(" + "),
                moved.set_aside
            ));
            for m in moved.went_bad {
                say(&format!(
                    "worker {id}: machine {m} is bad after {} failure(s) of the lab in a row: out of the pool until `kreg machines release {m}`",
                    a.bad_after
                ));
            }
            Ended::Finished
        }
        Ok(None) => Ended::Lost("refused when setting the slot aside".into()),
        Err(e) => Ended::Lost(format!("setting the slot aside: {e}")),
    }
}
