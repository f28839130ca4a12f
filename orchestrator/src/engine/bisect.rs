//! A metric bisection on real machines: [`crate::bisect::Bisection`] says which commit to
//! boot next and why; here each such boot is a measurement — the commit built (through the
//! build cache, in the range's shared work tree), the SUT booted into it afresh, the
//! workload's iterations run and stored as any run's jobs — and its value (the metric's
//! mean over the boot's iterations) goes back to the bisection. Every measurement is stored
//! before its jobs run and completed after, so a resume replays the stored ones in order
//! (the decisions are the same) and goes on with the first not measured.

use std::path::PathBuf;

use sqlx::PgPool;

use super::drive::{Driver, Ledger};
use super::phases::PhaseClock;
use super::{open_conns, EngineError, Event};
use crate::bisect::{Ask, Outcome, Role};
use crate::config::Config;
use crate::failure::{Failed, FailureClass};
use crate::plan::{Job, RunState};
use crate::scenario::{BuildSpec, Kernel, KernelSource, Scenario, TreeSource};
use crate::store::bisect::{BisectionRow, Commit, Measurement};
use crate::store::{self, RunRow};

/// Said while a bisection goes.
fn say(on_event: &mut dyn FnMut(Event), message: String) {
    on_event(Event::Bisect { message });
}

/// The scenario's kernel a bisection builds, with its build and its repository.
pub struct Source<'s> {
    pub kernel: &'s Kernel,
    pub spec: &'s BuildSpec,
    pub url: &'s str,
}

/// The kernel `name` of `scenario`, which must be built from git.
pub fn source<'s>(scenario: &'s Scenario, name: &str) -> Result<Source<'s>, crate::Error> {
    let kernel = scenario
        .kernel(name)
        .ok_or_else(|| crate::Error::invalid(format!("the scenario has no kernel {name:?}")))?;
    match &kernel.source {
        KernelSource::Build(spec) => match &spec.tree {
            TreeSource::Git { url, .. } => Ok(Source { kernel, spec, url }),
            TreeSource::Tarball { .. } => Err(crate::Error::invalid(format!(
                "kernel {name} is built from a tarball: a bisection needs a git tree (`source: {{ git: URL, ref: REF }}`)"
            ))),
        },
        _ => Err(crate::Error::invalid(format!(
            "kernel {name} is not built from source: a bisection builds commits of a git tree"
        ))),
    }
}

/// The kernel of one measurement: the commit's tree (with `revert`, a patch that reverts a
/// commit, applied before the scenario's patches).
fn kernel_at(src: &Source, name: &str, hash: &str, revert: Option<PathBuf>) -> Kernel {
    let mut spec = src.spec.clone();
    spec.tree = TreeSource::Git {
        url: src.url.to_string(),
        git_ref: hash.to_string(),
    };
    if let Some(p) = revert {
        spec.patches.insert(0, p);
    }
    Kernel {
        name: name.to_string(),
        source: KernelSource::Build(spec),
        cmdline: src.kernel.cmdline.clone(),
        perf: src.kernel.perf.clone(),
    }
}

/// The kernel name a commit's boots run under: its place in the range and its hash; a
/// revert's names the commit reverted.
pub fn kernel_name(commits: &[Commit], commit: usize, role: Role) -> String {
    match role {
        Role::Revert { culprit } => format!("revert-{}", &commits[culprit].hash[..12]),
        _ => format!("c{commit}-{}", &commits[commit].hash[..12]),
    }
}

/// Drives the bisection of `run_id` to its outcome (stored with the bisection).
pub async fn bisect(
    db: &PgPool,
    session: &mut super::session::Session,
    cfg: &Config,
    reached: super::reach::Reached,
    on_event: &mut dyn FnMut(Event),
) -> Result<Outcome, EngineError> {
    let run_id = session.id();
    let row = store::bisect::bisection(db, run_id)
        .await?
        .ok_or_else(|| EngineError::Bisect(format!("run {run_id} is not a bisection")))?;
    let commits = store::bisect::commits(db, run_id).await?;
    session.lock(db).await?;
    session.start(db, cfg, on_event).await?;
    // Kernels compiled for a measurement a lost database cut off (see `Bisector`).
    let uncredited = Default::default();
    // A database that goes away mid-measurement is waited for as `kreg run` waits for it;
    // the next pass replays what is stored and goes on from there.
    let mut reached = reached;
    let result = loop {
        let bisector = Bisector {
            db,
            run: &session.run,
            row: &row,
            commits: &commits,
            scenario: &session.scenario,
            cfg,
            uncredited: &uncredited,
        };
        let result = bisector.go(std::mem::take(&mut reached), on_event).await;
        let Err(e) = &result else { break result };
        match session.again(db, cfg, e, on_event).await {
            Ok(true) => {}
            Ok(false) => break result,
            Err(e) => break Err(e),
        }
    };
    let state = match &result {
        Ok(_) => RunState::Done,
        Err(_) => RunState::Interrupted,
    };
    session.end(db, state, true).await;
    result
}

struct Bisector<'a> {
    db: &'a PgPool,
    run: &'a RunRow,
    row: &'a BisectionRow,
    /// The whole range, good first.
    commits: &'a [Commit],
    scenario: &'a Scenario,
    cfg: &'a Config,
    /// Kernels compiled for a measurement that a lost database cut off before it was
    /// stored: the pass that measures it again (from the cache) counts the build.
    uncredited: &'a std::sync::Mutex<std::collections::HashSet<String>>,
}

/// What one measurement's boot gave, with whether its kernel was compiled for it.
struct Measured {
    value: Result<f64, Failed>,
    compiled: bool,
}

impl Bisector<'_> {
    async fn go(
        &self,
        reached: super::reach::Reached,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Outcome, EngineError> {
        let ms = store::bisect::measurements(self.db, self.run.id).await?;
        let (mut bisection, mut pending) =
            store::bisect::replay(self.row, &ms).map_err(|e| EngineError::Bisect(e.to_string()))?;
        let mut seq = store::bisect::next_seq(self.db, self.run.id).await? - 1;
        if !ms.is_empty() {
            let done = ms.iter().filter(|m| m.measured()).count();
            say(
                on_event,
                format!("{done} measurement(s) stored: the bisection goes on from there"),
            );
        }
        let run_dir = self.cfg.data_dir.join("runs").join(self.run.id.to_string());
        let mut conns = open_conns(self.scenario, &run_dir, self.cfg, None, reached).await?;
        let mut seen = (bisection.steps().len(), bisection.reproduced());
        let hash = |i: usize| crate::bisect::report::short(&self.commits[i].hash).to_string();
        // The measurement last judged, its phases' clock running until the next decision.
        let mut judged: Option<(i32, PhaseClock)> = None;
        loop {
            let m = match pending.take() {
                Some(m) => self.resumed(m).await?,
                None => {
                    let ask = bisection.ask();
                    if let Some((seq, clock)) = judged.take() {
                        let phases = clock.finish(std::time::Instant::now());
                        store::bisect::set_phases(self.db, self.run.id, seq, &phases).await?;
                    }
                    for line in bisection.decisions_since(seen, &ask, &hash) {
                        say(on_event, line);
                    }
                    seen = (bisection.steps().len(), bisection.reproduced());
                    match ask {
                        Ask::Done(outcome) => {
                            let json = serde_json::to_value(&outcome).expect("serialisable");
                            store::bisect::set_outcome(self.db, self.run.id, &json).await?;
                            return Ok(outcome);
                        }
                        Ask::Measure { commit, role } => {
                            seq += 1;
                            self.ask(seq, commit, role).await?
                        }
                    }
                }
            };
            let role = m.role;
            say(on_event, self.describe(&m));
            let mut clock = PhaseClock::new();
            let measured = self.measure(&m, &mut conns, on_event, &mut clock).await?;
            clock.judging(std::time::Instant::now());
            let value = measured.value.as_ref().map(|v| *v);
            store::bisect::measured(self.db, self.run.id, m.seq, value, measured.compiled).await?;
            match &measured.value {
                Ok(v) => say(on_event, format!("  {} = {v:.6}", self.row.metric)),
                Err(e) => say(on_event, format!("  no value ({}): {}", e.class, e.reason)),
            }
            bisection.record(m.commit_index as usize, role, measured.value);
            judged = Some((m.seq, clock));
        }
    }

    /// "measurement 7: step c4-1a2b3c4d5e6f (sched: …)".
    fn describe(&self, m: &Measurement) -> String {
        let c = &self.commits[m.commit_index as usize];
        format!("measurement {}: {} {} ({})", m.seq, m.role.name(), m.kernel, c.subject)
    }

    /// The jobs of one boot of `kernel`: warm-ups first, then the iterations; numbered
    /// after the run's last job, in a boot number no job has yet.
    async fn jobs_for(&self, kernel: &str) -> Result<(u32, Vec<Job>), EngineError> {
        let jobs = store::jobs(self.db, self.run.id).await?;
        let mut ordinal = jobs.iter().map(|j| j.ordinal as u32).max().unwrap_or(0);
        let boot = jobs.iter().map(|j| j.boot as u32).max().unwrap_or(0) + 1;
        let mut next = |iteration: u32, warmup: bool| {
            ordinal += 1;
            Job {
                ordinal,
                kernel: kernel.to_string(),
                variant: self.row.variant.clone(),
                workload: self.row.workload.clone(),
                iteration,
                boot,
                warmup,
            }
        };
        let mut new: Vec<Job> = (0..self.scenario.warmup).map(|_| next(0, true)).collect();
        new.extend((1..=self.scenario.iterations).map(|i| next(i, false)));
        Ok((boot, new))
    }

    /// The measurement a stopped attempt left unmeasured: measured as it is when none of
    /// its jobs ran, else in a new boot (that one is gone).
    async fn resumed(&self, mut m: Measurement) -> Result<Measurement, EngineError> {
        let jobs = store::jobs(self.db, self.run.id).await?;
        let started = jobs
            .iter()
            .any(|j| j.kernel == m.kernel && j.boot == m.boot && j.state != crate::plan::JobState::Pending);
        if started {
            let (boot, new) = self.jobs_for(&m.kernel).await?;
            store::bisect::move_to_boot(self.db, self.run.id, &m, boot as i32, &new).await?;
            m.boot = boot as i32;
        }
        Ok(m)
    }

    /// A new measurement stored with its jobs, in a boot of its own.
    async fn ask(&self, seq: i32, commit: usize, role: Role) -> Result<Measurement, EngineError> {
        let kernel = kernel_name(self.commits, commit, role);
        let (boot, new) = self.jobs_for(&kernel).await?;
        let m = Measurement {
            seq,
            commit_index: commit as i32,
            role,
            reverted: match role {
                Role::Revert { culprit } => Some(culprit as i32),
                _ => None,
            },
            kernel,
            boot: boot as i32,
            value: None,
            error: None,
            failure_class: None,
            compiled: false,
            phases: None,
        };
        store::bisect::ask_measurement(self.db, self.run.id, &m, &new).await?;
        Ok(m)
    }

    /// The scenario one measurement is driven with: its kernel alone, the bisection's
    /// variant and workload, every boot a fresh one.
    fn scenario_for(&self, m: &Measurement) -> Result<Scenario, crate::Error> {
        let src = source(self.scenario, &self.row.kernel)?;
        let commit = &self.commits[m.commit_index as usize];
        let revert = match m.reverted {
            Some(culprit) => Some(
                crate::kernel::range::revert_patch(
                    src.url,
                    &commit.hash,
                    &self.commits[culprit as usize].hash,
                    &self.cfg.cache_dir,
                )
                .map_err(|e| crate::Error::invalid(e.to_string()))?,
            ),
            None => None,
        };
        let mut s = self.scenario.clone();
        s.kernels = vec![kernel_at(&src, &m.kernel, &commit.hash, revert)];
        s.baseline = m.kernel.clone();
        s.variants.retain(|v| v.name == self.row.variant);
        s.workloads.retain(|w| w.name == self.row.workload);
        s.boots = s.boots.max(2);
        Ok(s)
    }

    /// Runs a measurement's jobs not done yet and reads its value.
    async fn measure(
        &self,
        m: &Measurement,
        conns: &mut std::collections::HashMap<String, super::host::Conn>,
        on_event: &mut dyn FnMut(Event),
        clock: &mut PhaseClock,
    ) -> Result<Measured, EngineError> {
        let scenario = match self.scenario_for(m) {
            Ok(s) => s,
            // A revert that does not apply: that side of the confirmation has no value.
            Err(e) => {
                return Ok(Measured {
                    value: Err(Failed::new(FailureClass::Build, e.to_string())),
                    compiled: false,
                })
            }
        };
        let all = store::jobs(self.db, self.run.id).await?;
        let todo: Vec<&store::JobRow> = all
            .iter()
            .filter(|j| j.kernel == m.kernel && j.boot == m.boot && j.state.to_drive())
            .collect();
        let (mut prepared, mut compiled, mut failed) = (false, false, false);
        let mut watch = |e: Event| {
            clock.event(&e, std::time::Instant::now());
            match &e {
                Event::KernelPrepared { compiled: c, .. } => {
                    prepared = true;
                    compiled |= *c;
                }
                Event::KernelFailed { .. } => failed = true,
                _ => {}
            }
            on_event(e)
        };
        let mut driver = Driver {
            db: self.db,
            run: self.run,
            ledger: Ledger {
                db: self.db,
                run: self.run,
                total: all.len(),
                on_event: &mut watch,
                lease: None,
            },
            scenario: &scenario,
            cfg: self.cfg,
            conns: std::mem::take(conns),
            sut: scenario.sut().name.clone(),
            started: Default::default(),
            // A boot that fails is the bisection's to try again, and to count.
            retry_crash: false,
        };
        let driven = driver.all(&todo).await;
        *conns = std::mem::take(&mut driver.conns);
        drop(driver);
        // A kernel that failed before it was prepared was being built (or fetched) for it.
        let compiled = compiled || (failed && !prepared);
        if compiled {
            self.uncredited.lock().expect("not poisoned").insert(m.kernel.clone());
        }
        driven?;
        let compiled = self.uncredited.lock().expect("not poisoned").remove(&m.kernel);
        Ok(Measured {
            value: self.value_of(m).await?,
            compiled,
        })
    }

    /// The metric's mean over the boot's iterations, or why the boot gave none.
    async fn value_of(&self, m: &Measurement) -> Result<Result<f64, Failed>, EngineError> {
        let samples = store::boot_samples(self.db, self.run.id, &m.kernel, m.boot).await?;
        let values: Vec<f64> = samples
            .iter()
            .filter(|s| *s.workload == *self.row.workload && *s.metric == *self.row.metric)
            .map(|s| s.value)
            .collect();
        if !values.is_empty() {
            return Ok(Ok(values.iter().sum::<f64>() / values.len() as f64));
        }
        if !samples.is_empty() {
            let mut names: Vec<&str> = samples.iter().map(|s| &*s.metric).collect();
            names.sort();
            names.dedup();
            return Err(EngineError::Bisect(format!(
                "workload {} gives no metric {:?}; it gives: {}",
                self.row.workload,
                self.row.metric,
                names.join(", ")
            )));
        }
        let jobs = store::jobs(self.db, self.run.id).await?;
        let failed = jobs
            .iter()
            .filter(|j| j.kernel == m.kernel && j.boot == m.boot)
            .find_map(|j| {
                let class = j.failure_class.unwrap_or(FailureClass::Infrastructure);
                j.error.as_ref().map(|e| Failed::new(class, e.clone()))
            })
            .unwrap_or_else(|| Failed::new(FailureClass::Workload, "its jobs stored no value"));
        Ok(Err(failed))
    }
}
