//! Two changes in one range. A tested commit whose position is clearly neither good's nor
//! bad's (its interval clear of both 0 and 1, by a tenth each) sits after one change and
//! before another: the range is split there and each side bisected in turn, from good to
//! the middle commit and from the middle commit to bad (the whole range's ends: a commit
//! marked good or bad before the split was told from ½, not from the side's level), a step of a side
//! placed between the side's ends (good and the middle commit, then the middle commit and
//! bad), each booted beside it as good and bad are beside a step. The outcome names a commit, a range or an ambiguous
//! commit for each side, with the share of the whole change each side carries.

use super::{position_in_blocks, reference, sides, Ask, Bisection, Mark, Outcome, Position, Search, Side};

/// How far from 0 and 1 a middle commit's interval must stay: each change at least a
/// tenth of the whole.
pub const MARGIN: f64 = 0.1;

/// How many times a step's rounds a step of a side is given at most.
pub const SIDE_ROUNDS: usize = 4;

/// Whether a position says its commit is in the middle: clear of both ends by the margin,
/// or, at the cap (`last`) where it can be decided no other way, clear of both at all.
pub fn is_middle(p: &Position, last: bool) -> bool {
    let margin = if last { 0.0 } else { MARGIN };
    p.lo > margin && p.hi < 1.0 - margin
}

/// What one side of a split found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Part {
    /// The side's first commit like its far end.
    Culprit { commit: usize },
    /// It is one of these (skipped commits left no way to tell).
    Range { first: usize, last: usize },
    /// A commit of the side could not be placed on either side of the halfway level.
    Ambiguous {
        commit: usize,
        position: Option<Position>,
        first: usize,
        last: usize,
    },
}

impl Part {
    /// The commit it names, when it names one.
    pub fn culprit(&self) -> Option<usize> {
        match self {
            Part::Culprit { commit } => Some(*commit),
            _ => None,
        }
    }
}

/// A split being bisected.
#[derive(Debug, Clone)]
pub struct Split {
    pub middle: usize,
    pub position: Position,
    /// The range's bad end (the second side's far end).
    bad: usize,
    /// The marks when the split was made (each side keeps their skips).
    marks: Vec<Option<Mark>>,
    /// What the first side found, once it has.
    first: Option<Part>,
}

impl Split {
    /// A split at `middle` of the range `search` searched, and the first side's search.
    pub fn new(middle: usize, position: Position, search: &Search) -> (Split, Search) {
        let marks = search.marks().to_vec();
        let bad = marks.len() - 1;
        let left = Search::between(marks.len(), 0, middle, &marks);
        let split = Split {
            middle,
            position,
            bad,
            marks,
            first: None,
        };
        (split, left)
    }

    /// The commits a step of the side being bisected is placed between (0 and 1): good
    /// and the middle commit, then the middle commit and bad (`last`).
    pub fn ends(&self, last: usize) -> (usize, usize) {
        match self.first {
            None => (0, self.middle),
            Some(_) => (self.middle, last),
        }
    }

    /// The side being bisected found `part`: the second side's search, or, after the
    /// second, both sides' findings.
    pub fn found(&mut self, part: Part) -> Result<Search, (Part, Part)> {
        match self.first.take() {
            None => {
                self.first = Some(part);
                Ok(Search::between(self.marks.len(), self.middle, self.bad, &self.marks))
            }
            Some(first) => Err((first, part)),
        }
    }
}

impl Bisection {
    /// What a search found: the outcome, or `None` when a split's second side is to be
    /// bisected next. Without a split only a range or an ambiguous commit end here.
    pub(super) fn part_found(&mut self, part: Part) -> Option<Ask> {
        let Some(split) = self.split.as_mut() else {
            return Some(Ask::Done(match part {
                Part::Range { first, last } => Outcome::Range { first, last },
                Part::Ambiguous {
                    commit,
                    position,
                    first,
                    last,
                } => Outcome::Ambiguous {
                    commit,
                    position,
                    first,
                    last,
                },
                Part::Culprit { .. } => unreachable!("a culprit without a split is confirmed"),
            }));
        };
        match split.found(part) {
            Ok(second) => {
                self.search = second;
                None
            }
            Err((first, second)) => {
                // The share, from every boot of the middle commit (a step, then a
                // reference of both sides) against good and bad.
                let (middle, last) = (split.middle, self.values.len() - 1);
                let boots = sides(&self.log, |b| match b.commit {
                    c if c == middle => Some(Side::Step),
                    _ => reference(b, last),
                });
                let position = position_in_blocks(&boots, self.rules.step_alpha).unwrap_or(split.position);
                Some(Ask::Done(Outcome::TwoChanges {
                    middle,
                    position,
                    first,
                    second,
                }))
            }
        }
    }
}
