//! Drives a run: boots each kernel once, applies each variant, runs each job (the steps are
//! in `drive`), and stores every outcome as it happens, so that a run stopped at any point can be resumed from the
//! first job not done. Progress goes out as [`Event`]s.

pub mod bisect;
mod cgroup;
mod console;
mod drive;
pub mod error;
mod hammerdb;
mod host;
mod phases;
/// The TPROC-C schema build on its own, as a job's session runs it (its failure reasons are
/// tested against a real HammerDB).
pub use server::build_schema;
mod collectors;
mod job;
pub mod knobs;
mod machine;
pub mod part;
pub mod reach;
mod sched_stats;
mod server;
pub mod session;
mod tools;
pub mod tune;

use std::collections::HashMap;

use sqlx::PgPool;

use crate::config::Config;
use crate::plan::{JobState, RunKind, RunState};
use crate::scenario::Scenario;
use crate::store::{self, JobRow};

/// Everything the engine tells the outside world while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    KernelBooting {
        kernel: String,
    },
    /// A line of a kernel build's output (or of kreg's own build steps).
    BuildOutput {
        kernel: String,
        line: String,
    },
    /// The kernel is on the controller (fetched, unpacked or built; or found cached), after
    /// `secs`; `release` is None for the running kernel.
    KernelPrepared {
        kernel: String,
        release: Option<String>,
        secs: f64,
        /// Whether it was compiled now (not found in the build cache).
        compiled: bool,
    },
    /// The SUT runs the kernel, `secs` after its boot began.
    KernelReady {
        kernel: String,
        release: String,
        boot_id: String,
        method: &'static str,
        secs: f64,
    },
    KernelFailed {
        kernel: String,
        reason: String,
        /// Who it is put down to (a build's failure, the lab's, the kernel's).
        class: crate::failure::FailureClass,
        jobs: usize,
    },
    JobStarted {
        ordinal: i32,
        total: usize,
        kernel: String,
        variant: String,
        workload: String,
        iteration: i32,
    },
    JobDone {
        ordinal: i32,
        metrics: Vec<(String, f64, String)>,
        policy: String,
    },
    JobFailed {
        ordinal: i32,
        reason: String,
    },
    /// An adaptive run looked at its results: these cells are still inconclusive and get
    /// more runs (none: every row has its verdict, or its last look).
    Look {
        cells: Vec<String>,
        jobs: usize,
    },
    /// A bisection's progress: what it measures, what a boot gave, what it decided.
    Bisect {
        message: String,
    },
    /// Something the user must know that fails no job.
    Warning {
        message: String,
    },
    /// Processes an earlier attempt left running on a host, killed before a job.
    Leftovers {
        host: String,
        killed: Vec<String>,
    },
}

/// A command for an agent's exec step: argv and a time limit, nothing else set.
fn command<S: Into<String>>(argv: impl IntoIterator<Item = S>, timeout_secs: u64) -> kreg_protocol::wire::ExecRequest {
    kreg_protocol::wire::ExecRequest {
        argv: argv.into_iter().map(Into::into).collect(),
        timeout_secs,
        ..Default::default()
    }
}

/// Why a spawned collector did not become ready.
enum NotReady {
    /// The agent could not start or poll it.
    Agent(kreg_protocol::client::ClientError),
    /// It exited first, or took too long (it is stopped then): the reason, said.
    Said(String),
}

/// What [`spawn_until_ready`] waits for, in words: what the process is, what it had not
/// done when it exited ("before counting"), how long it has, and what it had not done
/// when that time went by.
struct Readiness<'a> {
    what: &'a str,
    until_what: &'a str,
    secs: u64,
    late: &'a str,
}

/// Spawns `req` on `client` and polls it until `ready` holds of its state (a collector
/// that has opened its counters); returns its spawn id.
async fn spawn_until_ready(
    client: &kreg_protocol::client::AgentClient,
    req: kreg_protocol::wire::ExecRequest,
    r: Readiness<'_>,
    ready: impl Fn(&kreg_protocol::wire::ProcessState) -> bool,
) -> Result<u64, NotReady> {
    let Readiness {
        what,
        until_what,
        secs,
        late,
    } = r;
    use crate::poll::{until, Look, Waited};
    let p = client.spawn(req).await.map_err(NotReady::Agent)?;
    let waited = until(
        std::time::Duration::from_secs(secs),
        std::time::Duration::from_millis(50),
        async || match client.poll(p.id).await {
            Ok(st) if ready(&st) => Look::Ready(()),
            Ok(st) if !st.running => Look::Failed(format!(
                "{what} exited ({:?}) {until_what}: {}",
                st.exit_code.or(st.signal),
                crate::failure::tail(&st.stderr, 5)
            )),
            Ok(_) => Look::NotYet(String::new()),
            Err(e) => Look::Failed(e.to_string()),
        },
    )
    .await;
    let why = match waited {
        Ok(()) => return Ok(p.id),
        Err(Waited::Failed(why)) => why,
        Err(Waited::TimedOut { .. }) => late.to_string(),
    };
    let _ = client.stop(p.id, 5).await;
    Err(NotReady::Said(why))
}

/// Runs `r` on `client`; its stdout, or why it failed (`what` names it).
async fn must(
    client: &kreg_protocol::client::AgentClient,
    r: kreg_protocol::wire::ExecRequest,
    what: &str,
) -> Result<String, error::HostError> {
    let limit = r.timeout_secs;
    let res = client.exec(r).await.map_err(error::HostError::agent(what))?;
    if !res.success() {
        return Err(crate::failure::CommandFailed::of_exec(what, &res, limit).into());
    }
    Ok(res.stdout)
}

/// Whom the run's processes on `host` work for (the agent's sweep finds them by it): the
/// run's id and creation time, so that runs of two databases never share one, and the
/// host, so that a sweep on one host never touches another's processes when two agents
/// share a machine; and a fleet slot's, so that two slots of one run never sweep each
/// other's (their host names are the scenario's, the same on every pair).
fn owner_of(run: &store::RunRow, host: &str, slot: Option<i32>) -> String {
    let slot = slot.map(|s| format!("-s{s}")).unwrap_or_default();
    format!("run-{}-{:x}-{host}{slot}", run.id, run.created_at.timestamp_micros())
}

/// Turns the schedstat counters on for a boot when they are off, noting the value before
/// in the database first (so that an interrupted run can still put it back).
async fn schedstats_on(
    db: &PgPool,
    run_id: i64,
    sut: &str,
    client: &kreg_protocol::client::AgentClient,
    boot_id: &str,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<String>, EngineError> {
    let warn = |on_event: &mut dyn FnMut(Event), e: error::HostError| {
        on_event(Event::Warning {
            message: format!("{sut}: cannot turn the schedstat counters on ({e}): they may read zero"),
        })
    };
    let before = match knobs::schedstats_value(client).await {
        Ok(v) if v == "1" => return Ok(None),
        Ok(v) => v,
        Err(e) => {
            warn(on_event, e);
            return Ok(None);
        }
    };
    store::record_setting(db, run_id, sut, boot_id, knobs::SCHEDSTATS_SETTING, &before, "1").await?;
    if let Err(e) = knobs::set_schedstats(client, "1").await {
        warn(on_event, e);
    }
    Ok(Some(before))
}

/// Puts back the settings an interrupted drive of `run_id` left changed, on the hosts that
/// are still on the boot they were changed in (a reboot or a stopped lab VM reset them).
pub async fn restore_settings(db: &PgPool, run_id: i64, cfg: &Config) -> Result<Vec<String>, EngineError> {
    let run = store::run(db, run_id).await?;
    let scenario = scenario_of(&run)?;
    restore_settings_on(db, run_id, &scenario, cfg, None).await
}

/// [`restore_settings`] on the hosts of `scenario`; under a fleet slot's `lease` (whose
/// host names other slots' machines share) a setting of another boot is left as it is,
/// not taken for reset by a reboot, and the agents are asked under the lease's epoch.
pub(crate) async fn restore_settings_on(
    db: &PgPool,
    run_id: i64,
    scenario: &Scenario,
    cfg: &Config,
    lease: Option<&store::fleet::Lease>,
) -> Result<Vec<String>, EngineError> {
    let this_boot_only = lease.is_some();
    let mut said = Vec::new();
    for store::PendingSetting {
        host,
        boot_id,
        setting,
        before,
    } in store::unrestored_settings(db, run_id).await?
    {
        let found = scenario.hosts.iter().find(|h| h.name == host);
        let agent = match found {
            Some(h) => reach::agent(h, cfg, lease).await.transpose(),
            None => None,
        };
        let put_back = match agent {
            Some(agent) => {
                // The agent (and an ssh host's tunnel) lives while the setting is put back.
                match &agent {
                    Ok(a) => match a.client.identity().await {
                        Ok(id) if id.boot_id != boot_id && this_boot_only => continue,
                        Ok(id) if id.boot_id != boot_id => Ok("reset by a reboot".to_string()),
                        Ok(_) if setting == knobs::SCHEDSTATS_SETTING => knobs::set_schedstats(&a.client, &before)
                            .await
                            .map(|_| format!("put back to {before}"))
                            .map_err(|e| e.to_string()),
                        Ok(_) if setting.starts_with(knobs::FEATURE_SETTING) => {
                            knobs::write_feature(&a.client, &before)
                                .await
                                .map(|_| format!("put back to {before}"))
                                .map_err(|e| e.to_string())
                        }
                        // A tuned knob, by its path.
                        Ok(_) if setting.starts_with('/') => tune::put_back(&a.client, &setting, &before)
                            .await
                            .map(|_| format!("put back to {before}"))
                            .map_err(|e| e.to_string()),
                        Ok(_) => Err(format!("kreg does not know how to put {setting} back")),
                        Err(e) => Err(e.to_string()),
                    },
                    Err(e) => Err(e.to_string()),
                }
            }
            // A lab VM does not outlive its controller.
            _ => Ok("gone with the lab VM".to_string()),
        };
        match put_back {
            Ok(how) => {
                store::setting_restored(db, run_id, &host, &boot_id, &setting).await?;
                said.push(format!("{host}: {setting} {how}"));
            }
            Err(e) => said.push(format!("{host}: {setting} NOT put back to {before}: {e}")),
        }
    }
    Ok(said)
}

/// Kills what an earlier attempt of this run left on `host` (servers of this attempt kept
/// when `keep_spawned`), and says so.
async fn sweep(
    client: &kreg_protocol::client::AgentClient,
    host: &str,
    keep_spawned: bool,
    on_event: &mut dyn FnMut(Event),
) {
    match client.sweep(keep_spawned).await {
        Ok(killed) if !killed.is_empty() => on_event(Event::Leftovers {
            host: host.to_string(),
            killed: killed.iter().map(|k| format!("{} ({})", k.comm, k.pid)).collect(),
        }),
        Ok(_) => {}
        Err(e) => tracing::warn!(host, error = %e, "could not sweep the host"),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("run {0} is being driven by another kreg process right now")]
    Busy(i64),
    #[error("run {run}: its stored scenario no longer loads: {detail}")]
    Scenario { run: i64, detail: String },
    #[error("host {host}: {detail}")]
    Host { host: String, detail: String },
    #[error("bisection: {0}")]
    Bisect(String),
}

/// Why a step of a drive gave no value: `Failed`, the step failed and its jobs fail with
/// the reason while the drive goes on; `Drive`, the drive itself must stop (the database
/// went away, say).
#[derive(Debug)]
pub enum Stop<F> {
    Failed(F),
    Drive(EngineError),
}

impl<F> From<EngineError> for Stop<F> {
    fn from(e: EngineError) -> Stop<F> {
        Stop::Drive(e)
    }
}

impl<F> From<store::StoreError> for Stop<F> {
    fn from(e: store::StoreError) -> Stop<F> {
        Stop::Drive(e.into())
    }
}

/// How a drive ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub done: usize,
    pub failed: usize,
}

/// Loads the scenario a run was created from (its stored text, not today's file).
pub fn scenario_of(run: &store::RunRow) -> Result<Scenario, EngineError> {
    crate::scenario_file::of_run(run).map_err(|e| EngineError::Scenario {
        run: run.id,
        detail: e.to_string(),
    })
}

/// Runs every job of the session's run that is not done yet. When the database goes away
/// mid-run, the drive waits for it and goes on as a resume would ([`session::Session::again`]).
///
/// `reached`: agents the caller reached already (the preflight of `kreg run`); the others
/// are reached here.
pub async fn drive(
    db: &PgPool,
    session: &mut session::Session,
    cfg: &Config,
    mut reached: reach::Reached,
    on_event: &mut dyn FnMut(Event),
) -> Result<Outcome, EngineError> {
    session.lock(db).await?;
    let run = &session.run;
    let run_id = run.id;
    let jobs = store::jobs(db, run_id).await?;
    let left = jobs.iter().filter(|j| j.state.to_drive()).count();
    // An adaptive run stopped between a round and its look still has a look to take.
    let unfinished = matches!(run.state, RunState::Running | RunState::Interrupted);
    if left == 0 && !unfinished {
        // A finished run stays as it is: nothing to do, nothing touched.
        session.unlock();
        return Ok(Outcome {
            done: jobs.len(),
            failed: 0,
        });
    }
    if left == 0 && run.kind != RunKind::Adaptive {
        // Killed after its last job was stored, before the machines' settings were put
        // back and the run marked done: what it left changed is put back, and it ends.
        session.start(db, cfg, on_event).await?;
        store::set_run_state(db, run_id, RunState::Done).await?;
        session.end(db, RunState::Done, false).await;
        return Ok(Outcome {
            done: jobs.len(),
            failed: 0,
        });
    }
    session.start(db, cfg, on_event).await?;
    // The jobs read above serve the first pass; a pass after a lost database reads them anew.
    let mut known = Some(jobs);
    let result = loop {
        let hosts = std::mem::take(&mut reached);
        let result = drive_jobs(db, session, None, cfg, hosts, known.take(), on_event).await;
        let Err(e) = &result else { break result };
        match session.again(db, cfg, e, on_event).await {
            Ok(true) => {}
            Ok(false) => break result,
            Err(e) => break Err(e),
        }
    };
    let state = match &result {
        Ok(o) if o.failed == 0 => RunState::Done,
        Ok(_) => RunState::Failed,
        // Whatever stopped the drive, the run does not stay `running`.
        Err(_) => RunState::Interrupted,
    };
    // A drive's end state is stored by its last pass (done or failed), or here.
    session.end(db, state, result.is_err()).await;
    result
}

/// The boots (kernel, boot) with a job done.
fn started_boots(jobs: &[JobRow]) -> std::collections::HashSet<(String, i32)> {
    jobs.iter()
        .filter(|j| j.state == JobState::Done)
        .map(|j| (j.kernel.clone(), j.boot))
        .collect()
}

/// An adaptive run's look: the rows still inconclusive get another round, decided from
/// what is stored, so that a resume decides the same. Whether it added jobs.
async fn look(
    db: &PgPool,
    run: &store::RunRow,
    scenario: &Scenario,
    jobs: &[JobRow],
    on_event: &mut dyn FnMut(Event),
) -> Result<bool, EngineError> {
    let run_id = run.id;
    let samples = store::samples(db, run_id).await?;
    let plan = run.plan_settings();
    let cells = crate::report::next_round(scenario, &samples, &plan);
    let now: Vec<crate::plan::Job> = jobs.iter().map(|j| j.to_job()).collect();
    let more = crate::plan::extend(scenario, &now, &cells);
    on_event(Event::Look {
        cells: cells
            .iter()
            .map(|c| format!("{}/{}/{}", c.kernel, c.variant, c.workload))
            .collect(),
        jobs: more.len(),
    });
    if more.is_empty() {
        return Ok(false);
    }
    store::add_jobs(db, run_id, &more).await?;
    Ok(true)
}

/// A connection to each host of the scenario (those the preflight reached, taken over),
/// under the slot's `lease` when a fleet worker drives.
async fn open_conns(
    scenario: &Scenario,
    run_dir: &std::path::Path,
    cfg: &Config,
    lease: Option<&store::fleet::Lease>,
    mut reached: reach::Reached,
) -> Result<HashMap<String, host::Conn>, EngineError> {
    let mut conns = HashMap::new();
    for h in &scenario.hosts {
        let c = host::Conn::open(
            h,
            run_dir,
            cfg,
            scenario.needs_perf_on(&h.name),
            lease,
            reached.remove(&h.name),
        )
        .await
        .map_err(|detail| EngineError::Host {
            host: h.name.clone(),
            detail: detail.to_string(),
        })?;
        conns.insert(h.name.clone(), c);
    }
    Ok(conns)
}

/// The body of [`drive`], once the run is locked and marked running.
/// `known`: the run's jobs when they were just read.
/// `lease`: a fleet slot's, which every write and agent request of the drive is held to.
pub(crate) async fn drive_jobs(
    db: &PgPool,
    session: &session::Session,
    lease: Option<store::fleet::Lease>,
    cfg: &Config,
    reached: reach::Reached,
    known: Option<Vec<JobRow>>,
    on_event: &mut dyn FnMut(Event),
) -> Result<Outcome, EngineError> {
    let (run, scenario) = (&session.run, &session.scenario);
    let dir = match lease {
        Some(f) => format!("{}-slot{}", run.id, f.slot),
        None => run.id.to_string(),
    };
    let conns = open_conns(
        scenario,
        &cfg.data_dir.join("runs").join(dir),
        cfg,
        lease.as_ref(),
        reached,
    )
    .await?;
    let mut jobs = match known {
        Some(jobs) => jobs,
        None => jobs_of(db, run.id, lease).await?,
    };
    let mut driver = drive::Driver {
        db,
        run,
        ledger: drive::Ledger {
            db,
            run,
            total: jobs.len(),
            on_event,
            lease,
        },
        scenario,
        cfg,
        conns,
        sut: scenario.sut().name.clone(),
        started: started_boots(&jobs),
        retry_crash: true,
    };
    // The first pass takes every job not done (a resume retries the failed ones); the
    // rounds after a look take only the jobs that look added.
    let mut first = true;
    loop {
        let todo: Vec<&JobRow> = jobs
            .iter()
            .filter(|j| {
                if first {
                    j.state.to_drive()
                } else {
                    j.state == JobState::Pending
                }
            })
            .collect();
        first = false;
        driver.all(&todo).await?;
        if run.kind != RunKind::Adaptive {
            break;
        }
        if !look(db, run, scenario, &jobs, &mut *driver.ledger.on_event).await? {
            break;
        }
        jobs = store::jobs(db, run.id).await?;
        driver.ledger.total = jobs.len();
        driver.started = started_boots(&jobs);
    }

    let after = jobs_of(db, run.id, lease).await?;
    let done = after.iter().filter(|j| j.state == JobState::Done).count();
    let failed = after.len() - done;
    // A fleet slot's end is the worker's to record (the run ends with its last slot).
    if lease.is_none() {
        let state = if failed == 0 { RunState::Done } else { RunState::Failed };
        store::set_run_state(db, run.id, state).await?;
    }
    Ok(Outcome { done, failed })
}

/// The jobs a drive takes: the run's, or a fleet slot's.
async fn jobs_of(db: &PgPool, run_id: i64, lease: Option<store::fleet::Lease>) -> Result<Vec<JobRow>, EngineError> {
    Ok(match lease {
        Some(f) => store::slot_jobs(db, run_id, f.slot).await?,
        None => store::jobs(db, run_id).await?,
    })
}
