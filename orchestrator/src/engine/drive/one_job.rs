//! One job of the driver: run with its collectors and set-up, run again when its
//! connection was lost mid-job and came back on the same boot, and stored.

use std::time::Duration;

use kreg_protocol::client::AgentClient;

use super::{Booted, Driver, JOB_TRIES};
use crate::engine::error::HostError;
use crate::engine::server::Session;
use crate::engine::{job, sweep, EngineError, Event, Stop};
use crate::scenario::{Variant, Workload};
use crate::store::{self, JobRow};

impl Driver<'_> {
    /// Runs the job; when its connection was lost mid-job (an agent restarted, a network
    /// cut, an SSH connection dropped), once the hosts answer again on the same boot the
    /// whole job runs again (what the lost
    /// attempt left running is swept first; its partial outputs are dropped), at most
    /// [`JOB_TRIES`] times in all.
    async fn run_with_retries(
        &mut self,
        ctx: &job::Ctx<'_>,
        booted: &Booted,
        variant: &Variant,
        workload: &Workload,
        j: &JobRow,
    ) -> Result<store::JobOutcome, Stop<job::JobFailure>> {
        let mut tries = 0;
        loop {
            tries += 1;
            self.ledger.start(j).await?;
            let result = job::run(ctx, variant, workload).await;
            let lost = match &result {
                Err(f) if f.unreachable && tries < JOB_TRIES => f.reason.clone(),
                _ => return result.map_err(Stop::Failed),
            };
            if let Err(why) = self.back_after_loss(booted, workload).await {
                return result.map_err(|mut f| {
                    f.reason = format!("{}; not run again: {why}", f.reason);
                    Stop::Failed(f)
                });
            }
            self.ledger.say(Event::Warning {
                message: format!(
                    "job #{}: the connection was lost mid-job ({lost}); reconnected on the same boot, the job runs again (try {} of {JOB_TRIES})",
                    j.ordinal,
                    tries + 1
                ),
            });
            sweep(ctx.runner, &workload.on, true, self.ledger.on_event).await;
            if workload.on != self.sut {
                sweep(&booted.client, &self.sut, true, self.ledger.on_event).await;
            }
        }
    }

    /// After a job lost its connection: whether the job may run again. Each host of the
    /// job must be an agent host (see [`crate::engine::host::Conn::reconnects`]) and answer within
    /// the configuration's `reconnect_wait`, the SUT still on the boot the job was measuring.
    async fn back_after_loss(&self, booted: &Booted, workload: &Workload) -> Result<(), HostError> {
        let mut hosts = vec![self.sut.clone(), workload.on.clone()];
        hosts.extend(workload.kind.server_host().map(str::to_string));
        hosts.dedup();
        for name in &hosts {
            let conn = &self.conns[name];
            if !conn.reconnects() {
                return Err(format!("host {name} is a lab VM that stopped answering").into());
            }
            let client = conn
                .client()
                .ok_or_else(|| format!("host {name} is lost to this run"))?;
            let wait = self.cfg.reconnect_wait;
            let id = crate::poll::until(wait, Duration::from_millis(500), async || {
                match client.identity().await {
                    Ok(id) => crate::poll::Look::<_, ()>::Ready(id),
                    Err(e) => crate::poll::Look::NotYet(e.to_string()),
                }
            })
            .await
            .map_err(|_| format!("host {name} did not answer again within {} s", wait.as_secs_f64()))?;
            if *name == self.sut && id.boot_id != booted.id.boot_id {
                return Err(format!(
                    "the SUT booted again meanwhile (boot {} is not the measured boot {})",
                    id.boot_id, booted.id.boot_id
                )
                .into());
            }
        }
        Ok(())
    }

    /// One job: its hosts swept of leftovers, run, and its outcome stored in one
    /// transaction.
    pub(super) async fn job(
        &mut self,
        booted: &mut Booted,
        variant: &Variant,
        workload: &Workload,
        runner: &AgentClient,
        session: Option<&Session>,
        j: &JobRow,
    ) -> Result<(), EngineError> {
        sweep(runner, &workload.on, true, self.ledger.on_event).await;
        if workload.on != self.sut {
            sweep(&booted.client, &self.sut, true, self.ledger.on_event).await;
        }
        self.ledger.started(j);
        let (mut records, cpus) = match self.tuned_job(booted, variant, workload).await {
            Ok(x) => x,
            Err(failure) => return self.ledger.fail_jobs(&[j], &failure).await,
        };
        let own_cgroup = match self.job_cgroup(variant, workload, runner, cpus.as_deref(), j).await {
            Ok(c) => c,
            Err(failure) => return self.ledger.fail_jobs(&[j], &failure).await,
        };
        let cgroup = own_cgroup.as_ref().or(session.and_then(|s| s.cgroup.as_ref()));
        if let Some(cg) = cgroup {
            let setup = serde_json::to_string(&cg.setup).expect("a cgroup setup serializes");
            records.push(crate::record::RawKind::Cgroup, cg.setup.to_string());
            records.push(crate::record::RawKind::CgroupSetup, setup);
        }
        let booted = &*booted;
        let ctx = job::Ctx {
            sut: &booted.client,
            sut_id: &booted.id,
            runner,
            session,
            versions: &booted.versions,
            schedstat: booted.id.schedstat_version.is_some(),
            cpus,
            collect: self.scenario.collect.or(workload.collect),
            cgroup,
            tag: format!("{}-{}", self.run.id, j.ordinal),
            on: &workload.on,
        };
        let result = match self.run_with_retries(&ctx, booted, variant, workload, j).await {
            Ok(outcome) => Ok(outcome),
            Err(Stop::Failed(f)) => Err(f),
            Err(Stop::Drive(e)) => return Err(e),
        };
        let result = match own_cgroup.as_ref().map(|c| (c, c.host.clone())) {
            Some((cg, host)) => crate::engine::job::removed_after(cg, result, &host).await,
            None => result,
        };
        let result = match result {
            Ok(mut outcome) => {
                outcome.raw.extend(records);
                Ok(outcome)
            }
            Err(mut f) => {
                f.raw.extend(records);
                Err(f)
            }
        };
        // A host that stopped answering: the lab's console says why.
        let conn = &self.conns[&self.sut];
        self.ledger.store_job(j, result, || conn.console_tail()).await
    }
}
