//! `kreg machines check NAME SCENARIO`: an operator's health check of a machine out of the
//! pool (bad, or drained for maintenance), as LAVA keeps one: the scenario of the
//! operator's choosing — boot the machine's known kernel, the agent answering with the
//! right identity, a short workload — run on the machine (and its load generator) as a slot
//! would run it, recorded as any run. Every job done brings the machine back into the pool;
//! anything else leaves it out, bad, with the check's run and why.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use sqlx::PgPool;

use kreg::config::Config;
use kreg::plan::MachineHealth;
use kreg::store::{self, fleet};

pub async fn check(db: &PgPool, name: &str, file: &Path, cfg: &Config) -> Result<ExitCode> {
    let rows = fleet::machines(db).await?;
    let row = rows
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| anyhow!("no machine is named {name:?} (see `kreg machines list`)"))?;
    match row.health {
        MachineHealth::Good => bail!(
            "{name} is in the pool: drain it first (`kreg machines drain {name}`), so that no worker takes it during its check"
        ),
        MachineHealth::Retired => bail!("{name} is retired: it takes nothing, a health check included"),
        MachineHealth::Bad | MachineHealth::Maintenance => {}
    }
    if row.leased {
        bail!(
            "{name} is still leased by worker {}: its slot ends first",
            row.lease_worker.unwrap_or_default()
        );
    }
    let (_, s) = super::validate::load(file)?;
    let sut = super::worker::pool_machine(row)?;
    let loadgen = match (
        &row.loadgen,
        s.hosts.iter().any(|h| h.role == kreg::scenario::Role::Loadgen),
    ) {
        (Some(l), true) => {
            let l = rows
                .iter()
                .find(|m| &m.name == l)
                .ok_or_else(|| anyhow!("{name}'s load generator {l} is not in the pool"))?;
            Some(super::worker::pool_machine(l)?)
        }
        _ => None,
    };
    let on_machine = kreg::engine::part::on_pair(&s, &sut, loadgen.as_ref()).map_err(|e| anyhow!("{e}"))?;
    println!("{name}: health check with {}", file.display());
    // Under an epoch of its own: the agent a slot fenced answers the check (and refuses the
    // slot's worker, should it come back).
    let cfg = &Config {
        agent_epoch: Some(store::health::new_epoch(db).await? as u64),
        ..cfg.clone()
    };
    let run_id = match super::run::record_and_drive_scenario(file, on_machine, None, &[], cfg).await {
        Ok((id, _)) => id,
        Err(e) => {
            // Not reached, not authenticated, not the machine it should be: it stays out.
            let why = format!(
                "health check failed before any job: {}",
                kreg::text::one_line(&format!("{e:#}"))
            );
            set_health(db, name, MachineHealth::Bad, &why).await?;
            eprintln!("{name}: {why}; it stays out of the pool");
            return Ok(ExitCode::from(3));
        }
    };
    let jobs = store::jobs(db, run_id).await?;
    let done = jobs.iter().filter(|j| j.state == kreg::plan::JobState::Done).count();
    if done == jobs.len() {
        set_health(db, name, MachineHealth::Good, "").await?;
        println!("{name}: health check passed (run {run_id}, {done} jobs done): back in the pool");
        return Ok(ExitCode::SUCCESS);
    }
    let first = jobs
        .iter()
        .find_map(|j| j.error.as_deref())
        .map(|e| kreg::text::one_line(e.lines().next().unwrap_or("")).into_owned())
        .unwrap_or_else(|| "jobs not done".into());
    let why = format!(
        "health check failed (run {run_id}, {} of {} jobs not done): {first}",
        jobs.len() - done,
        jobs.len()
    );
    set_health(db, name, MachineHealth::Bad, &why).await?;
    eprintln!("{name}: {why}; it stays out of the pool");
    Ok(ExitCode::from(3))
}

/// A machine's health set by hand (or by its check), said with what it means.
pub(super) async fn set_health(db: &PgPool, name: &str, to: MachineHealth, reason: &str) -> Result<ExitCode> {
    match kreg::store::health::set_health(db, name, to, reason).await? {
        Ok(was) => {
            let what = match to {
                MachineHealth::Good => "back in the pool",
                MachineHealth::Maintenance => "in maintenance: the slot it runs ends there, it takes nothing new",
                MachineHealth::Retired => "retired: it takes nothing again",
                MachineHealth::Bad => "bad",
            };
            println!("{name} (was {was}) is {what}");
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => bail!("{why}"),
    }
}
