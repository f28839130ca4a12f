//! The bisector on ranges whose commits are described, not built: each commit's runs drawn
//! from its model (a mean, a run-to-run spread and its shape, a boot-to-boot spread, boots
//! that fail, or a failed build) on a machine that may drift and fail boots of its own,
//! fed to the same [`Bisection`] the real bisector drives. Synthetic ranges (a length,
//! culprits with their effects, spreads, broken commits) and ranges read from a file
//! (`kreg bench bisect --replay`) are both lists of [`CommitModel`]s.

use super::{Ask, Bisection, Outcome, Role, Rules};
use crate::failure::{Failed, FailureClass};
use crate::stats::rng::Rng;
use crate::stats::sim::{lognormal, normal};

/// The shape of a commit's runs about their boot's mean. Read through [`DistFields`], so
/// that a key no kind takes is refused whatever the kind (serde lets a unit variant of a
/// tagged enum take any key).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Deserialize, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "DistFields")]
pub enum Dist {
    /// Normal, with the model's `sd`.
    #[default]
    Normal,
    /// Lognormal (a long right tail) with the model's mean and `sd`.
    Lognormal,
    /// Two modes: a run lands in the upper one, `gap` (relative) above the model's mean,
    /// with chance `share`; each mode normal with the model's `sd`.
    Bimodal { share: f64, gap: f64 },
}

/// A `dist` as written: its kind, and the keys only `bimodal` takes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistFields {
    kind: DistKind,
    share: Option<f64>,
    gap: Option<f64>,
}

#[derive(Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum DistKind {
    Normal,
    Lognormal,
    Bimodal,
}

impl TryFrom<DistFields> for Dist {
    type Error = String;

    fn try_from(f: DistFields) -> Result<Dist, String> {
        match (f.kind, f.share, f.gap) {
            (DistKind::Bimodal, Some(share), Some(gap)) if (0.0..=1.0).contains(&share) => {
                Ok(Dist::Bimodal { share, gap })
            }
            (DistKind::Bimodal, Some(share), Some(_)) => Err(format!("dist: share {share} is not between 0 and 1")),
            (DistKind::Bimodal, ..) => Err("dist: kind bimodal needs `share` and `gap`".into()),
            (DistKind::Normal, None, None) => Ok(Dist::Normal),
            (DistKind::Lognormal, None, None) => Ok(Dist::Lognormal),
            _ => Err("dist: `share` and `gap` go with kind bimodal".into()),
        }
    }
}

impl Dist {
    /// One run about `centre` with spread `sd`.
    fn draw(self, rng: &mut Rng, centre: f64, sd: f64) -> f64 {
        match self {
            Dist::Normal => centre + sd * normal(rng),
            Dist::Lognormal if centre > 0.0 => lognormal(rng, centre, sd / centre),
            Dist::Lognormal => centre + sd * normal(rng),
            Dist::Bimodal { share, gap } => {
                let mode = if rng.uniform() < share {
                    centre * (1.0 + gap)
                } else {
                    centre
                };
                mode + sd * normal(rng)
            }
        }
    }
}

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
    /// The chance that a boot of it gives no value (it panics, hangs, loses its agent);
    /// 1 for a commit that never boots.
    #[serde(default)]
    pub boot_fails: f64,
    /// The shape of its runs.
    #[serde(default)]
    pub dist: Dist,
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
                    boot_fails: 0.0,
                    dist: Dist::Normal,
                }
            })
            .collect()
    }
}

/// One bisection of a described range.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub outcome: Outcome,
    /// Boots in all, those that failed included.
    pub boots: usize,
    /// Boots that gave no value.
    pub failed_boots: usize,
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
    /// The chance that any boot fails for the machine's own reasons.
    pub boot_fails: f64,
}

impl MachineModel {
    /// `runs` runs a boot on a machine that does not drift.
    pub fn steady(runs: usize) -> MachineModel {
        MachineModel {
            runs,
            drift: 0.0,
            boot_fails: 0.0,
        }
    }
}

/// Bisects `range` on `machine`, drawing every boot from its commit's model.
pub fn trial(range: &[CommitModel], rules: Rules, machine: MachineModel, rng: &mut Rng) -> Trial {
    let mut b = Bisection::new(range.len(), rules);
    let mut booted = 0i32;
    let mut failed_boots = 0;
    let mut built = vec![false; range.len()];
    let mut built_revert = false;
    loop {
        let (commit, role) = match b.ask() {
            Ask::Done(outcome) => {
                return Trial {
                    outcome,
                    boots: b.boots() + failed_boots,
                    failed_boots,
                    builds: built.iter().filter(|x| **x).count() + built_revert as usize,
                }
            }
            Ask::Measure { commit, role } => (commit, role),
        };
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
            b.record(commit, role, Err(Failed::new(FailureClass::Build, "the build failed")));
            continue;
        }
        // The machine drifts with every boot, one that fails included.
        let drift = (1.0 + machine.drift).powi(booted);
        booted += 1;
        if rng.uniform() < machine.boot_fails {
            failed_boots += 1;
            b.record(
                commit,
                role,
                Err(Failed::new(FailureClass::Infrastructure, "the boot failed")),
            );
            continue;
        }
        if rng.uniform() < c.boot_fails {
            failed_boots += 1;
            b.record(
                commit,
                role,
                Err(Failed::new(FailureClass::Kernel, "the kernel panicked")),
            );
            continue;
        }
        let boot = c.mean + c.boot_sd * normal(rng);
        let runs = machine.runs.max(1);
        let value = (0..runs).map(|_| c.dist.draw(rng, boot, c.sd)).sum::<f64>() / runs as f64;
        b.record(commit, role, Ok(value * drift));
    }
}

/// An outcome counted in `t` against the `expected` culprits.
fn count(t: &mut Tally, outcome: &Outcome, expected: &[usize]) {
    let named: Vec<usize> = match outcome {
        Outcome::Culprit { commit, .. } => vec![*commit],
        Outcome::TwoChanges { first, second, .. } => first.culprit().into_iter().chain(second.culprit()).collect(),
        _ => Vec::new(),
    };
    match outcome {
        _ if named.iter().any(|c| !expected.contains(c)) => t.wrong += 1,
        Outcome::Culprit { confirmation, .. } if expected.len() == 1 => {
            t.exact += 1;
            t.confirmed += confirmation.confirmed as usize;
        }
        Outcome::TwoChanges { .. } if expected.len() == 2 && named == expected => t.two_named += 1,
        Outcome::Culprit { .. } | Outcome::TwoChanges { .. } if !named.is_empty() => t.partly += 1,
        // Two changes, neither side naming a commit: nothing was pinned.
        Outcome::Culprit { .. } | Outcome::TwoChanges { .. } => t.ambiguous += 1,
        Outcome::DoesNotReproduce { .. } => t.does_not_reproduce += 1,
        Outcome::EndpointFailed { .. } => t.endpoint_failed += 1,
        Outcome::Range { .. } => t.ranges += 1,
        Outcome::Ambiguous { .. } => t.ambiguous += 1,
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
        boot_fails: bad.boot_fails,
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
    /// Two changes expected, and the outcome named both.
    pub two_named: usize,
    /// The outcome named a commit that is not a culprit.
    pub wrong: usize,
    /// The outcome named some culprits, none wrongly, but not all of them, or two changes
    /// where one was expected.
    pub partly: usize,
    pub does_not_reproduce: usize,
    /// An endpoint could not be built or never booted.
    pub endpoint_failed: usize,
    pub ranges: usize,
    pub ambiguous: usize,
    pub mean_builds: f64,
    pub max_builds: usize,
    pub mean_boots: f64,
    pub max_boots: usize,
    pub mean_failed_boots: f64,
}

/// `trials` bisections of `range` from `seed`; `expected` are the culprits, in order (none
/// for a range without a change).
pub fn tally(
    range: &[CommitModel],
    expected: &[usize],
    rules: Rules,
    machine: MachineModel,
    trials: usize,
    seed: u64,
) -> Tally {
    tally_each(range, expected, rules, machine, (trials, seed), &mut |_, _| {})
}

/// [`tally`], each trial handed to `each` with its number as it ends.
pub fn tally_each(
    range: &[CommitModel],
    expected: &[usize],
    rules: Rules,
    machine: MachineModel,
    (trials, seed): (usize, u64),
    each: &mut dyn FnMut(usize, &Trial),
) -> Tally {
    let mut rng = Rng::new(seed);
    let mut t = Tally {
        trials,
        ..Tally::default()
    };
    for i in 0..trials {
        let r = trial(range, rules, machine, &mut rng);
        each(i, &r);
        count(&mut t, &r.outcome, expected);
        let share = 1.0 / trials as f64;
        t.mean_builds += r.builds as f64 * share;
        t.max_builds = t.max_builds.max(r.builds);
        t.mean_boots += r.boots as f64 * share;
        t.max_boots = t.max_boots.max(r.boots);
        t.mean_failed_boots += r.failed_boots as f64 * share;
    }
    t
}
