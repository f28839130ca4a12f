//! A bisection rebuilt from the boots it asked for, as stored: the decisions are the same
//! every time, so a resume goes on where the stopped driver was and a page shows what it
//! decided, both without the driver.

use super::{Ask, Bisection, Role, Rules};
use crate::failure::{Failed, FailureClass};
use crate::Error;

/// A boot as stored: its sequence number, the commit, why it was asked, and its value, or
/// why it has none (both `None`: asked but not measured yet).
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    pub seq: i64,
    pub commit: usize,
    pub role: Role,
    pub value: Option<f64>,
    pub error: Option<&'a str>,
    /// The error's class (none stored before classes were: a build's, never tried again).
    pub class: Option<FailureClass>,
}

impl Bisection {
    /// The bisection of `commits` commits under `rules` with the `stored` boots recorded in
    /// order, and the index of the last one when it was asked but not measured yet (a
    /// resume measures it first). A stored boot that is not what the bisection asks at its
    /// place is an error: the rules or the code changed since.
    pub fn replay(commits: usize, rules: Rules, stored: &[Stored<'_>]) -> Result<(Bisection, Option<usize>), Error> {
        let mut b = Bisection::new(commits, rules);
        for (i, m) in stored.iter().enumerate() {
            match b.ask() {
                Ask::Measure { commit, role } if commit == m.commit && role == m.role => {}
                other => {
                    return Err(Error::invalid(format!(
                        "measurement {} ({} of commit {}) is not what the bisection asks there ({other:?})",
                        m.seq,
                        m.role.name(),
                        m.commit
                    )))
                }
            }
            match (m.value, m.error) {
                (Some(v), _) => b.record(m.commit, m.role, Ok(v)),
                (None, Some(e)) => {
                    let class = m.class.unwrap_or(FailureClass::Build);
                    b.record(m.commit, m.role, Err(Failed::new(class, e)))
                }
                (None, None) if i + 1 == stored.len() => return Ok((b, Some(i))),
                (None, None) => return Err(Error::invalid(format!("measurement {} was never measured", m.seq))),
            }
        }
        Ok((b, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Boots of a range of 16 whose commit 9 is 10 % slower, with a spread of its own.
    fn value(commit: usize, n: usize) -> f64 {
        let noise = ((n * 7919) % 13) as f64 / 13.0 - 0.5;
        if commit >= 9 {
            110.0 + noise
        } else {
            100.0 + noise
        }
    }

    #[test]
    fn a_replay_asks_what_the_live_bisection_asked_and_a_changed_record_is_refused() {
        let mut live = Bisection::new(16, Rules::default());
        let mut asked = Vec::new();
        let mut errors = Vec::new();
        let mut failed_one = false;
        for n in 0..40 {
            let Ask::Measure { commit, role } = live.ask() else {
                break;
            };
            // One step's build fails (a skip).
            let failed = role == Role::Step && !failed_one;
            failed_one |= failed;
            let v = (!failed).then(|| value(commit, n));
            errors.push(failed.then(|| "no build".to_string()));
            live.record(
                commit,
                role,
                v.ok_or_else(|| Failed::new(FailureClass::Build, "no build")),
            );
            asked.push((commit, role, v));
        }
        let stored: Vec<Stored> = asked
            .iter()
            .zip(&errors)
            .enumerate()
            .map(|(i, (&(commit, role, value), e))| Stored {
                seq: i as i64 + 1,
                commit,
                role,
                value,
                error: e.as_deref(),
                class: e.as_ref().map(|_| FailureClass::Build),
            })
            .collect();
        assert!(stored.len() == 40 && failed_one, "{stored:?}");
        let (mut again, pending) = Bisection::replay(16, Rules::default(), &stored).unwrap();
        assert_eq!(pending, None);
        assert_eq!(again.ask(), live.ask());
        // The last one asked but not measured yet is handed back.
        let mut open = stored.clone();
        open.last_mut().unwrap().value = None;
        let (_, pending) = Bisection::replay(16, Rules::default(), &open).unwrap();
        assert_eq!(pending, Some(open.len() - 1));
        // One not measured in the middle, or another commit than the one asked, is refused.
        let mut hole = stored.clone();
        hole[2].value = None;
        assert!(Bisection::replay(16, Rules::default(), &hole)
            .unwrap_err()
            .to_string()
            .contains("never measured"));
        let mut other = stored;
        other[1].commit = 3;
        assert!(Bisection::replay(16, Rules::default(), &other)
            .unwrap_err()
            .to_string()
            .contains("not what the bisection asks"));
    }
}
