//! One comparison row: a new sample against its baseline, the test that fits the metric,
//! a bootstrap interval for the ratio of medians, and a verdict that uses the metric's
//! direction. Deterministic: the same samples always give the same verdict.

use super::tests_impl::{mann_whitney, t_quantile, welch};
use super::{median, Summary};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regression,
    Improvement,
    NoChange,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    Welch,
    MannWhitney,
}

/// Settings a report states at its top.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub alpha: f64,
    /// The smallest change (fraction, 0.02 = 2%) worth calling a change.
    pub min_effect: f64,
    pub bootstrap_resamples: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.05,
            min_effect: 0.02,
            bootstrap_resamples: 2000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub test: Test,
    pub p: f64,
    /// After the report's multiple-comparison control (Benjamini–Hochberg).
    pub p_adjusted: f64,
    /// Change of the mean, in percent of the baseline mean.
    pub change_pct: f64,
    /// 95% interval of the change of the mean, in percent (Welch).
    pub change_ci_pct: (f64, f64),
    /// Bootstrap 95% interval of median(new) / median(base).
    pub median_ratio_ci: (f64, f64),
    pub verdict: Verdict,
    pub reason: String,
}

/// Whether a metric is a distribution summary (a percentile, a latency) rather than a mean.
pub fn is_distribution_metric(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lat")
        || n.split(['_', '-'])
            .any(|part| part.starts_with('p') && part[1..].chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// The bootstrap's generator, seeded from the samples: the same samples give the same
/// interval.
fn rng_from_samples(a: &[f64], b: &[f64]) -> super::rng::Rng {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for v in a.iter().chain([f64::NAN].iter()).chain(b) {
        h ^= v.to_bits();
        h = h.wrapping_mul(0x1000_0000_01B3).rotate_left(17);
    }
    super::rng::Rng::new(h | 1)
}

/// Percentile bootstrap of median(b) / median(a).
pub fn median_ratio_ci(a: &[f64], b: &[f64], resamples: usize) -> (f64, f64) {
    let mut rng = rng_from_samples(a, b);
    let mut ratios = Vec::with_capacity(resamples);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..resamples {
        for x in ra.iter_mut() {
            *x = a[rng.below(a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.below(b.len())];
        }
        let ma = median(&mut ra);
        if ma != 0.0 {
            ratios.push(median(&mut rb) / ma);
        }
    }
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    ratios.sort_by(|x, y| x.partial_cmp(y).expect("finite"));
    let at = |q: f64| ratios[((q * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    (at(0.025), at(0.975))
}

/// Compares `new` against `base`. `p_adjusted` is filled in later, across the report's
/// rows; the verdict is settled by [`settle`].
pub fn compare(base: &[f64], new: &[f64], metric: &str, s: &Settings) -> Option<Comparison> {
    let sb = Summary::of(base)?;
    let sn = Summary::of(new)?;
    let test = if is_distribution_metric(metric) {
        Test::MannWhitney
    } else {
        Test::Welch
    };
    let p = match test {
        Test::Welch => welch(base, new).map(|x| x.2),
        Test::MannWhitney => mann_whitney(base, new).map(|x| x.1),
    }
    .unwrap_or(1.0);
    let change_pct = if sb.mean != 0.0 {
        100.0 * (sn.mean - sb.mean) / sb.mean.abs()
    } else {
        f64::NAN
    };
    let change_ci_pct = if base.len() >= 2 && new.len() >= 2 && sb.mean != 0.0 {
        let (va, vb) = (sb.stddev.powi(2) / sb.n as f64, sn.stddev.powi(2) / sn.n as f64);
        let se = (va + vb).sqrt();
        let df = if se == 0.0 {
            (sb.n + sn.n - 2) as f64
        } else {
            (va + vb).powi(2) / (va.powi(2) / (sb.n as f64 - 1.0) + vb.powi(2) / (sn.n as f64 - 1.0))
        };
        let half = t_quantile(0.05, df) * se;
        let d = sn.mean - sb.mean;
        (100.0 * (d - half) / sb.mean.abs(), 100.0 * (d + half) / sb.mean.abs())
    } else {
        (f64::NAN, f64::NAN)
    };
    let median_ratio_ci = median_ratio_ci(base, new, s.bootstrap_resamples);
    Some(Comparison {
        test,
        p,
        p_adjusted: p,
        change_pct,
        change_ci_pct,
        median_ratio_ci,
        verdict: Verdict::Inconclusive,
        reason: String::new(),
    })
}

/// The verdict from the adjusted p-value, the interval and the metric's direction.
pub fn settle(c: &mut Comparison, n_base: usize, n_new: usize, higher_is_better: bool, s: &Settings) {
    let min_pct = 100.0 * s.min_effect;
    if n_base < 3 || n_new < 3 {
        c.verdict = Verdict::Inconclusive;
        c.reason = format!("too few samples ({n_base} vs {n_new}; 3 or more each)");
        return;
    }
    let test = match c.test {
        Test::Welch => "Welch t-test",
        Test::MannWhitney => "Mann-Whitney U",
    };
    if c.p_adjusted < s.alpha {
        let worse = (c.change_pct < 0.0) == higher_is_better;
        c.verdict = if worse {
            Verdict::Regression
        } else {
            Verdict::Improvement
        };
        c.reason = format!("{test}, p={:.4} (adjusted {:.4})", c.p, c.p_adjusted);
    } else if c.change_ci_pct.0 >= -min_pct && c.change_ci_pct.1 <= min_pct {
        c.verdict = Verdict::NoChange;
        c.reason = format!("{test}, p={:.4}; 95% CI of the change within ±{min_pct}%", c.p);
    } else if c.change_ci_pct.0 > min_pct || c.change_ci_pct.1 < -min_pct {
        // The interval is clear of the band, but the test (after adjusting for the report's
        // other comparisons) is not below alpha: a likely change not yet shown.
        c.verdict = Verdict::Inconclusive;
        c.reason = format!(
            "{test}, p={:.4} (adjusted {:.4}) not below alpha {}; 95% CI of the change [{:+.1}%, {:+.1}%]: more samples needed",
            c.p, c.p_adjusted, s.alpha, c.change_ci_pct.0, c.change_ci_pct.1
        );
    } else {
        c.verdict = Verdict::Inconclusive;
        c.reason = format!(
            "{test}, p={:.4}; 95% CI of the change [{:+.1}%, {:+.1}%] cannot rule out ±{min_pct}%",
            c.p, c.change_ci_pct.0, c.change_ci_pct.1
        );
    }
}
