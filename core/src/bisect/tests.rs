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
    assert_eq!(s.next(), Next::Done(Outcome::Range { first: 5, last: 6 }));
    s.mark(5, Mark::Good);
    assert_eq!(s.next(), Next::Done(Outcome::Culprit(6)));
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
    assert!(t.wrong as f64 <= 0.02 * trials as f64, "{t:?}");
    let null = Synthetic {
        culprits: vec![],
        ..real.clone()
    };
    let t = tally(&null.models(), None, rules, 10, trials, 2);
    println!("null: {t:?}");
    assert!(t.does_not_reproduce as f64 >= 0.95 * trials as f64, "{t:?}");
    assert!(t.wrong as f64 <= 0.01 * trials as f64, "{t:?}");
    let broken = Synthetic {
        build_fails: vec![36],
        ..real.clone()
    };
    let mut rng = Rng::new(3);
    let r = trial(&broken.models(), rules, 10, &mut rng);
    assert!(matches!(r.outcome, Outcome::Range { first: 36, last: 37 }), "{r:?}");
}
