//! What a drive records: each job's outcome or failure stored in one transaction, the jobs
//! a failed step leaves undone failed with its reason, and the run's progress said as
//! [`Event`]s. The driver drives machines; the ledger only writes down what happened.

use sqlx::{PgPool, Postgres, Transaction};

use super::Failure;
use crate::engine::{job, EngineError, Event};
use crate::failure::{Failed, FailureClass};
use crate::store::{self, JobRow, RunRow};

pub(crate) struct Ledger<'a> {
    pub db: &'a PgPool,
    pub run: &'a RunRow,
    /// All jobs of the run, for "job N of M".
    pub total: usize,
    pub on_event: &'a mut dyn FnMut(Event),
    /// A fleet worker's lease: every write checks it still holds its slot, in the
    /// transaction of the write (none for `kreg run`).
    pub lease: Option<store::fleet::Lease>,
}

impl Ledger<'_> {
    /// A transaction for a write, the lease checked first (a worker whose lease was taken
    /// over stores nothing).
    async fn begin(&self) -> Result<Transaction<'static, Postgres>, EngineError> {
        let mut tx = self.db.begin().await.map_err(store::StoreError::from)?;
        if let Some(f) = &self.lease {
            store::fleet::check_fence(&mut tx, f).await?;
        }
        Ok(tx)
    }

    async fn commit(tx: Transaction<'static, Postgres>) -> Result<(), EngineError> {
        tx.commit().await.map_err(store::StoreError::from)?;
        Ok(())
    }

    /// A job's attempt begins: it is `running` (under the lease, if any).
    pub async fn start(&mut self, j: &JobRow) -> Result<(), EngineError> {
        let mut tx = self.begin().await?;
        store::start_job(&mut *tx, j.id).await?;
        Self::commit(tx).await
    }

    async fn fail_one(&self, j: &JobRow, reason: &str, class: FailureClass) -> Result<(), EngineError> {
        let mut tx = self.begin().await?;
        store::fail_job(&mut *tx, j.id, reason, class).await?;
        Self::commit(tx).await
    }
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
    pub async fn fail_kernel(&mut self, jobs: &[&JobRow], kernel: &str, failed: Failed) -> Result<(), EngineError> {
        let stored = Failure::Boot(failed.reason.clone()).to_string();
        for j in jobs {
            self.fail_one(j, &stored, failed.class).await?;
        }
        self.say(Event::KernelFailed {
            kernel: kernel.to_string(),
            reason: failed.reason,
            class: failed.class,
            jobs: jobs.len(),
        });
        Ok(())
    }

    /// Jobs that a step before them failed (the same failure for each).
    pub async fn fail_jobs(&mut self, jobs: &[&JobRow], failure: &Failure) -> Result<(), EngineError> {
        let (reason, class) = (failure.to_string(), failure.class());
        for j in jobs {
            self.fail_one(j, &reason, class).await?;
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
                let mut tx = self.begin().await?;
                store::finish_job(&mut tx, self.run.id, j.id, &outcome).await?;
                if let Some(f) = &self.lease {
                    store::fleet::stored_under(&mut *tx, j.id, f.epoch).await?;
                }
                Self::commit(tx).await?;
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
                // A host that stopped answering is the lab's doing unless its console
                // shows the kernel's panic or oops; a job that ran and failed, the workload's.
                let console = if f.unreachable { console() } else { None };
                let class = match (&console, f.unreachable) {
                    (Some(c), _) if crate::failure::kernel_fault(c).is_some() => FailureClass::Kernel,
                    (_, true) => FailureClass::Infrastructure,
                    (_, false) => FailureClass::Workload,
                };
                let mut tx = self.begin().await?;
                store::store_raw(&mut tx, self.run.id, j.id, &f.raw).await?;
                store::fail_job(&mut *tx, j.id, &f.reason, class).await?;
                Self::commit(tx).await?;
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
