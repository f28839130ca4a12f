//! What a drive records: each job's outcome or failure stored in one transaction, the jobs
//! a failed step leaves undone failed with its reason, and the run's progress said as
//! [`Event`]s. The driver drives machines; the ledger only writes down what happened.

use sqlx::PgPool;

use super::Failure;
use crate::engine::{job, EngineError, Event};
use crate::store::{self, JobRow, RunRow};

pub(crate) struct Ledger<'a> {
    pub db: &'a PgPool,
    pub run: &'a RunRow,
    /// All jobs of the run, for "job N of M".
    pub total: usize,
    pub on_event: &'a mut dyn FnMut(Event),
}

impl Ledger<'_> {
    pub fn say(&mut self, e: Event) {
        (self.on_event)(e)
    }

    /// A job starts.
    pub fn started(&mut self, j: &JobRow) {
        let total = self.total;
        self.say(Event::JobStarted {
            ordinal: j.ordinal,
            total,
            kernel: j.kernel.clone(),
            variant: j.variant.clone(),
            workload: j.workload.clone(),
            iteration: j.iteration,
        });
    }

    /// A kernel that could not be prepared or booted: its jobs fail with the reason.
    pub async fn fail_kernel(&mut self, jobs: &[&JobRow], kernel: &str, reason: String) -> Result<(), EngineError> {
        let stored = Failure::Boot(reason.clone()).to_string();
        for j in jobs {
            store::fail_job(self.db, j.id, &stored).await?;
        }
        self.say(Event::KernelFailed {
            kernel: kernel.to_string(),
            reason,
            jobs: jobs.len(),
        });
        Ok(())
    }

    pub async fn fail_jobs(&mut self, jobs: &[&JobRow], reason: &str) -> Result<(), EngineError> {
        for j in jobs {
            store::fail_job(self.db, j.id, reason).await?;
            self.say(Event::JobFailed {
                ordinal: j.ordinal,
                reason: reason.to_string(),
            });
        }
        Ok(())
    }

    /// Stores a job's outcome, or its failure with the raw outputs gathered, in one
    /// transaction, and says so; `console` is what the SUT's console showed when a host
    /// stopped answering.
    pub async fn store_job(
        &mut self,
        j: &JobRow,
        result: Result<store::JobOutcome, job::JobFailure>,
        console: impl FnOnce() -> Option<String>,
    ) -> Result<(), EngineError> {
        match result {
            Ok(outcome) => {
                store::job_done(self.db, self.run.id, j.id, &outcome).await?;
                self.say(Event::JobDone {
                    ordinal: j.ordinal,
                    metrics: outcome
                        .metrics
                        .iter()
                        .map(|m| (m.name.clone(), m.value, m.unit.clone()))
                        .collect(),
                    policy: outcome.observed_policy.clone(),
                });
            }
            Err(f) => {
                store::job_failed(self.db, self.run.id, j.id, &f.raw, &f.reason).await?;
                let console = if f.unreachable { console() } else { None };
                let reason = match console {
                    Some(c) => format!("{}; console:\n{c}", f.reason),
                    None => f.reason,
                };
                self.say(Event::JobFailed {
                    ordinal: j.ordinal,
                    reason,
                });
            }
        }
        Ok(())
    }
}
