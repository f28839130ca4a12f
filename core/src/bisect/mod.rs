//! Metric bisection's decisions, without I/O: a [`Bisection`] says what to measure next
//! ([`Ask`]: a boot of which commit, and why) and takes each boot's value back, until it
//! can say where the change came from ([`Outcome`]). The real bisector (builds, boots,
//! workloads) and the simulator (`kreg bench bisect`) drive this same code.
//!
//! - **Endpoints first.** Good and bad are booted in turn (good, bad, good, bad …) until
//!   their boots differ (Welch's test on the boots' values at `alpha`, spent evenly over the
//!   looks of [`look_rounds`], and a change of at least `min_effect`), or the cap is reached: then the change
//!   does not reproduce, and nothing else is built.
//! - **A step's position.** A tested commit's boots are interleaved with new boots of the
//!   references (step, good, step, bad per round), and its position on the good→bad scale
//!   (0 like good, 1 like bad) is estimated with Fieller's interval for the ratio
//!   (step − good) / (bad − good), a boot being the unit, the three compared within the
//!   blocks of boots asked together (an endpoints' pair, a round) so that a machine that
//!   drifts between them moves nothing ([`position_in_blocks`]). The commit is `good` when the interval lies below ½,
//!   `bad` when above; more rounds while it straddles ½ (looked at after rounds growing by
//!   about a third, [`look_rounds`]), and `ambiguous` at the cap.
//! - **The search** is `git bisect`'s: the commit nearest the middle of what is left; a
//!   commit that cannot be built or booted is skipped, and when skips leave several
//!   candidates the outcome is that range, never a guess.

mod confirm;
mod position;
mod replay;
pub mod report;
mod search;
pub mod sim;
mod spec;
mod split;

use crate::failure::Failed;
use crate::stats::welch;
use confirm::Confirm;
pub use confirm::Confirmation;
pub use position::{position, position_in_blocks, Boot, Position, Side};
pub use replay::Stored;
pub use search::{Mark, Next, Search};
pub use spec::{metric_of, Spec};
pub use split::Part;
use split::Split;

/// How a bisection decides.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rules {
    /// The endpoints' test: the false alarm allowed over all its looks.
    pub alpha: f64,
    /// The smallest relative change between the endpoints that counts (0.02: 2 %).
    pub min_effect: f64,
    /// Boots of each endpoint before the first look, and at most.
    pub endpoint_boots: (usize, usize),
    /// Rounds (step, good, step, bad) a commit gets before its first look, and at most.
    pub step_rounds: (usize, usize),
    /// The chance allowed over all looks at one commit that its interval misses.
    pub step_alpha: f64,
    /// Boots a measurement is given before its failure counts: a boot that gives no value
    /// (the kernel does not come up, panics, the agent goes silent) is tried again on a
    /// fresh boot; a build that fails is not. Bisections stored before this rule ran with 1.
    #[serde(default = "one_try")]
    pub boot_tries: usize,
}

fn one_try() -> usize {
    1
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            alpha: 0.01,
            min_effect: 0.01,
            endpoint_boots: (3, 12),
            step_rounds: (2, 20),
            step_alpha: 0.01,
            boot_tries: 3,
        }
    }
}

/// Why a boot is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Role {
    /// An endpoint, at the start.
    Endpoint,
    /// The commit under test.
    Step,
    /// A boot of an endpoint interleaved with a step's or the confirmation's.
    Reference,
    /// The culprit's parent, measured again beside it (the sandwich).
    Parent,
    /// The culprit, measured again beside its parent.
    Culprit,
    /// The bad end with `culprit` reverted on top (the commit asked is the bad end).
    Revert { culprit: usize },
}

impl Role {
    /// Its name as stored: endpoint, step, reference, parent, culprit or revert.
    pub fn name(&self) -> &'static str {
        match self {
            Role::Endpoint => "endpoint",
            Role::Step => "step",
            Role::Reference => "reference",
            Role::Parent => "parent",
            Role::Culprit => "culprit",
            Role::Revert { .. } => "revert",
        }
    }

    /// The role a stored name (and, for a revert, the commit reverted) stands for.
    pub fn parse(name: &str, reverted: Option<usize>) -> Option<Role> {
        Some(match (name, reverted) {
            ("endpoint", _) => Role::Endpoint,
            ("step", _) => Role::Step,
            ("reference", _) => Role::Reference,
            ("parent", _) => Role::Parent,
            ("culprit", _) => Role::Culprit,
            ("revert", Some(culprit)) => Role::Revert { culprit },
            _ => return None,
        })
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// Boot `commit` (an index into the range: 0 is good, the last is bad) and measure it.
    Measure {
        commit: usize,
        role: Role,
    },
    Done(Outcome),
}

/// Where the bisection ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// An endpoint could not be built or booted: nothing to bisect (the reason).
    EndpointFailed { commit: usize, reason: String },
    /// The endpoints did not differ: their boots' means and the test's p.
    DoesNotReproduce { good: f64, bad: f64, p: f64 },
    /// The first commit that behaves like bad, and whether the sandwich and the revert
    /// confirm it.
    Culprit { commit: usize, confirmation: Confirmation },
    /// The first bad commit is one of these (skipped commits left no way to tell).
    Range { first: usize, last: usize },
    /// A commit between the last good and the first bad one sits between them (two
    /// culprits, or a change that only some boots show): its position, and the candidates.
    Ambiguous {
        commit: usize,
        position: Option<Position>,
        first: usize,
        last: usize,
    },
    /// Two changes: a commit between the last good and the first bad one sits clearly
    /// between them (`position`, the first change's share of the whole), and each side was
    /// bisected apart: `first` from good to it, `second` from it to bad.
    TwoChanges {
        middle: usize,
        position: Position,
        first: Part,
        second: Part,
    },
}

/// A tested commit and what was decided of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    pub commit: usize,
    pub mark: Mark,
    /// Its position with its interval (none for a skip).
    pub position: Option<Position>,
    pub boots: usize,
    /// Its boots that gave no value and were tried again.
    #[serde(default)]
    pub failed_boots: usize,
}

/// A bisection over `n` commits (0 is good, `n - 1` bad), fed one boot's value at a time.
#[derive(Debug, Clone)]
pub struct Bisection {
    rules: Rules,
    search: Search,
    /// Every boot's value, by commit.
    values: Vec<Vec<f64>>,
    /// Every boot measured, in order: its commit, role and block.
    log: Vec<Logged>,
    /// The block being filled, and what it is (the phase, the commit, the round).
    block: (usize, Option<(u8, usize, usize)>),
    /// The commit under test, with the rounds it was given and the boots of this round
    /// asked so far (0..4: step, good, step, bad).
    current: Option<(usize, usize, usize)>,
    reproduced: bool,
    /// An endpoint that could not be built or booted, with why.
    failed: Option<(usize, String)>,
    steps: Vec<Step>,
    /// Looks taken at the endpoints.
    looks: usize,
    /// The culprit being confirmed.
    confirm: Option<Confirm>,
    /// The boot asked again after one that gave no value: its commit, role and the boots
    /// of it that failed so far.
    retry: Option<(usize, Role, usize)>,
    /// Boots that gave no value and were tried again, by commit.
    failed_boots: Vec<usize>,
    /// The two sides being bisected, once a commit was found in the middle.
    split: Option<Split>,
}

impl Bisection {
    pub fn new(n: usize, rules: Rules) -> Bisection {
        assert!(n >= 2, "a range has a good and a bad end");
        Bisection {
            rules,
            search: Search::new(n),
            values: vec![Vec::new(); n],
            log: Vec::new(),
            block: (0, None),
            current: None,
            reproduced: false,
            failed: None,
            steps: Vec::new(),
            looks: 0,
            confirm: None,
            retry: None,
            failed_boots: vec![0; n],
            split: None,
        }
    }

    fn last(&self) -> usize {
        self.values.len() - 1
    }

    /// The commits decided so far, in the order they were tested.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Every boot's value of `commit`.
    pub fn values(&self, commit: usize) -> &[f64] {
        &self.values[commit]
    }

    /// The first and last commit that may still be the first bad one.
    pub fn candidates(&self) -> (usize, usize) {
        self.search.candidates()
    }

    /// Whether the endpoints were told apart (the search has begun).
    pub fn reproduced(&self) -> bool {
        self.reproduced
    }

    /// What was decided since a look at `seen` (steps decided then, and whether the
    /// endpoints were told apart), as lines a person follows the bisection by: each new
    /// step's mark with its position's interval, the candidates left, and `next`, the
    /// answer of [`Bisection::ask`] that follows.
    pub fn decisions_since(&self, seen: (usize, bool), next: &Ask, hash: &dyn Fn(usize) -> String) -> Vec<String> {
        let mut out = Vec::new();
        if self.reproduced && !seen.1 {
            let (g, b) = (self.values(0), self.values(self.last()));
            out.push(format!(
                "decided: the endpoints differ (good {:.6} over {} boots, bad {:.6} over {}): bisecting",
                mean(g),
                g.len(),
                mean(b),
                b.len()
            ));
        }
        for s in self.steps.iter().skip(seen.0) {
            let at = match &s.position {
                Some(p) => format!(
                    ", position {:.2} [{:.2}, {:.2}] (0 good, 1 bad)",
                    p.estimate, p.lo, p.hi
                ),
                None => String::new(),
            };
            let failed = match s.failed_boots {
                0 => String::new(),
                n => format!(" ({n} more gave no value and were tried again)"),
            };
            out.push(format!(
                "decided: commit {} ({}) {} after {} boot(s){failed}{at}",
                s.commit,
                hash(s.commit),
                format!("{:?}", s.mark).to_lowercase(),
                s.boots
            ));
        }
        if out.is_empty() {
            return out;
        }
        let (first, last) = self.candidates();
        let left = format!("first bad commit: one of {first}..{last} ({} left)", last + 1 - first);
        out.push(match next {
            Ask::Measure { commit, role } => {
                format!("{left}; next: commit {commit} ({}) as {}", hash(*commit), role.name())
            }
            Ask::Done(_) => format!("{left}; the bisection ends"),
        });
        out
    }

    /// Boots measured in all.
    pub fn boots(&self) -> usize {
        self.values.iter().map(Vec::len).sum::<usize>() + self.confirm.as_ref().map_or(0, Confirm::boots)
    }

    /// Boots of `commit` that gave no value and were tried again.
    pub fn failed_boots(&self, commit: usize) -> usize {
        self.failed_boots[commit]
    }

    /// A boot's value (`Ok`), or why it gave none (`Err`). A failure other than a build's is
    /// tried again on a fresh boot (the same commit and role is asked next) until
    /// [`Rules::boot_tries`] boots failed in a row; then, or at once for a build, the commit
    /// is skipped (an endpoint's failure ends the bisection, see [`Outcome::EndpointFailed`]).
    pub fn record(&mut self, commit: usize, role: Role, value: Result<f64, Failed>) {
        let failed_before = match self.retry.take() {
            Some((c, r, n)) if c == commit && r == role => n,
            _ => 0,
        };
        let value = match value {
            Ok(v) => Ok(v),
            Err(f) if f.class.boots_again() && failed_before + 1 < self.rules.boot_tries => {
                self.failed_boots[commit] += 1;
                self.retry = Some((commit, role, failed_before + 1));
                return;
            }
            Err(f) if f.class.boots_again() && self.rules.boot_tries > 1 => {
                let what = match f.class {
                    crate::failure::FailureClass::Workload => "no value",
                    _ => "never booted",
                };
                Err(format!("{what} in {} tries: {}", self.rules.boot_tries, f.reason))
            }
            Err(f) => Err(f.reason),
        };
        self.record_counted(commit, role, value);
    }

    /// A boot's value or a failure that counts (its tries spent).
    fn record_counted(&mut self, commit: usize, role: Role, value: Result<f64, String>) {
        if let Ok(v) = value {
            self.log_boot(commit, role, v);
        }
        if let Some(c) = self.confirm.as_mut() {
            match (role, value) {
                (Role::Reference, Ok(v)) => {
                    self.values[commit].push(v);
                    c.record(role, Ok(v));
                }
                (role, value) => c.record(role, value),
            }
            return;
        }
        match value {
            Ok(v) => {
                self.values[commit].push(v);
                self.next_in_round();
            }
            Err(reason) if commit == 0 || commit == self.last() => self.failed = Some((commit, reason)),
            // A split's middle commit, beside a step as a reference, never booted: the round
            // goes on without that boot (the middle has its boots as a step already).
            Err(_) if role == Role::Reference => {
                self.next_in_round();
            }
            Err(_) => {
                self.search.mark(commit, Mark::Skip);
                self.steps.push(Step {
                    commit,
                    mark: Mark::Skip,
                    position: None,
                    boots: self.values[commit].len(),
                    failed_boots: self.failed_boots[commit],
                });
                self.current = None;
            }
        }
    }

    /// The round of the commit under test moves on to its next boot (step, good, step, bad).
    fn next_in_round(&mut self) {
        if let Some((c, rounds, at)) = self.current {
            let at = at + 1;
            self.current = Some(if at == 4 { (c, rounds + 1, 0) } else { (c, rounds, at) });
        }
    }

    /// Logs a measured boot in the block it was asked in: an endpoints' pair, a step's round
    /// or a round of the confirmation (before the boot moves the state on).
    fn log_boot(&mut self, commit: usize, role: Role, value: f64) {
        let key = match (&self.confirm, self.current) {
            (Some(c), _) => (2, c.culprit, c.round()),
            (None, Some((c, rounds, _))) => (1, c, rounds),
            (None, None) => (0, 0, self.values[self.last()].len()),
        };
        if self.block.1 != Some(key) {
            self.block = (self.block.0 + 1, Some(key));
        }
        self.log.push(Logged {
            commit,
            role,
            block: self.block.0,
            value,
        });
    }

    /// What to measure next, or the outcome.
    pub fn ask(&mut self) -> Ask {
        if let Some((commit, role, _)) = self.retry {
            return Ask::Measure { commit, role };
        }
        if let Some((commit, reason)) = self.failed.clone() {
            return Ask::Done(Outcome::EndpointFailed { commit, reason });
        }
        if !self.reproduced {
            if let Some(ask) = self.endpoints() {
                return ask;
            }
        }
        loop {
            if let Some(c) = self.confirm.as_mut() {
                let last = self.values.len() - 1;
                return match c.ask(&self.log, last, &self.rules) {
                    Ok((commit, role)) => Ask::Measure { commit, role },
                    Err(confirmation) => Ask::Done(Outcome::Culprit {
                        commit: c.culprit,
                        confirmation,
                    }),
                };
            }
            if let Some((commit, rounds, at)) = self.current {
                if at != 0 || rounds < self.rules.step_rounds.0 {
                    return self.round_boot(commit, at);
                }
                match self.decide(commit, rounds) {
                    Some(Mark::Ambiguous) => {
                        // Never guessed: the search stops at a commit it cannot place.
                        let position = self.steps.last().and_then(|s| s.position);
                        let (first, last) = self.search.candidates();
                        self.current = None;
                        let part = Part::Ambiguous {
                            commit,
                            position,
                            first,
                            last,
                        };
                        match self.part_found(part) {
                            Some(done) => return done,
                            None => continue,
                        }
                    }
                    Some(Mark::Middle) => {
                        let position = self.steps.last().and_then(|s| s.position).expect("placed");
                        let (split, left) = Split::new(commit, position, &self.search);
                        self.split = Some(split);
                        self.search = left;
                        self.current = None;
                    }
                    Some(mark) => {
                        self.search.mark(commit, mark);
                        self.current = None;
                    }
                    None => return self.round_boot(commit, 0),
                }
            }
            let found = match self.search.next() {
                Next::Test(c) => {
                    self.current = Some((c, 0, 0));
                    continue;
                }
                Next::Culprit(commit) if self.split.is_some() => Part::Culprit { commit },
                Next::Culprit(c) => {
                    self.confirm = Some(Confirm::new(c));
                    continue;
                }
                Next::Range { first, last } => Part::Range { first, last },
            };
            if let Some(done) = self.part_found(found) {
                return done;
            }
        }
    }

    /// The commits a step is placed between: good and bad, or the ends of the split's
    /// side being bisected.
    fn ends(&self) -> (usize, usize) {
        self.split.as_ref().map_or((0, self.last()), |s| s.ends(self.last()))
    }

    /// The `at`-th boot of a round: step, good, step, bad (or a split side's two ends).
    fn round_boot(&self, commit: usize, at: usize) -> Ask {
        let (zero, one) = self.ends();
        let (commit, role) = match at {
            0 | 2 => (commit, Role::Step),
            1 => (zero, Role::Reference),
            _ => (one, Role::Reference),
        };
        Ask::Measure { commit, role }
    }

    /// The endpoints' next boot, or their outcome; `None` once they differ.
    fn endpoints(&mut self) -> Option<Ask> {
        let (first, cap) = self.rules.endpoint_boots;
        let (g, b) = (self.values[0].len(), self.values[self.last()].len());
        let ask = |commit| {
            Some(Ask::Measure {
                commit,
                role: Role::Endpoint,
            })
        };
        // Interleaved: good, bad, good, bad …, a look when both have the boots
        // `look_rounds` names (alpha spent evenly over those looks).
        if b < g {
            return ask(self.last());
        }
        let looks = look_rounds((first, cap));
        if g < first || !looks.contains(&g) {
            return ask(0);
        }
        self.looks += 1;
        let looks = looks.len();
        let (good, bad) = (&self.values[0], &self.values[self.last()]);
        let p = welch(good, bad).map_or(1.0, |(_, _, p)| p);
        let (mg, mb) = (mean(good), mean(bad));
        let change = (mb - mg) / mg.abs();
        if p < self.rules.alpha / looks as f64 && change.abs() >= self.rules.min_effect {
            self.reproduced = true;
            return None;
        }
        if g >= cap {
            return Some(Ask::Done(Outcome::DoesNotReproduce { good: mg, bad: mb, p }));
        }
        ask(0)
    }

    /// A commit's mark after `rounds` rounds, or `None` for another round.
    fn decide(&mut self, commit: usize, rounds: usize) -> Option<Mark> {
        let (first, cap) = self.rules.step_rounds;
        // A split's side tells apart half the change or less: up to SIDE_ROUNDS times the
        // rounds (a quarter of the variance takes four times the boots).
        let cap = match self.split {
            Some(_) => cap * split::SIDE_ROUNDS,
            None => cap,
        };
        let looks = look_rounds((first, cap));
        if !looks.contains(&rounds) {
            return None;
        }
        let alpha = self.rules.step_alpha / looks.len() as f64;
        let (zero, one) = self.ends();
        let boots = sides(&self.log, |b| match (b.role, b.commit) {
            (Role::Step, c) if c == commit => Some(Side::Step),
            // A split's middle commit is a reference by its boots as a step too.
            (Role::Endpoint | Role::Reference | Role::Step, c) if c == zero => Some(Side::Zero),
            (Role::Endpoint | Role::Reference | Role::Step, c) if c == one => Some(Side::One),
            _ => None,
        });
        let pos = position_in_blocks(&boots, alpha);
        let mark = match pos {
            Some(p) if self.split.is_none() && split::is_middle(&p, rounds >= cap) => Mark::Middle,
            Some(p) if p.hi < 0.5 => Mark::Good,
            Some(p) if p.lo > 0.5 => Mark::Bad,
            _ if rounds >= cap => Mark::Ambiguous,
            _ => return None,
        };
        self.steps.push(Step {
            commit,
            mark,
            position: pos,
            boots: self.values[commit].len(),
            failed_boots: self.failed_boots[commit],
        });
        Some(mark)
    }
}

/// A measured boot as the bisection keeps it.
#[derive(Debug, Clone, Copy)]
pub struct Logged {
    pub commit: usize,
    pub role: Role,
    pub block: usize,
    pub value: f64,
}

/// The boots of `log` that `side` places, with their blocks.
fn sides(log: &[Logged], side: impl Fn(&Logged) -> Option<Side>) -> Vec<Boot> {
    log.iter()
        .enumerate()
        .filter_map(|(at, b)| {
            side(b).map(|s| Boot {
                block: b.block,
                at: at as f64,
                side: s,
                value: b.value,
            })
        })
        .collect()
}

/// Good (0) and bad (the `last` commit) as references: their boots as endpoints or beside
/// a step (a revert's boot is of the bad end's commit, and is not bad's).
fn reference(b: &Logged, last: usize) -> Option<Side> {
    match (b.role, b.commit) {
        (Role::Endpoint | Role::Reference, 0) => Some(Side::Zero),
        (Role::Endpoint | Role::Reference, c) if c == last => Some(Side::One),
        _ => None,
    }
}

/// The rounds after which a commit is looked at, from `first` to `cap`: each about a third
/// more than the one before, so that few looks share the error allowed and a clear commit is
/// still decided early.
pub fn look_rounds((first, cap): (usize, usize)) -> Vec<usize> {
    let mut out = vec![first.max(1)];
    while *out.last().expect("one") < cap {
        let r = *out.last().expect("one");
        out.push((r + 1).max((r * 4).div_ceil(3)).min(cap));
    }
    out
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_two;
