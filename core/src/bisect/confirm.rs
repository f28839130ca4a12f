//! The culprit confirmed twice, in new boots: its parent and the culprit interleaved with
//! the bad end (the sandwich: does the culprit carry the change from its parent?), and the
//! bad end with the culprit reverted on top, interleaved with bad (does the revert undo it?).
//! Each side is read as a position with its interval, as a step is; the culprit is
//! `confirmed` only when both are clear and agree with the endpoints' change.

use super::{look_rounds, position_in_blocks, reference, sides, Logged, Position, Role, Rules, Side};

/// Boots in a round of the confirmation.
const ROUND: usize = 6;

/// What the confirmation found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Confirmation {
    /// The culprit between its parent (0) and the bad end (1): near 1 when it carries the
    /// whole change; or why it could not be measured again.
    pub sandwich: Result<Option<Position>, String>,
    /// The bad end with the culprit reverted, between good (0) and bad (1): near 0 when the
    /// revert undoes the change; or why it could not be built or booted (a conflict, say).
    pub revert: Result<Option<Position>, String>,
    pub confirmed: bool,
}

/// The confirmation's boots so far.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub culprit: usize,
    parent: Vec<f64>,
    again: Vec<f64>,
    reverted: Vec<f64>,
    sandwich_failed: Option<String>,
    revert_failed: Option<String>,
    /// Rounds done, and the boot of this round asked next.
    rounds: usize,
    at: usize,
}

/// Which side a position is clearly on: `Some(true)` above ½, `Some(false)` below.
fn side(p: Option<Position>) -> Option<bool> {
    match p {
        Some(p) if p.lo > 0.5 => Some(true),
        Some(p) if p.hi < 0.5 => Some(false),
        _ => None,
    }
}

impl Confirm {
    pub fn new(culprit: usize) -> Confirm {
        Confirm {
            culprit,
            parent: Vec::new(),
            again: Vec::new(),
            reverted: Vec::new(),
            sandwich_failed: None,
            revert_failed: None,
            rounds: 0,
            at: 0,
        }
    }

    /// The role of the round's `at`-th boot (parent, culprit, bad, revert, culprit, parent:
    /// the sandwich's two sides in both orders), skipping the sides that failed.
    fn role_at(&self, at: usize) -> Option<Role> {
        let sandwich = self.sandwich_failed.is_none();
        match at {
            0 | 5 if sandwich => Some(Role::Parent),
            1 | 4 if sandwich => Some(Role::Culprit),
            2 => Some(Role::Reference),
            3 if self.revert_failed.is_none() => Some(Role::Revert { culprit: self.culprit }),
            _ => None,
        }
    }

    /// The round being measured.
    pub fn round(&self) -> usize {
        self.rounds
    }

    /// Boots of the parent, the culprit and the reverted bad end measured so far.
    pub fn boots(&self) -> usize {
        self.parent.len() + self.again.len() + self.reverted.len()
    }

    pub fn record(&mut self, role: Role, value: Result<f64, String>) {
        match (role, value) {
            (Role::Parent, Ok(v)) => self.parent.push(v),
            (Role::Culprit, Ok(v)) => self.again.push(v),
            (Role::Revert { .. }, Ok(v)) => self.reverted.push(v),
            (Role::Parent | Role::Culprit, Err(e)) => self.sandwich_failed = Some(e),
            (Role::Revert { .. }, Err(e)) => self.revert_failed = Some(e),
            _ => {}
        }
        self.at += 1;
    }

    /// The next boot (the commit and why), or the confirmation once both sides are clear
    /// or the cap is reached; `log` is every boot of the bisection, in its blocks.
    pub fn ask(&mut self, log: &[Logged], last: usize, rules: &Rules) -> Result<(usize, Role), Confirmation> {
        loop {
            while self.at < ROUND {
                if let Some(role) = self.role_at(self.at) {
                    let commit = match role {
                        Role::Parent => self.culprit - 1,
                        Role::Culprit => self.culprit,
                        _ => last,
                    };
                    return Ok((commit, role));
                }
                self.at += 1;
            }
            self.rounds += 1;
            self.at = 0;
            let looks = look_rounds(rules.step_rounds);
            if !looks.contains(&self.rounds) {
                continue;
            }
            let alpha = rules.step_alpha / looks.len() as f64;
            let sandwich = position_in_blocks(
                &sides(log, |b| match b.role {
                    Role::Parent => Some(Side::Zero),
                    Role::Culprit => Some(Side::Step),
                    _ => reference(b, last).filter(|s| *s == Side::One),
                }),
                alpha,
            );
            let revert = position_in_blocks(
                &sides(log, |b| match b.role {
                    Role::Revert { .. } => Some(Side::Step),
                    _ => reference(b, last),
                }),
                alpha,
            );
            let carried = self.sandwich_failed.as_ref().map_or(side(sandwich), |_| Some(false));
            let undone = self
                .revert_failed
                .as_ref()
                .map_or(side(revert).map(|s| !s), |_| Some(false));
            if (carried.is_some() && undone.is_some()) || self.rounds >= rules.step_rounds.1 {
                return Err(Confirmation {
                    sandwich: self.sandwich_failed.clone().map_or(Ok(sandwich), Err),
                    revert: self.revert_failed.clone().map_or(Ok(revert), Err),
                    confirmed: carried == Some(true) && undone == Some(true),
                });
            }
        }
    }
}
