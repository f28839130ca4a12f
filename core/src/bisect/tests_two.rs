//! Two changes in one range, and the time by phase a report gives.

use super::*;
use crate::stats::rng::Rng;

/// Two changes of 5 % each, at 4 and 8 of 12: the bisection finds a commit between them,
/// bisects each side apart, and the report names both with the first's share.
#[test]
fn two_changes_are_each_named_with_their_share() {
    use super::report::{report, verdict, Boot, Builds, Commit};
    let commits: Vec<Commit> = (0..12)
        .map(|i| Commit {
            hash: commits_hash(i),
            subject: format!("commit {i}"),
            author: "A U Thor <a@example.org>".into(),
        })
        .collect();
    let mut b = Bisection::new(12, Rules::default());
    let mut rng = Rng::new(17);
    let mut boots = Vec::new();
    let outcome = loop {
        match b.ask() {
            Ask::Measure { commit, role } => {
                let level = [(4, 5.0), (8, 5.0)]
                    .iter()
                    .filter(|(c, _)| commit >= *c)
                    .map(|x| x.1)
                    .sum::<f64>();
                let v = 100.0 + level + crate::stats::sim::normal(&mut rng) * 0.8;
                b.record(commit, role, Ok(v));
                boots.push(Boot {
                    commit,
                    role,
                    value: Ok(v),
                });
            }
            Ask::Done(o) => break o,
        }
    };
    let Outcome::TwoChanges {
        middle,
        position,
        first,
        second,
    } = &outcome
    else {
        panic!("{outcome:?}");
    };
    assert!((4..8).contains(middle), "{outcome:?}");
    assert_eq!((first.culprit(), second.culprit()), (Some(4), Some(8)), "{outcome:?}");
    assert!(
        position.lo < 0.5 && position.hi > 0.5 && position.lo > 0.1,
        "{position:?}"
    );
    assert!(b.steps().iter().any(|s| s.mark == Mark::Middle && s.commit == *middle));
    let about = super::tests::about(3);
    let r = report(
        about,
        &super::report::Range::whole(commits),
        &b,
        &boots,
        Builds { compiled: 8, failed: 0 },
        Some(outcome.clone()),
    );
    let v = verdict(&r);
    println!("{v}");
    let share = format!("carries {:.0}% of the change", 100.0 * position.estimate);
    for want in [
        "two changes",
        &format!("{:.12} \"commit 4\"", commits_hash(4)),
        &format!("{:.12} \"commit 8\"", commits_hash(8)),
        &share,
    ] {
        assert!(v.contains(want), "{want:?} in {v}");
    }
}

/// A hash whose first 12 characters tell the commit apart.
fn commits_hash(i: usize) -> String {
    format!("{i:x}{}", "f".repeat(39))
}

/// The time by phase: each phase in order, and the share outside the build, the boot and the
/// workload computed from the figures given.
#[test]
fn the_time_by_phase_says_the_overhead_share() {
    use super::report::phases_text;
    let p = |v: &[(&str, f64)]| v.iter().map(|(n, s)| (n.to_string(), *s)).collect::<Vec<_>>();
    assert_eq!(phases_text(&[]), None);
    let t = phases_text(&p(&[
        ("checkout", 6.0),
        ("build", 300.0),
        ("install and boot", 40.0),
        ("tools", 3.0),
        ("workload", 50.0),
        ("judging", 1.0),
    ]))
    .unwrap();
    // 10 of 400 s are neither build, boot nor workload.
    assert!(
        t.contains("all but the build, the boot and the workload: 2.5% of 6 min 40 s"),
        "{t}"
    );
    assert!(
        t.starts_with("checkout 6.0 s, build 5 min 00 s, install and boot 40.0 s"),
        "{t}"
    );
}
