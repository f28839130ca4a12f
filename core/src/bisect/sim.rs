//! The bisector on ranges whose commits are described, not built: each commit's runs drawn
//! from its model (a mean, a run-to-run spread, a boot-to-boot spread, or a failed build),
//! fed to the same [`Bisection`] the real bisector drives. Synthetic ranges (a length,
//! culprits with their effects, spreads, broken commits) and ranges read from a file
//! (`kreg bench bisect --replay`) are both lists of [`CommitModel`]s.

use super::{Ask, Bisection, Outcome, Role, Rules};
use crate::stats::rng::Rng;
use crate::stats::sim::normal;

/// How one commit's measurements are distributed.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommitModel {
    /// The mean of a run.
    pub mean: f64,
    /// The standard deviation of one run about its boot's mean.
    pub sd: f64,
    /// The standard deviation of a boot's mean about the commit's mean.
    #[serde(default)]
    pub boot_sd: f64,
    /// The commit does not build (it is skipped).
    #[serde(default)]
    pub build_fails: bool,
}

/// A synthetic range: `commits` commits around a mean of 100; each culprit (index, relative
/// effect) shifts itself and every later commit; spreads as coefficients of variation.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    pub commits: usize,
    pub culprits: Vec<(usize, f64)>,
    pub cov: f64,
    pub boot_cov: f64,
    pub build_fails: Vec<usize>,
}

impl Synthetic {
    pub fn models(&self) -> Vec<CommitModel> {
        (0..self.commits)
            .map(|i| {
                let shift: f64 = self.culprits.iter().filter(|(c, _)| *c <= i).map(|(_, e)| e).sum();
                let mean = 100.0 * (1.0 + shift);
                CommitModel {
                    mean,
                    sd: mean * self.cov,
                    boot_sd: mean * self.boot_cov,
                    build_fails: self.build_fails.contains(&i),
                }
            })
            .collect()
    }
}

/// One bisection of a described range.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub outcome: Outcome,
    pub boots: usize,
    /// Distinct commits built (a failed build counts).
    pub builds: usize,
}

/// The machine the range is measured on: runs a boot, and how it drifts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineModel {
    /// Runs of the workload in a boot (the boot's value is their mean).
    pub runs: usize,
    /// The relative change of every value from one boot to the next (0.0001: +0.01 % a
    /// boot, compounding): a machine that warms, wears or fills up.
    pub drift: f64,
}

impl MachineModel {
    /// `runs` runs a boot on a machine that does not drift.
    pub fn steady(runs: usize) -> MachineModel {
        MachineModel { runs, drift: 0.0 }
    }
}

/// Bisects `range` on `machine`, drawing every boot from its commit's model.
pub fn trial(range: &[CommitModel], rules: Rules, machine: MachineModel, rng: &mut Rng) -> Trial {
    let mut b = Bisection::new(range.len(), rules);
    let mut booted = 0i32;
    let mut built = vec![false; range.len()];
    let mut built_revert = false;
    loop {
        match b.ask() {
            Ask::Done(outcome) => {
                return Trial {
                    outcome,
                    boots: b.boots(),
                    builds: built.iter().filter(|x| **x).count() + built_revert as usize,
                }
            }
            Ask::Measure { commit, role } => {
                let c = match role {
                    Role::Revert { culprit } => {
                        built_revert = true;
                        reverted(range, culprit)
                    }
                    _ => {
                        built[commit] = true;
                        range[commit].clone()
                    }
                };
                if c.build_fails {
                    b.record(commit, role, Err("the build failed".into()));
                    continue;
                }
                let boot = c.mean + c.boot_sd * normal(rng);
                let runs = machine.runs.max(1);
                let value = (0..runs).map(|_| boot + c.sd * normal(rng)).sum::<f64>() / runs as f64;
                let value = value * (1.0 + machine.drift).powi(booted);
                booted += 1;
                b.record(commit, role, Ok(value));
            }
        }
    }
}

/// The bad end with `culprit` reverted: its change (from its parent) taken off the bad
/// end's mean, the changes being additive.
pub fn reverted(range: &[CommitModel], culprit: usize) -> CommitModel {
    let bad = &range[range.len() - 1];
    let change = range[culprit].mean - range[culprit.saturating_sub(1)].mean;
    CommitModel {
        mean: bad.mean - change,
        build_fails: false,
        ..bad.clone()
    }
}

/// How often each kind of outcome came out of `trials` bisections of a range, with their
/// cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub trials: usize,
    /// The outcome named one commit, and it was `expected`.
    pub exact: usize,
    /// Of the exact ones, those the sandwich and the revert confirmed.
    pub confirmed: usize,
    /// The outcome named one commit, another.
    pub wrong: usize,
    pub does_not_reproduce: usize,
    pub ranges: usize,
    pub ambiguous: usize,
    pub mean_builds: f64,
    pub max_builds: usize,
    pub mean_boots: f64,
    pub max_boots: usize,
}

/// `trials` bisections of `range` from `seed`; `expected` is the true first bad commit
/// (none for a range without a change).
pub fn tally(
    range: &[CommitModel],
    expected: Option<usize>,
    rules: Rules,
    machine: MachineModel,
    trials: usize,
    seed: u64,
) -> Tally {
    let mut rng = Rng::new(seed);
    let mut t = Tally {
        trials,
        ..Tally::default()
    };
    for _ in 0..trials {
        let r = trial(range, rules, machine, &mut rng);
        match r.outcome {
            Outcome::Culprit { commit, confirmation } if Some(commit) == expected => {
                t.exact += 1;
                t.confirmed += confirmation.confirmed as usize;
            }
            Outcome::Culprit { .. } => t.wrong += 1,
            Outcome::DoesNotReproduce { .. } | Outcome::EndpointFailed { .. } => t.does_not_reproduce += 1,
            Outcome::Range { .. } => t.ranges += 1,
            Outcome::Ambiguous { .. } => t.ambiguous += 1,
        }
        t.mean_builds += r.builds as f64 / trials as f64;
        t.max_builds = t.max_builds.max(r.builds);
        t.mean_boots += r.boots as f64 / trials as f64;
        t.max_boots = t.max_boots.max(r.boots);
    }
    t
}
