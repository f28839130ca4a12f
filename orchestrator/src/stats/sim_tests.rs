//! Simulations that hold the verdicts to their promises, for several seeds: the share of
//! false alarms between samples of one distribution, the power against a real 10% shift,
//! and the family-wise false alarms of a 12-metric report under Benjamini–Hochberg.

use super::*;

/// Box–Muller over the seeded generator: normal samples for the simulations.
struct Gen(super::rng::Rng);

impl Gen {
    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let (u1, u2) = (self.0.uniform(), self.0.uniform());
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    fn sample(&mut self, n: usize, mean: f64, cov: f64) -> Vec<f64> {
        (0..n).map(|_| self.normal(mean, mean * cov)).collect()
    }
}

const SEEDS: &[u64] = &[1, 42, 0xDEAD_BEEF, 7_777_777, 123_456_789_012];

fn flagged(base: &[f64], new: &[f64], metric: &str) -> bool {
    let s = Settings {
        bootstrap_resamples: 50,
        ..Settings::default()
    };
    let mut c = compare(base, new, metric, &s).unwrap();
    settle(&mut c, base.len(), new.len(), true, &s);
    matches!(c.verdict, Verdict::Regression | Verdict::Improvement)
}

#[test]
fn a_a_false_alarms_stay_at_alpha() {
    for &seed in SEEDS {
        let mut g = Gen(super::rng::Rng::new(seed));
        let trials = 2000;
        let alarms = (0..trials)
            .filter(|_| flagged(&g.sample(5, 100.0, 0.03), &g.sample(5, 100.0, 0.03), "tps"))
            .count();
        let share = alarms as f64 / trials as f64;
        assert!(share <= 0.06, "seed {seed}: {share}");
    }
}

#[test]
fn a_b_ten_percent_shift_is_found() {
    for &seed in SEEDS {
        let mut g = Gen(super::rng::Rng::new(seed));
        let trials = 2000;
        let found = (0..trials)
            .filter(|_| flagged(&g.sample(5, 100.0, 0.03), &g.sample(5, 110.0, 0.03), "tps"))
            .count();
        let share = found as f64 / trials as f64;
        assert!(share >= 0.95, "seed {seed}: {share}");
    }
}

#[test]
fn twelve_metric_reports_without_change_stay_quiet() {
    let names = [
        "avg_rps",
        "wakeup_lat_p50",
        "wakeup_lat_p90",
        "wakeup_lat_p99",
        "wakeup_lat_p99.9",
        "request_lat_p50",
        "request_lat_p90",
        "request_lat_p99",
        "request_lat_p99.9",
        "rps_p20",
        "rps_p50",
        "rps_p90",
    ];
    let s = Settings {
        bootstrap_resamples: 50,
        ..Settings::default()
    };
    for &seed in SEEDS {
        let mut g = Gen(super::rng::Rng::new(seed));
        let reports = 500;
        let mut quiet = 0;
        for _ in 0..reports {
            let mut rows: Vec<Comparison> = names
                .iter()
                .map(|m| compare(&g.sample(5, 100.0, 0.03), &g.sample(5, 100.0, 0.03), m, &s).unwrap())
                .collect();
            let adj = benjamini_hochberg(&rows.iter().map(|c| c.p).collect::<Vec<_>>());
            for (c, a) in rows.iter_mut().zip(adj) {
                c.p_adjusted = a;
                settle(c, 5, 5, true, &s);
            }
            if !rows
                .iter()
                .any(|c| matches!(c.verdict, Verdict::Regression | Verdict::Improvement))
            {
                quiet += 1;
            }
        }
        let share = quiet as f64 / reports as f64;
        assert!(share >= 0.90, "seed {seed}: {share}");
    }
}

#[test]
fn verdicts_follow_direction_and_are_deterministic() {
    let s = Settings::default();
    let base = [100.0, 101.0, 99.0, 100.5, 99.5];
    let slower = [120.0, 121.0, 119.0, 120.5, 119.5];
    let mut c = compare(&base, &slower, "time", &s).unwrap();
    settle(&mut c, 5, 5, false, &s);
    assert_eq!(c.verdict, Verdict::Regression, "{c:?}");
    let mut d = compare(&base, &slower, "tps", &s).unwrap();
    settle(&mut d, 5, 5, true, &s);
    assert_eq!(d.verdict, Verdict::Improvement);
    // Same samples, same numbers, to the bit.
    let again = compare(&base, &slower, "time", &s).unwrap();
    assert_eq!(again.median_ratio_ci, c.median_ratio_ci);
    assert!(
        c.median_ratio_ci.0 > 1.15 && c.median_ratio_ci.1 < 1.25,
        "{:?}",
        c.median_ratio_ci
    );
    // Tight and equal: no change. Two samples: inconclusive.
    let same = [100.0, 100.2, 99.8, 100.1, 99.9];
    let mut e = compare(&base, &same, "tps", &s).unwrap();
    settle(&mut e, 5, 5, true, &s);
    assert_eq!(e.verdict, Verdict::NoChange, "{e:?}");
    let mut f = compare(&base[..2], &same[..2], "tps", &s).unwrap();
    settle(&mut f, 2, 2, true, &s);
    assert_eq!(f.verdict, Verdict::Inconclusive);
    assert!(f.reason.contains("too few samples"));
    // Noisy: the interval cannot rule out 2%.
    let noisy = [90.0, 110.0, 95.0, 105.0, 100.0];
    let mut g = compare(&base, &noisy, "tps", &s).unwrap();
    settle(&mut g, 5, 5, true, &s);
    assert_eq!(g.verdict, Verdict::Inconclusive);
    assert!(g.reason.contains("cannot rule out"), "{}", g.reason);
    // Clearly slower, but the adjusted p-value is above alpha: inconclusive, and the reason
    // says it is the p-value, not the interval, that falls short.
    let slower = [80.0, 85.0, 75.0, 82.0, 78.0];
    let mut h = compare(&base, &slower, "tps", &s).unwrap();
    h.p_adjusted = s.alpha * 2.0;
    settle(&mut h, 5, 5, true, &s);
    assert_eq!(h.verdict, Verdict::Inconclusive);
    assert!(
        h.reason.contains("not below alpha") && !h.reason.contains("cannot rule out"),
        "{}",
        h.reason
    );
    assert!(verdict::is_distribution_metric("wakeup_lat_p99") && !verdict::is_distribution_metric("tps"));
    assert_eq!(compare(&base, &same, "lat_p95_ms", &s).unwrap().test, Test::MannWhitney);
}
