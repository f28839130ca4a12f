//! The bisection's decisions: the search alone, positions, and whole bisections of
//! synthetic ranges (CI-sized here; `kreg bench bisect` runs the full form).

use super::sim::{tally, trial, Synthetic};
use super::*;
use crate::stats::rng::Rng;

#[test]
fn the_search_halves_and_a_skip_next_to_the_culprit_leaves_the_pair() {
    let mut s = Search::new(9);
    assert_eq!(s.next(), Next::Test(4));
    s.mark(4, Mark::Good);
    assert_eq!(s.next(), Next::Test(6));
    s.mark(6, Mark::Bad);
    assert_eq!(s.next(), Next::Test(5));
    s.mark(5, Mark::Skip);
    assert_eq!(s.next(), Next::Range { first: 5, last: 6 });
    s.mark(5, Mark::Good);
    assert_eq!(s.next(), Next::Culprit(6));
}

#[test]
fn a_step_like_good_sits_near_0_and_one_like_bad_near_1() {
    let good = [100.0, 100.5, 99.5, 100.2];
    let bad = [103.0, 103.4, 102.6, 103.1];
    let p = position(&good, &bad, &[100.1, 99.9, 100.3], 0.01).unwrap();
    assert!(p.lo < p.estimate && p.estimate < p.hi && p.hi < 0.5, "{p:?}");
    let p = position(&good, &bad, &[103.2, 102.8, 103.0], 0.01).unwrap();
    assert!(p.lo > 0.5, "{p:?}");
    // Good and bad not told apart: no bounded interval.
    assert_eq!(position(&good, &good, &bad, 0.01), None);
}

/// The figures at CI size: 3 % at run-to-run CoV 1 % and boot-to-boot 1 % over 64
/// commits; the same range without the change; a broken commit beside the culprit.
#[test]
fn synthetic_ranges_end_where_they_should() {
    let rules = Rules::default();
    let trials = 200;
    let real = Synthetic {
        commits: 64,
        culprits: vec![(37, 0.03)],
        cov: 0.01,
        boot_cov: 0.01,
        build_fails: vec![],
    };
    let t = tally(&real.models(), Some(37), rules, 10, trials, 1);
    println!("3% at 37/64: {t:?}");
    assert!(t.exact as f64 >= 0.95 * trials as f64, "{t:?}");
    assert!(t.confirmed as f64 >= 0.9 * trials as f64, "{t:?}");
    assert!(t.wrong as f64 <= 0.02 * trials as f64, "{t:?}");
    assert!(t.max_builds <= 6 + 3, "⌈log2 64⌉ + 3: {t:?}");
    let null = Synthetic {
        culprits: vec![],
        ..real.clone()
    };
    let t = tally(&null.models(), None, rules, 10, trials, 2);
    println!("null: {t:?}");
    assert!(t.does_not_reproduce as f64 >= 0.95 * trials as f64, "{t:?}");
    assert!(t.wrong as f64 <= 0.01 * trials as f64, "{t:?}");
    // Two commits share the change: never one commit.
    let two = Synthetic {
        culprits: vec![(20, 0.015), (40, 0.015)],
        ..real.clone()
    };
    let t = tally(&two.models(), None, rules, 10, trials, 4);
    println!("two: {t:?}");
    assert_eq!(t.wrong, 0, "{t:?}");
    let broken = Synthetic {
        build_fails: vec![36],
        ..real.clone()
    };
    let mut rng = Rng::new(3);
    let r = trial(&broken.models(), rules, 10, &mut rng);
    assert!(matches!(r.outcome, Outcome::Range { first: 36, last: 37 }), "{r:?}");
}

/// A culprit whose parent measures the same in new boots, or whose revert does not build,
/// is not confirmed; one that carries the change and whose revert undoes it is.
#[test]
fn the_sandwich_and_the_revert_confirm_only_a_culprit_that_carries_the_change() {
    let good: Vec<f64> = (0..8).map(|i| 100.0 + (i % 3) as f64 * 0.3).collect();
    let bad: Vec<f64> = good.iter().map(|v| v + 3.0).collect();
    let confirm = |parent: f64, culprit: f64, revert: Option<f64>| {
        let mut c = confirm::Confirm::new(5);
        let mut noise = 0.0;
        loop {
            match c.ask(&good, &bad, 9, &Rules::default()) {
                Ok((commit, role)) => {
                    noise = (noise + 0.37) % 1.0;
                    let v = match role {
                        Role::Parent => Ok(parent + noise),
                        Role::Culprit => Ok(culprit + noise),
                        Role::Revert { culprit: 5 } => {
                            revert.map(|r| r + noise).ok_or("the revert conflicts".to_string())
                        }
                        _ => Ok(103.0 + noise),
                    };
                    assert!(commit == 4 || commit == 5 || commit == 9, "{commit}");
                    c.record(role, v);
                }
                Err(done) => return done,
            }
        }
    };
    let yes = confirm(100.0, 103.0, Some(100.0));
    assert!(yes.confirmed, "{yes:?}");
    let no_change = confirm(100.0, 100.2, Some(100.0));
    assert!(!no_change.confirmed, "{no_change:?}");
    let conflict = confirm(100.0, 103.0, None);
    assert!(
        !conflict.confirmed && conflict.revert == Err("the revert conflicts".into()),
        "{conflict:?}"
    );
}

#[test]
fn looks_grow_by_about_a_third_up_to_the_cap() {
    assert_eq!(look_rounds((2, 20)), [2, 3, 4, 6, 8, 11, 15, 20]);
    assert_eq!(look_rounds((3, 12)), [3, 4, 6, 8, 11, 12]);
    assert_eq!(look_rounds((5, 5)), [5]);
}
