//! A fleet worker's drive of one slot of a submitted run: the slot's jobs, on the pair of
//! machines its lease holds, every write checked against the lease ([`Lease`]) and every
//! agent request carrying the lease's epoch (the agents are reached under it). The steps
//! are those of `kreg run`; a slot taken over from a worker that lost its lease goes on
//! where it stood, as a resume does.

use sqlx::PgPool;

use super::{drive_jobs, EngineError, Event, Outcome};
use crate::config::Config;
use crate::plan::JobState;
use crate::scenario::{PoolMachine, Role, Scenario};
use crate::store::{self, fleet::Lease};

/// A slot to drive: its lease, and the run's session with the scenario's hosts on the pair.
pub struct Part {
    pub lease: Lease,
    pub session: super::session::Session,
}

/// The run's scenario with its SUT on `sut` and its load generator on `loadgen`: names,
/// roles and tunings stay the scenario's, transports become the machines'.
pub fn on_pair(
    scenario: &Scenario,
    sut: &PoolMachine,
    loadgen: Option<&PoolMachine>,
) -> Result<Scenario, crate::Error> {
    let mut s = scenario.clone();
    for h in &mut s.hosts {
        h.transport = match (h.role, loadgen) {
            (Role::Sut, _) => sut.transport.clone(),
            (Role::Loadgen, Some(l)) => l.transport.clone(),
            (Role::Loadgen, None) => {
                return Err(crate::Error::invalid(format!(
                    "host {} is a load generator and machine {} has none",
                    h.name, sut.name
                )))
            }
        };
    }
    Ok(s)
}

/// Why a scenario cannot be spread over a fleet's pairs, if it cannot.
pub fn fleet_fit(scenario: &Scenario) -> Result<(), crate::Error> {
    let suts = scenario.hosts.iter().filter(|h| h.role == Role::Sut).count();
    let loadgens = scenario.hosts.len() - suts;
    if suts != 1 || loadgens > 1 {
        return Err(crate::Error::invalid(format!(
            "a submitted scenario runs on pairs (one SUT, at most one load generator); this one has {suts} SUT(s) and {loadgens} load generator(s)"
        )));
    }
    if scenario.adaptive() {
        return Err(crate::Error::invalid("an adaptive scenario (iterations: {min, max}) decides its rounds from all its machines at once: run it with `kreg run`, or give fixed iterations"));
    }
    let local = scenario.local_git_sources();
    if !local.is_empty() {
        return Err(crate::Error::invalid(format!(
            "git source(s) {} are paths, not URLs: a worker would read its own host's files for them; give an https://, ssh:// or git:// URL (or user@host:path)",
            local.join(", ")
        )));
    }
    if scenario.bisect.is_some() {
        return Err(crate::Error::invalid(
            "a bisection runs with `kreg bisect`, not from the queue",
        ));
    }
    Ok(())
}

/// Drives the slot's jobs not done yet. Settings an earlier holder of the slot left changed
/// on the machines (in their current boot) are put back first.
pub async fn drive_part(
    db: &PgPool,
    part: &Part,
    cfg: &Config,
    on_event: &mut dyn FnMut(Event),
) -> Result<Outcome, EngineError> {
    let f = part.lease;
    let jobs = store::slot_jobs(db, f.run_id, f.slot).await?;
    // An earlier holder killed after its last job was stored may still have left them.
    if !store::unrestored_settings(db, f.run_id).await?.is_empty() {
        for line in super::restore_settings_on(db, f.run_id, &part.session.scenario, cfg, Some(&f)).await? {
            on_event(Event::Warning {
                message: format!("left by an earlier holder of the slot: {line}"),
            });
        }
    }
    if jobs.iter().all(|j| j.state == JobState::Done) {
        return Ok(Outcome {
            done: jobs.len(),
            failed: 0,
        });
    }
    drive_jobs(
        db,
        &part.session,
        Some(f),
        cfg,
        Default::default(),
        Some(jobs),
        on_event,
    )
    .await
}
