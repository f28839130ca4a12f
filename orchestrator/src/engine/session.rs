//! A run as a drive holds it: its row and its scenario, read and parsed once when the
//! session opens, and its kind (`RunKind`) with them. `drive` and `bisect` take a session;
//! `kreg run` opens one on the run it just recorded (the scenario it parsed from the file
//! kept for it), and reads the run's final state from it afterwards.

use sqlx::PgPool;

use super::{scenario_of, EngineError};
use crate::plan::{RunKind, RunState};
use crate::scenario::Scenario;
use crate::store::{self, RunRow};

pub struct Session {
    pub run: RunRow,
    pub scenario: Scenario,
}

impl Session {
    /// Reads run `run_id` and its scenario (parsed once per process).
    pub async fn open(db: &PgPool, run_id: i64) -> Result<Session, EngineError> {
        Session::of(store::run(db, run_id).await?)
    }

    /// The session of a run already read.
    pub fn of(run: RunRow) -> Result<Session, EngineError> {
        let scenario = scenario_of(&run)?;
        Ok(Session { run, scenario })
    }

    /// The session of run `run` just recorded from `scenario` (parsed from the file whose
    /// text the run stores, its paths taken from the same folder): kept as the run's
    /// scenario, not parsed again.
    pub fn recorded(run: RunRow, scenario: Scenario) -> Session {
        crate::scenario_file::remember(&run, &scenario);
        Session { run, scenario }
    }

    pub fn id(&self) -> i64 {
        self.run.id
    }

    pub fn kind(&self) -> RunKind {
        self.run.kind
    }

    /// The state a drive left the run in, as it stored it.
    pub(super) fn settled(&mut self, state: RunState) {
        self.run.state = state;
    }
}
