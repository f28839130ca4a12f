//! A run as a drive holds it: its row and its scenario, read and parsed once when the
//! session opens (its kind, `RunKind`, with them), and what a drive does around its passes
//! for every kind alike: the run's lock (one driver at a time), the settings an interrupted
//! attempt left put back, a lost database waited out, the state it ends in. `drive` and
//! `bisect` take a session; `kreg run` and `kreg bisect` open one on the run they just
//! recorded (the scenario they parsed from the file kept for it) and read the run's final
//! state from it afterwards.

use std::time::Duration;

use sqlx::PgPool;

use super::{restore_settings_on, scenario_of, EngineError, Event};
use crate::config::Config;
use crate::plan::{RunKind, RunState};
use crate::scenario::Scenario;
use crate::store::{self, RunRow};

/// How long a drive waits for a database that went away mid-run (a restarted server),
/// and how many times in one drive.
const DB_OUTAGE_WAIT: Duration = Duration::from_secs(300);
const DB_OUTAGES: u32 = 5;

/// How long a drive waits for a run's lock: the server notices that a killed controller's
/// connection is gone (and frees its lock) a moment after the controller died.
const LOCK_WAIT: Duration = Duration::from_secs(10);

pub struct Session {
    pub run: RunRow,
    pub scenario: Scenario,
    /// The run's lock while a drive holds it.
    lock: Option<store::RunLock>,
    /// Times the database went away during this drive.
    outages: u32,
}

impl Session {
    /// Reads run `run_id` and its scenario (parsed once per process).
    pub async fn open(db: &PgPool, run_id: i64) -> Result<Session, EngineError> {
        Session::of(store::run(db, run_id).await?)
    }

    /// The session of a run already read.
    pub fn of(run: RunRow) -> Result<Session, EngineError> {
        let scenario = scenario_of(&run)?;
        Ok(Session::new(run, scenario))
    }

    /// The session of run `run` just recorded from `scenario` (parsed from the file whose
    /// text the run stores, its paths taken from the same folder): kept as the run's
    /// scenario, not parsed again.
    pub fn recorded(run: RunRow, scenario: Scenario) -> Session {
        crate::scenario_file::remember(&run, &scenario);
        Session::new(run, scenario)
    }

    fn new(run: RunRow, scenario: Scenario) -> Session {
        Session {
            run,
            scenario,
            lock: None,
            outages: 0,
        }
    }

    pub fn id(&self) -> i64 {
        self.run.id
    }

    pub fn kind(&self) -> RunKind {
        self.run.kind
    }

    /// Takes the run's lock: one driver per run (`store::lock_run`; released if this
    /// process dies, or the database restarts: see [`Session::again`]).
    pub(super) async fn lock(&mut self, db: &PgPool) -> Result<(), EngineError> {
        let lock = store::lock_run(db, self.run.id, LOCK_WAIT)
            .await?
            .ok_or(EngineError::Busy(self.run.id))?;
        self.lock = Some(lock);
        Ok(())
    }

    /// Lets the run's lock go, having touched nothing.
    pub(super) fn unlock(&mut self) {
        self.lock = None;
    }

    /// The files the run carries taken from the store (cached on this host by content, in
    /// `cfg.cache_dir`/blobs), and the scenario's paths pointed at them: whoever drives the
    /// run reads none of the paths its scenario names. A run recorded before runs carried
    /// their files keeps its paths.
    pub async fn localize(&mut self, db: &PgPool, cfg: &Config) -> Result<(), EngineError> {
        let files = store::blobs::run_files(db, self.run.id).await?;
        let dir = cfg.cache_dir.join("blobs");
        let mut at = std::collections::HashMap::new();
        for f in &files {
            let local = store::blobs::fetch(db, &f.sha256, &dir).await?;
            let named = store::blobs::named(&local, &f.path)?;
            at.insert(std::path::PathBuf::from(&f.path), named);
        }
        self.scenario.relocate(&|p| at.get(p).cloned());
        Ok(())
    }

    /// The run's files taken from the store ([`Session::localize`]), the run marked
    /// running, and what an interrupted attempt left changed put back.
    pub(super) async fn start(
        &mut self,
        db: &PgPool,
        cfg: &Config,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), EngineError> {
        self.localize(db, cfg).await?;
        store::set_run_state(db, self.run.id, RunState::Running).await?;
        self.put_back_leftovers(db, cfg, on_event).await
    }

    /// A controller killed without warning (or a drive cut off from its database) left
    /// settings changed: put back first (the drive applies them again from the machine's
    /// own values).
    async fn put_back_leftovers(
        &self,
        db: &PgPool,
        cfg: &Config,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), EngineError> {
        if !store::unrestored_settings(db, self.run.id).await?.is_empty() {
            for line in restore_settings_on(db, self.run.id, &self.scenario, cfg, None).await? {
                on_event(Event::Warning {
                    message: format!("left by the interrupted attempt: {line}"),
                });
            }
        }
        Ok(())
    }

    /// After a pass of a drive ended with `e`: whether to go on with another pass. When `e`
    /// is the database gone away, it is said, waited for (up to [`DB_OUTAGE_WAIT`], at most
    /// [`DB_OUTAGES`] times a drive), the run's lock taken again and settings left changed
    /// put back; the next pass goes on where the run stands, as a resume would: a job is
    /// stored in one transaction, so one whose storing was cut off is either done or runs
    /// again, never stored twice. `Ok(false)`: `e` is not an outage (or one too many), the
    /// drive ends with it; `Err`: the wait or the lock failed.
    pub(super) async fn again(
        &mut self,
        db: &PgPool,
        cfg: &Config,
        e: &EngineError,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<bool, EngineError> {
        let lost = match e {
            EngineError::Store(e) if e.is_connection_lost() && self.outages < DB_OUTAGES => e.to_string(),
            _ => return Ok(false),
        };
        self.outages += 1;
        on_event(Event::Warning {
            message: format!(
                "the database went away ({lost}); waiting up to {} s for it, then the run goes on where it stands",
                DB_OUTAGE_WAIT.as_secs()
            ),
        });
        self.lock = None;
        store::wait_until_back(db, DB_OUTAGE_WAIT).await?;
        self.lock(db).await?;
        self.put_back_leftovers(db, cfg, on_event).await?;
        Ok(true)
    }

    /// The drive ends in `state` (stored here when `store`; a drive's last pass stores
    /// done or failed itself), the lock let go.
    pub(super) async fn end(&mut self, db: &PgPool, state: RunState, store: bool) {
        if store {
            let _ = store::set_run_state(db, self.run.id, state).await;
        }
        self.lock = None;
        self.run.state = state;
    }
}
