//! A run's jobs, step by step: for each kernel, prepare it and boot the SUT into it, claim
//! the hosts for this run, install the tools, turn the schedstat counters on; for each
//! variant, set its sched features; for each workload, open its server; then each job.
//! Jobs come grouped (kernel, then variant, then workload) from [`runs_of`], the one place
//! that groups them. A step that fails fails the jobs below it with a typed [`Failure`].

use std::collections::HashMap;
use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::Identity;
use sqlx::PgPool;

use super::error::HostError;
use super::host::Conn;
use super::server::Session;
use super::{job, knobs, owner_of, schedstats_on, server, sweep, tools, EngineError, Event, Stop};
use crate::boot::Target;
use crate::config::Config;
use crate::failure::{Failed, FailureClass};
use crate::kernel::Prepared;
use crate::scenario::{BuildSpec, Kernel, KernelSource, Scenario, Variant, Workload};
use crate::store::{self, JobRow, RunRow};
pub(crate) use ledger::Ledger;

mod ledger;
mod one_job;
mod perf;
mod setup;

/// How many times a job runs when its connection is lost mid-job and comes back.
const JOB_TRIES: u32 = 3;

/// Why a group of jobs could not run, said once and stored as each job's reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Failure {
    /// The kernel could not be fetched, built, installed or booted.
    #[error("boot failed: {0}")]
    Boot(String),
    #[error("tool {tool} on {host}: {detail}")]
    Tool { tool: String, host: String, detail: String },
    #[error("host {0} is not connected")]
    NotConnected(String),
    /// A variant's sched features could not be set.
    #[error("{0}")]
    Variant(String),
    /// A host's tuning could not be had (its machine lacks a required setting, say).
    #[error("tuning on {host}: {detail}")]
    Tuning { host: String, detail: String },
    /// A job's cgroup could not be made or removed.
    #[error("cgroup on {host}: {detail}")]
    Cgroup { host: String, detail: String },
    #[error("workload {workload}, its server on {host}: {detail}")]
    Server {
        workload: String,
        host: String,
        detail: String,
    },
}

impl Failure {
    /// Who the failure is put down to (a boot's is classed where it failed, see
    /// [`boot_class`]).
    pub fn class(&self) -> FailureClass {
        match self {
            Failure::Boot(reason) => boot_class(reason),
            Failure::Variant(_) => FailureClass::Kernel,
            Failure::Server { .. } => FailureClass::Workload,
            Failure::Tool { .. } | Failure::NotConnected(_) | Failure::Tuning { .. } | Failure::Cgroup { .. } => {
                FailureClass::Infrastructure
            }
        }
    }
}

/// A boot that failed: the kernel's when it panicked or oopsed (as the console showed) or
/// another kernel than the one asked for runs; else the lab's.
pub fn boot_class(reason: &str) -> FailureClass {
    let wrong_kernel =
        crate::boot::NOT_ASKED.iter().all(|m| reason.contains(m)) || reason.contains(crate::boot::NOT_THE_BUILD);
    if crate::failure::kernel_fault(reason).is_some() || wrong_kernel {
        FailureClass::Kernel
    } else {
        FailureClass::Infrastructure
    }
}

/// Consecutive runs of jobs with the same key, in order: the jobs of one boot of a kernel,
/// of one variant within it, of one workload within that.
pub fn runs_of<'a, 'j, K: PartialEq>(jobs: &'a [&'j JobRow], key: impl Fn(&'j JobRow) -> K) -> Vec<&'a [&'j JobRow]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=jobs.len() {
        if i == jobs.len() || key(jobs[i]) != key(jobs[start]) {
            if i > start {
                out.push(&jobs[start..i]);
            }
            start = i;
        }
    }
    out
}

/// The SUT on one kernel's boot, and what its jobs run with.
struct Booted {
    id: Identity,
    client: AgentClient,
    /// The sched features file as the kernel booted.
    defaults: String,
    versions: tools::Versions,
    /// The schedstat switch's value before kreg turned it on (to put back).
    schedstats_before: Option<String>,
    /// The hosts with a tuning (the SUT's with its variants'), by name.
    tuners: HashMap<String, super::tune::Tuner>,
}

pub(super) struct Driver<'a> {
    pub db: &'a PgPool,
    pub run: &'a RunRow,
    /// Where outcomes, failures and progress go.
    pub ledger: Ledger<'a>,
    pub scenario: &'a Scenario,
    pub cfg: &'a Config,
    pub conns: HashMap<String, Conn>,
    pub sut: String,
    /// The boots (kernel, boot) with a job done already: a resume stays in such a boot if
    /// the host still runs it; any other boot of `boots: N` is a fresh one.
    pub started: std::collections::HashSet<(String, i32)>,
    /// Whether a boot that crashes is tried once more here ([`Target::retry_crash`]).
    pub retry_crash: bool,
}

/// The SUT booted into a kernel: who answers, and the kernel's own perf if it has one.
struct SutBoot {
    id: Identity,
    client: AgentClient,
    perf: Option<crate::kernel::perf::TreePerf>,
}

impl Driver<'_> {
    /// Every job given (in run order), kernel by kernel.
    pub async fn all(&mut self, todo: &[&JobRow]) -> Result<(), EngineError> {
        for jobs in runs_of(todo, |j| (&j.kernel, j.boot)) {
            let kernel = self
                .scenario
                .kernel(&jobs[0].kernel)
                .expect("jobs come from the scenario");
            let fresh = self.scenario.boots > 1 && !self.started.contains(&(kernel.name.clone(), jobs[0].boot));
            let booted = match self.boot_kernel(kernel, fresh).await {
                Ok(b) => b,
                Err(Stop::Failed(failed)) => {
                    self.ledger.fail_kernel(jobs, &kernel.name, failed).await?;
                    continue;
                }
                Err(Stop::Drive(e)) => return Err(e),
            };
            let mut booted = match self.ready_hosts(kernel, booted).await {
                Ok(b) => b,
                Err(Stop::Failed(failure)) => {
                    self.ledger.fail_jobs(jobs, &failure).await?;
                    continue;
                }
                Err(Stop::Drive(e)) => return Err(e),
            };
            for vjobs in runs_of(jobs, |j| &j.variant) {
                self.variant(&mut booted, vjobs).await?;
            }
            self.untune(&mut booted.tuners).await;
            self.clear_cgroups().await;
            self.put_schedstats_back(&booted).await?;
        }
        Ok(())
    }

    /// Prepares `kernel` and boots the SUT into it.
    async fn boot_kernel(&mut self, kernel: &Kernel, fresh: bool) -> Result<SutBoot, Stop<Failed>> {
        self.ledger.say(Event::KernelBooting {
            kernel: kernel.name.clone(),
        });
        let started = std::time::Instant::now();
        let (mut prepared, own_perf) = self
            .prepare(kernel)
            .await
            .map_err(|e| Stop::Failed(Failed::new(FailureClass::Build, e.to_string())))?;
        // A perf of its own source goes where a tree's would: into a lab guest's initramfs,
        // onto a machine after its boot.
        if let (Some(p), Some(perf)) = (prepared.as_mut(), own_perf.as_ref()) {
            p.perf = Some(perf.clone());
        }
        self.ledger.say(Event::KernelPrepared {
            kernel: kernel.name.clone(),
            release: prepared.as_ref().map(|p| p.release.clone()),
            secs: started.elapsed().as_secs_f64(),
            compiled: prepared
                .as_ref()
                .and_then(|p| p.built.as_ref())
                .is_some_and(|b| b.built_now),
        });
        let started = std::time::Instant::now();
        if let Some(b) = prepared.as_ref().and_then(|p| p.built.as_ref()) {
            store::record_build(self.db, b, &b.built_on).await?;
            store::link_build(self.db, &b.key, self.run.id, &kernel.name, b.commit.as_deref()).await?;
        }
        let timeout = Duration::from_secs(self.scenario.boot.timeout_secs);
        let conn = self.conns.get_mut(&self.sut).expect("the SUT has a connection");
        let target = Target {
            kernel,
            prepared: prepared.as_ref(),
            timeout,
            fresh,
            retry_crash: self.retry_crash,
        };
        let (id, method) = conn.boot(target, self.cfg).await.map_err(|e| {
            let reason = e.to_string();
            Stop::Failed(Failed::new(boot_class(&reason), reason))
        })?;
        let reached = conn.reached();
        store::record_host(self.db, self.run.id, &self.sut, &id, method.as_str(), &reached).await?;
        self.ledger.say(Event::KernelReady {
            kernel: kernel.name.clone(),
            release: id.kernel_release.clone(),
            boot_id: id.boot_id.clone(),
            method: method.as_str(),
            secs: started.elapsed().as_secs_f64(),
        });
        let client = self.conns[&self.sut]
            .client()
            .expect("a booted host has an agent")
            .clone();
        let perf = prepared.and_then(|p| p.perf).or(own_perf);
        Ok(SutBoot { id, client, perf })
    }

    /// Fetches, unpacks or builds the kernel (on its build host when it names one), the
    /// build's output going out as events while it runs.
    async fn prepare(
        &mut self,
        kernel: &Kernel,
    ) -> Result<(Option<Prepared>, Option<crate::kernel::perf::TreePerf>), HostError> {
        let builder = match &kernel.source {
            KernelSource::Build(BuildSpec { build_on: Some(h), .. }) => {
                match self.conns.get(h).and_then(|c| c.client()) {
                    Some(c) => Some((h.clone(), c.clone())),
                    None => return Err(format!("kernel {}: build host {h} is not reachable", kernel.name).into()),
                }
            }
            _ => None,
        };
        let (log_tx, mut log_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let on_event = &mut *self.ledger.on_event;
        let mut say = |line: String| {
            on_event(Event::BuildOutput {
                kernel: kernel.name.clone(),
                line,
            })
        };
        let prep = self.conns[&self.sut].prepare(kernel, self.cfg, builder, log_tx);
        tokio::pin!(prep);
        let prepared = loop {
            tokio::select! {
                r = &mut prep => break r,
                Some(line) = log_rx.recv() => say(line),
            }
        };
        while let Ok(line) = log_rx.try_recv() {
            say(line);
        }
        prepared
    }

    /// After a boot: every host claimed for this run (nothing an earlier attempt left
    /// survives), the other hosts' boots recorded, the tools installed, the schedstat
    /// counters on.
    async fn ready_hosts(
        &mut self,
        kernel: &Kernel,
        SutBoot { id, client, perf }: SutBoot,
    ) -> Result<Booted, Stop<Failure>> {
        for h in &self.scenario.hosts {
            if let Some(c) = self.conns[&h.name].client() {
                c.set_owner(&owner_of(self.run, &h.name, self.ledger.lease.map(|f| f.slot)));
                sweep(c, &h.name, false, self.ledger.on_event).await;
                // A fleet slot holds the machine alone: whatever an earlier holder of it
                // (another slot, a run whose controller died) left running goes too.
                if self.ledger.lease.is_some() {
                    match c.sweep_others().await {
                        Ok(killed) if !killed.is_empty() => self.ledger.say(Event::Warning {
                            message: format!(
                                "{}: killed what an earlier holder of the machine left running: {}",
                                h.name,
                                killed
                                    .iter()
                                    .map(|k| format!("{} ({})", k.comm, k.pid))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        }),
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(host = %h.name, error = %e, "could not sweep the host of other holders")
                        }
                    }
                }
                if h.name != self.sut {
                    if let Ok(other) = c.identity().await {
                        let reached = self.conns[&h.name].reached();
                        store::record_host(self.db, self.run.id, &h.name, &other, "none", &reached).await?;
                    }
                }
            }
        }
        self.clear_cgroups().await;
        let mut versions = self.install_tools().await.map_err(Stop::Failed)?;
        if let Some(v) = self
            .sut_perf(kernel, perf.as_ref(), &client)
            .await
            .map_err(Stop::Failed)?
        {
            versions.insert(format!("perf@{}", self.sut), v);
        }
        let wants_sched_stats = self.scenario.collect.perf_sched_stats
            || self.scenario.workloads.iter().any(|w| w.collect.perf_sched_stats);
        if wants_sched_stats {
            if let Err(detail) = super::sched_stats::supported(&client).await {
                return Err(Stop::Failed(Failure::Tool {
                    tool: "perf".into(),
                    host: self.sut.clone(),
                    detail: detail.to_string(),
                }));
            }
        }
        let tuners = self.tune_hosts(&id).await.map_err(Stop::Failed)?;
        let schedstats_before = if id.schedstat_version.is_some() {
            schedstats_on(
                self.db,
                self.run.id,
                &self.sut,
                &client,
                &id.boot_id,
                self.ledger.on_event,
            )
            .await?
        } else {
            self.ledger.say(Event::Warning {
                message: format!(
                    "kernel {}: {} has no /proc/schedstat (CONFIG_SCHEDSTATS off?): its jobs run without scheduler statistics",
                    kernel.name, self.sut
                ),
            });
            None
        };
        Ok(Booted {
            defaults: id.sched_features.clone().unwrap_or_default(),
            id,
            client,
            versions,
            schedstats_before,
            tuners,
        })
    }

    /// Installs every tool on its hosts; their versions by "tool@host".
    async fn install_tools(&self) -> Result<tools::Versions, Failure> {
        let mut versions = tools::Versions::new();
        for t in &self.scenario.tools {
            for h in &t.on {
                let c = self.conns[h].client().ok_or_else(|| Failure::NotConnected(h.clone()))?;
                let v = tools::install(c, t).await.map_err(|e| Failure::Tool {
                    tool: t.name.clone(),
                    host: h.clone(),
                    detail: e.to_string(),
                })?;
                versions.insert(format!("{}@{h}", t.name), v);
            }
        }
        Ok(versions)
    }

    /// One variant's jobs: its sched features set (and put back after), then workload by
    /// workload.
    async fn variant(&mut self, booted: &mut Booted, jobs: &[&JobRow]) -> Result<(), EngineError> {
        let variant = self
            .scenario
            .variant(&jobs[0].variant)
            .expect("jobs come from the scenario");
        // Each feature noted (as the kernel booted with it) before it changes: a controller
        // killed in the variant leaves what to put back.
        for (setting, before, after) in knobs::feature_settings(variant, &booted.defaults) {
            store::record_setting(
                self.db,
                self.run.id,
                &self.sut,
                &booted.id.boot_id,
                &setting,
                &before,
                &after,
            )
            .await?;
        }
        if let Err(reason) = knobs::apply_features(&booted.client, variant, &booted.defaults).await {
            self.ledger
                .fail_jobs(jobs, &Failure::Variant(reason.to_string()))
                .await?;
            self.put_features_back(booted, variant).await?;
            return Ok(());
        }
        if let Err(failure) = self.tune_for(booted, variant).await {
            self.ledger.fail_jobs(jobs, &failure).await?;
            self.put_features_back(booted, variant).await?;
            return Ok(());
        }
        for wjobs in runs_of(jobs, |j| &j.workload) {
            let workload = self
                .scenario
                .workload(&wjobs[0].workload)
                .expect("jobs come from the scenario");
            match self.open_workload(booted, variant, workload).await {
                Ok((runner, session)) => {
                    self.note_versions(booted, workload, &runner).await;
                    for j in wjobs {
                        self.job(booted, variant, workload, &runner, session.as_ref(), j)
                            .await?;
                    }
                    if let Some(s) = session {
                        if let Err(e) = s.stop().await {
                            tracing::warn!(workload = %workload.name, error = %e, "could not stop the server");
                        }
                    }
                }
                Err(failure) => self.ledger.fail_jobs(wjobs, &failure).await?,
            }
        }
        self.put_features_back(booted, variant).await
    }

    /// A variant's sched features back as the kernel booted with them, each noted as put
    /// back; one that cannot be is said, and stays noted for `kreg resume`.
    async fn put_features_back(&mut self, booted: &Booted, variant: &Variant) -> Result<(), EngineError> {
        for (setting, before, _) in knobs::feature_settings(variant, &booted.defaults) {
            match knobs::write_feature(&booted.client, &before).await {
                Ok(()) => {
                    store::setting_restored(self.db, self.run.id, &self.sut, &booted.id.boot_id, &setting).await?
                }
                Err(e) => self.ledger.say(Event::Warning {
                    message: format!("{}: could not put {setting} back to {before}: {e}", self.sut),
                }),
            }
        }
        Ok(())
    }

    /// The agent a workload runs on and, for a two-host kind, its server started.
    async fn open_workload(
        &self,
        booted: &Booted,
        variant: &Variant,
        workload: &Workload,
    ) -> Result<(AgentClient, Option<Session>), Failure> {
        let client_of = |host: &str| {
            self.conns[host]
                .client()
                .cloned()
                .ok_or_else(|| Failure::NotConnected(host.to_string()))
        };
        let runner = client_of(&workload.on)?;
        let Some(host) = workload.kind.server_host() else {
            return Ok((runner, None));
        };
        let srv = client_of(host)?;
        let cpus = Self::cpus_on(booted, variant, host)?;
        let cgroup = match super::cgroup::spec_for(variant, workload) {
            Some(spec) => {
                let name = format!("run-{}/{}-{}", self.run.id, variant.name, workload.name);
                let made = super::cgroup::make(&srv, host, name, spec, cpus.as_deref()).await;
                Some(made.map_err(|e| Failure::Cgroup {
                    host: host.to_string(),
                    detail: e.to_string(),
                })?)
            }
            None => None,
        };
        let at = server::Placement {
            cpus,
            cgroups: cgroup.as_ref().map(|c| c.leaves()),
        };
        match server::open(
            &workload.kind,
            &srv,
            &runner,
            &workload.on,
            variant.policy,
            at,
            booted.id.nr_cpus,
        )
        .await
        {
            Ok(mut session) => {
                if let Some(s) = session.as_mut() {
                    s.cgroup = cgroup;
                }
                Ok((runner, session))
            }
            Err(e) => {
                if let Some(cg) = cgroup {
                    let _ = cg.remove().await;
                }
                Err(Failure::Server {
                    workload: workload.name.clone(),
                    host: host.to_string(),
                    detail: e.to_string(),
                })
            }
        }
    }

    /// The versions of the programs a workload runs, once per boot.
    async fn note_versions(&self, booted: &mut Booted, workload: &Workload, runner: &AgentClient) {
        let mut programs = job::programs(workload, runner, &self.conns);
        if self.scenario.collect.or(workload.collect).perf_stat {
            programs.push(("perf".into(), self.sut.clone(), booted.client.clone()));
        }
        for (program, host, client) in programs {
            let key = format!("{program}@{host}");
            if let std::collections::btree_map::Entry::Vacant(slot) = booted.versions.entry(key) {
                slot.insert(tools::identify(&client, &program).await);
            }
        }
    }

    /// Puts the schedstat switch back as the boot had it, and notes that it was.
    async fn put_schedstats_back(&mut self, booted: &Booted) -> Result<(), EngineError> {
        let Some(before) = &booted.schedstats_before else {
            return Ok(());
        };
        match knobs::set_schedstats(&booted.client, before).await {
            Ok(()) => {
                store::setting_restored(
                    self.db,
                    self.run.id,
                    &self.sut,
                    &booted.id.boot_id,
                    knobs::SCHEDSTATS_SETTING,
                )
                .await?
            }
            Err(e) => self.ledger.say(Event::Warning {
                message: format!(
                    "{}: could not put {} back to {before}: {e}",
                    self.sut,
                    knobs::SCHEDSTATS_SETTING
                ),
            }),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::JobState;

    fn row(ordinal: i32, kernel: &str, variant: &str) -> JobRow {
        JobRow {
            id: ordinal as i64,
            ordinal,
            kernel: kernel.into(),
            variant: variant.into(),
            workload: "w".into(),
            iteration: 1,
            boot: 1,
            state: JobState::Pending,
            attempts: 0,
            error: None,
            failure_class: None,
            warmup: false,
        }
    }

    #[test]
    fn a_boot_is_the_kernels_when_it_panicked_or_another_kernel_runs() {
        use crate::failure::FailureClass::*;
        let class = |r: &str| Failure::Boot(r.into()).class();
        assert_eq!(class("kernel c4 did not come up in the lab: the kernel panicked (Kernel panic - not syncing: Attempted to kill init!)"), Kernel);
        assert_eq!(
            class("grub-reboot into 6.1.0 on sut: booted 6.12.0, expected 6.1.0"),
            Kernel
        );
        assert_eq!(class("the agent did not answer within 300 s"), Infrastructure);
        assert_eq!(
            Failure::Server {
                workload: "db".into(),
                host: "ldg".into(),
                detail: "exited".into()
            }
            .class(),
            Workload
        );
        assert_eq!(
            Failure::Tool {
                tool: "perf".into(),
                host: "sut".into(),
                detail: "upload".into()
            }
            .class(),
            Infrastructure
        );
    }

    #[test]
    fn runs_are_consecutive_groups() {
        let rows = [row(1, "a", "x"), row(2, "a", "y"), row(3, "b", "y"), row(4, "a", "y")];
        let refs: Vec<&JobRow> = rows.iter().collect();
        let kernels: Vec<Vec<i32>> = runs_of(&refs, |j| &j.kernel)
            .iter()
            .map(|r| r.iter().map(|j| j.ordinal).collect())
            .collect();
        assert_eq!(kernels, vec![vec![1, 2], vec![3], vec![4]]);
        let variants = runs_of(&refs[..2], |j| &j.variant);
        assert_eq!(variants.len(), 2);
        assert!(runs_of(&[], |j| &j.kernel).is_empty());
    }
}
