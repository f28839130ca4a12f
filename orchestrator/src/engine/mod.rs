//! Drives a run: boots each kernel once, applies each variant, runs each job, and stores
//! every outcome as it happens, so that a run stopped at any point can be resumed from the
//! first job not done. Progress goes out as [`Event`]s.

mod host;
pub use host::read_token;
mod http;
mod job;
mod server;
mod tools;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use sqlx::PgPool;

use crate::config::Config;
use crate::scenario::{self, BuildSpec, KernelSource, Scenario};
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
    KernelReady {
        kernel: String,
        release: String,
        boot_id: String,
        method: &'static str,
    },
    KernelFailed {
        kernel: String,
        reason: String,
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

/// Whom the run's processes on `host` work for (the agent's sweep finds them by it): the
/// run's id and creation time, so that runs of two databases never share one, and the
/// host, so that a sweep on one host never touches another's processes when two agents
/// share a machine.
fn owner_of(run: &store::RunRow, host: &str) -> String {
    format!("run-{}-{:x}-{host}", run.id, run.created_at.timestamp_micros())
}

/// Turns the schedstat counters on for a boot when they are off, noting the value before
/// in the database first (so that an interrupted run can still put it back).
async fn schedstats_on(
    db: &PgPool,
    run_id: i64,
    sut: &str,
    client: &kreg_agent::client::AgentClient,
    boot_id: &str,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<String>, EngineError> {
    let warn = |on_event: &mut dyn FnMut(Event), e: String| {
        on_event(Event::Warning {
            message: format!("{sut}: cannot turn the schedstat counters on ({e}): they may read zero"),
        })
    };
    let before = match job::schedstats_value(client).await {
        Ok(v) if v == "1" => return Ok(None),
        Ok(v) => v,
        Err(e) => {
            warn(on_event, e);
            return Ok(None);
        }
    };
    store::record_setting(db, run_id, sut, boot_id, job::SCHEDSTATS_SETTING, &before, "1").await?;
    if let Err(e) = job::set_schedstats(client, "1").await {
        warn(on_event, e);
    }
    Ok(Some(before))
}

/// Puts back the settings an interrupted drive of `run_id` left changed, on the hosts that
/// are still on the boot they were changed in (a reboot or a stopped lab VM reset them).
pub async fn restore_settings(db: &PgPool, run_id: i64) -> Result<Vec<String>, EngineError> {
    let run = store::run(db, run_id).await?;
    let scenario = scenario_of(&run)?;
    let mut said = Vec::new();
    for (host, boot_id, setting, before) in store::unrestored_settings(db, run_id).await? {
        let transport = scenario.hosts.iter().find(|h| h.name == host).map(|h| &h.transport);
        let put_back = match transport {
            Some(crate::scenario::Transport::Http { url, token_file, .. }) => {
                let client = host::read_token(token_file).map(|t| kreg_agent::client::AgentClient::new(url, &t));
                match client {
                    Ok(c) => match c.identity().await {
                        Ok(id) if id.boot_id != boot_id => Ok("reset by a reboot".to_string()),
                        Ok(_) if setting == job::SCHEDSTATS_SETTING => job::set_schedstats(&c, &before)
                            .await
                            .map(|_| format!("put back to {before}")),
                        Ok(_) => Err(format!("kreg does not know how to put {setting} back")),
                        Err(e) => Err(e.to_string()),
                    },
                    Err(e) => Err(e),
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
    client: &kreg_agent::client::AgentClient,
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
}

/// How a drive ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub done: usize,
    pub failed: usize,
}

/// A kernel that could not be prepared or booted: its jobs fail with the reason.
async fn fail_kernel(
    db: &PgPool,
    jobs: &[&JobRow],
    kernel: &str,
    reason: String,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), EngineError> {
    for j in jobs {
        store::fail_job(db, j.id, &format!("boot failed: {reason}")).await?;
    }
    on_event(Event::KernelFailed {
        kernel: kernel.to_string(),
        reason,
        jobs: jobs.len(),
    });
    Ok(())
}

async fn fail_all(
    db: &PgPool,
    jobs: &[&JobRow],
    reason: &str,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), EngineError> {
    for j in jobs {
        store::fail_job(db, j.id, reason).await?;
        on_event(Event::JobFailed {
            ordinal: j.ordinal,
            reason: reason.to_string(),
        });
    }
    Ok(())
}

/// Loads the scenario a run was created from (its stored text, not today's file).
pub fn scenario_of(run: &store::RunRow) -> Result<Scenario, EngineError> {
    let base = Path::new(&run.source_path).parent().unwrap_or(Path::new("."));
    scenario::from_str(&run.yaml, base).map_err(|diags| EngineError::Scenario {
        run: run.id,
        detail: diags
            .iter()
            .map(|d| d.render(&run.source_path))
            .collect::<Vec<_>>()
            .join("; "),
    })
}

/// Runs every job of `run_id` that is not done yet.
pub async fn drive(
    db: &PgPool,
    run_id: i64,
    cfg: &Config,
    on_event: &mut dyn FnMut(Event),
) -> Result<Outcome, EngineError> {
    let run = store::run(db, run_id).await?;
    let scenario = scenario_of(&run)?;

    // One driver per run: a session-level advisory lock, released if this process dies.
    let mut lock = db.acquire().await.map_err(store::StoreError::from)?;
    let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(4242, $1::INT)")
        .bind(run_id as i32)
        .fetch_one(&mut *lock)
        .await
        .map_err(store::StoreError::from)?;
    if !got {
        return Err(EngineError::Busy(run_id));
    }
    let jobs = store::jobs(db, run_id).await?;
    let left = jobs
        .iter()
        .filter(|j| j.state().needs_run() || j.state() == crate::plan::JobState::Failed)
        .count();
    if left == 0 {
        // A finished run stays as it is: nothing to do, nothing touched.
        return Ok(Outcome {
            done: jobs.len(),
            failed: 0,
        });
    }
    store::set_run_state(db, run_id, "running").await?;
    let result = drive_jobs(db, &run, &scenario, cfg, on_event).await;
    if result.is_err() {
        // Whatever stopped the drive, the run does not stay `running`.
        let _ = store::set_run_state(db, run_id, "interrupted").await;
    }
    drop(lock);
    result
}

/// The body of [`drive`], once the run is locked and marked running.
async fn drive_jobs(
    db: &PgPool,
    run: &store::RunRow,
    scenario: &Scenario,
    cfg: &Config,
    on_event: &mut dyn FnMut(Event),
) -> Result<Outcome, EngineError> {
    let run_id = run.id;

    let run_dir = cfg.data_dir.join("runs").join(run_id.to_string());
    let mut conns: HashMap<String, host::Conn> = HashMap::new();
    for h in &scenario.hosts {
        let c = host::Conn::open(h, &run_dir).map_err(|detail| EngineError::Host {
            host: h.name.clone(),
            detail,
        })?;
        conns.insert(h.name.clone(), c);
    }
    let sut = scenario.sut().name.clone();
    let jobs = store::jobs(db, run_id).await?;
    let total = jobs.len();
    let todo: Vec<&JobRow> = jobs
        .iter()
        .filter(|j| j.state().needs_run() || j.state() == crate::plan::JobState::Failed)
        .collect();

    let boot_timeout = Duration::from_secs(scenario.boot.timeout_secs);
    let mut i = 0;
    while i < todo.len() {
        let kernel_name = todo[i].kernel.clone();
        let group: Vec<&JobRow> = todo[i..]
            .iter()
            .take_while(|j| j.kernel == kernel_name)
            .copied()
            .collect();
        i += group.len();
        let kernel = scenario
            .kernel(&kernel_name)
            .expect("jobs come from the scenario")
            .clone();
        on_event(Event::KernelBooting {
            kernel: kernel.name.clone(),
        });
        let (log_tx, mut log_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        // A kernel built on a host of the scenario compiles through that host's agent.
        let builder = match &kernel.source {
            KernelSource::Build(BuildSpec { build_on: Some(h), .. }) => match conns.get(h).and_then(|c| c.client()) {
                Some(c) => Ok(Some((h.clone(), c.clone()))),
                None => Err(format!("kernel {}: build host {h} is not reachable", kernel.name)),
            },
            _ => Ok(None),
        };
        let prepared = match builder {
            Err(reason) => Err(reason),
            Ok(builder) => {
                let prep = conns[&sut].prepare(&kernel, cfg, builder, log_tx);
                tokio::pin!(prep);
                loop {
                    tokio::select! {
                        r = &mut prep => break r,
                        Some(line) = log_rx.recv() => on_event(Event::BuildOutput { kernel: kernel.name.clone(), line }),
                    }
                }
            }
        };
        while let Ok(line) = log_rx.try_recv() {
            on_event(Event::BuildOutput {
                kernel: kernel.name.clone(),
                line,
            });
        }
        let prepared = match prepared {
            Ok(p) => p,
            Err(reason) => {
                fail_kernel(db, &group, &kernel.name, reason, on_event).await?;
                continue;
            }
        };
        if let Some(b) = prepared.as_ref().and_then(|p| p.built.as_ref()) {
            store::record_build(db, b, &b.built_on).await?;
            store::link_build(db, &b.key, run_id, &kernel.name).await?;
        }
        let booted = conns
            .get_mut(&sut)
            .expect("sut")
            .boot(&kernel, prepared.as_ref(), cfg, boot_timeout)
            .await;
        let (sut_id, method) = match booted {
            Ok(x) => x,
            Err(reason) => {
                fail_kernel(db, &group, &kernel.name, reason, on_event).await?;
                continue;
            }
        };
        store::record_host(db, run_id, &sut, &sut_id, method.as_str()).await?;
        // Every process of this run carries its owner; nothing of an earlier attempt
        // (a controller killed mid-job) survives into this boot's jobs.
        for h in &scenario.hosts {
            if let Some(c) = conns[&h.name].client() {
                c.set_owner(&owner_of(run, &h.name));
                sweep(c, &h.name, false, on_event).await;
            }
        }
        for h in &scenario.hosts {
            if h.name != sut {
                if let Some(c) = conns[&h.name].client() {
                    if let Ok(id) = c.identity().await {
                        store::record_host(db, run_id, &h.name, &id, "none").await?;
                    }
                }
            }
        }
        on_event(Event::KernelReady {
            kernel: kernel.name.clone(),
            release: sut_id.kernel_release.clone(),
            boot_id: sut_id.boot_id.clone(),
            method: method.as_str(),
        });
        let defaults = sut_id.sched_features.clone().unwrap_or_default();
        let mut versions = tools::Versions::new();
        let mut tool_error = None;
        'install: for t in &scenario.tools {
            for h in &t.on {
                let Some(c) = conns[h].client() else {
                    tool_error = Some(format!("tool {}: host {h} is not connected", t.name));
                    break 'install;
                };
                match tools::install(c, t).await {
                    Ok(v) => {
                        versions.insert(format!("{}@{h}", t.name), v);
                    }
                    Err(e) => {
                        tool_error = Some(format!("tool {} on {h}: {e}", t.name));
                        break 'install;
                    }
                }
            }
        }
        if let Some(reason) = tool_error {
            fail_all(db, &group, &reason, on_event).await?;
            continue;
        }
        let sut_client = conns[&sut].client().expect("booted").clone();
        let schedstat = sut_id.schedstat_version.is_some();
        let schedstats_before = if schedstat {
            schedstats_on(db, run_id, &sut, &sut_client, &sut_id.boot_id, on_event).await?
        } else {
            on_event(Event::Warning {
                message: format!(
                    "kernel {}: {sut} has no /proc/schedstat (CONFIG_SCHEDSTATS off?): its jobs run without scheduler statistics",
                    kernel.name
                ),
            });
            None
        };

        let mut v = 0;
        while v < group.len() {
            let vname = group[v].variant.clone();
            let vjobs: Vec<&JobRow> = group[v..].iter().take_while(|j| j.variant == vname).copied().collect();
            v += vjobs.len();
            let variant = scenario.variant(&vname).expect("jobs come from the scenario").clone();
            if let Err(reason) = job::apply_features(&sut_client, &variant, &defaults).await {
                for j in &vjobs {
                    store::fail_job(db, j.id, &reason).await?;
                    on_event(Event::JobFailed {
                        ordinal: j.ordinal,
                        reason: reason.clone(),
                    });
                }
                let _ = job::restore_features(&sut_client, &variant, &defaults).await;
                continue;
            }
            let mut w = 0;
            while w < vjobs.len() {
                let wname = vjobs[w].workload.clone();
                let wjobs: Vec<&JobRow> = vjobs[w..].iter().take_while(|j| j.workload == wname).copied().collect();
                w += wjobs.len();
                let workload = scenario.workload(&wname).expect("jobs come from the scenario");
                let Some(runner) = conns[&workload.on].client().cloned() else {
                    fail_all(db, &wjobs, &format!("host {} is not connected", workload.on), on_event).await?;
                    continue;
                };
                let session = match workload.kind.server_host() {
                    None => None,
                    Some(host) => {
                        let Some(srv) = conns[host].client().cloned() else {
                            fail_all(db, &wjobs, &format!("host {host} is not connected"), on_event).await?;
                            continue;
                        };
                        match server::open(
                            &workload.kind,
                            &srv,
                            &runner,
                            variant.policy,
                            variant.cpus.clone(),
                            sut_id.nr_cpus,
                        )
                        .await
                        {
                            Ok(s) => s,
                            Err(reason) => {
                                let reason = format!("the server of workload {} on {host}: {reason}", workload.name);
                                fail_all(db, &wjobs, &reason, on_event).await?;
                                continue;
                            }
                        }
                    }
                };
                // The versions of the programs this workload runs, once per boot.
                for (program, host, client) in job::programs(workload, &runner, &conns) {
                    let key = format!("{program}@{host}");
                    if let std::collections::btree_map::Entry::Vacant(slot) = versions.entry(key) {
                        slot.insert(tools::identify(&client, &program).await);
                    }
                }
                let ctx = job::Ctx {
                    sut: &sut_client,
                    sut_id: &sut_id,
                    runner: &runner,
                    session: session.as_ref(),
                    versions: &versions,
                    schedstat,
                };
                for j in wjobs {
                    sweep(&runner, &workload.on, true, on_event).await;
                    if workload.on != sut {
                        sweep(&sut_client, &sut, true, on_event).await;
                    }
                    on_event(Event::JobStarted {
                        ordinal: j.ordinal,
                        total,
                        kernel: j.kernel.clone(),
                        variant: j.variant.clone(),
                        workload: j.workload.clone(),
                        iteration: j.iteration,
                    });
                    store::start_job(db, j.id).await?;
                    match job::run(&ctx, &variant, workload).await {
                        Ok(outcome) => {
                            let mut tx = db.begin().await.map_err(store::StoreError::from)?;
                            store::finish_job(&mut tx, run_id, j.id, &outcome).await?;
                            tx.commit().await.map_err(store::StoreError::from)?;
                            on_event(Event::JobDone {
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
                            let mut tx = db.begin().await.map_err(store::StoreError::from)?;
                            store::store_raw(&mut tx, run_id, j.id, &f.raw).await?;
                            store::fail_job(&mut *tx, j.id, &f.reason).await?;
                            tx.commit().await.map_err(store::StoreError::from)?;
                            let console = conns[&sut].console_tail().filter(|_| f.reason.contains("unreachable"));
                            let reason = match console {
                                Some(c) => format!("{}; console:\n{c}", f.reason),
                                None => f.reason,
                            };
                            on_event(Event::JobFailed {
                                ordinal: j.ordinal,
                                reason,
                            });
                        }
                    }
                }
                if let Some(s) = session {
                    if let Err(e) = s.stop().await {
                        tracing::warn!(workload = %workload.name, error = %e, "could not stop the server");
                    }
                }
            }
            if let Err(reason) = job::restore_features(&sut_client, &variant, &defaults).await {
                tracing::warn!(variant = %variant.name, %reason, "could not restore sched features");
            }
        }
        if let Some(before) = schedstats_before {
            match job::set_schedstats(&sut_client, &before).await {
                Ok(()) => store::setting_restored(db, run_id, &sut, &sut_id.boot_id, job::SCHEDSTATS_SETTING).await?,
                Err(e) => on_event(Event::Warning {
                    message: format!("{sut}: could not put {} back to {before}: {e}", job::SCHEDSTATS_SETTING),
                }),
            }
        }
    }

    let after = store::jobs(db, run_id).await?;
    let done = after
        .iter()
        .filter(|j| j.state() == crate::plan::JobState::Done)
        .count();
    let failed = after.len() - done;
    store::set_run_state(db, run_id, if failed == 0 { "done" } else { "failed" }).await?;
    Ok(Outcome { done, failed })
}
