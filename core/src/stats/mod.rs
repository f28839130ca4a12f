//! Statistics over a metric's samples: summaries, the two-sample tests each kind of metric
//! calls for, multiple-comparison control, sequential plans, and verdicts against a
//! baseline. Pure.

pub mod changepoint;
mod hypothesis;
pub mod judge;
pub mod kind;
pub mod looks;
mod measure;
pub mod rank;
pub mod rng;
pub mod sim;
pub mod units;
pub mod verdict;

pub use hypothesis::{benjamini_hochberg, t_quantile, welch};
pub use judge::{judge, judge_one, RowInput};
pub use kind::MetricKind;
pub use looks::Looks;
pub use measure::measure;
pub use units::{Shared, Side};
pub use verdict::{decide, interval_text, Comparison, Settings, Test, Unit, Verdict};

#[cfg(test)]
mod sim_tests;

/// The standard normal distribution function.
pub fn normal_cdf(z: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::new(0.0, 1.0).expect("standard normal").cdf(z)
}

/// The standard normal quantile.
pub fn normal_quantile(p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::new(0.0, 1.0).expect("standard normal").inverse_cdf(p)
}

/// The step the values were printed in, as far as the numbers show: the finest decimal
/// place any of them needs (0.001 for 0.005 and 0.012, 1 for 12 and 40). `None` when every
/// value is 0, or when one needs more than 9 decimals (computed, not printed).
pub fn resolution(values: &[f64]) -> Option<f64> {
    let mut finest: Option<i32> = None;
    for &v in values.iter().filter(|v| **v != 0.0) {
        let places = (0..=9).find(|&k| {
            let scaled = v * 10f64.powi(k);
            (scaled - scaled.round()).abs() <= 1e-6 + 1e-12 * scaled.abs()
        })?;
        finest = Some(finest.map_or(places, |f| f.max(places)));
    }
    finest.map(|k| 10f64.powi(-k))
}

/// The first and third quartiles (linear interpolation between order statistics, as
/// R's default); NaN for no samples.
pub fn quartiles(samples: &[f64]) -> (f64, f64) {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if v.is_empty() {
            return f64::NAN;
        }
        let h = q * (v.len() - 1) as f64;
        let (lo, frac) = (h.floor() as usize, h - h.floor());
        v[lo] + frac * (v[(lo + 1).min(v.len() - 1)] - v[lo])
    };
    (at(0.25), at(0.75))
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 for a single sample.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let n = samples.len();
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let min = samples.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let median = median(&mut samples.to_vec());
        Some(Summary {
            n,
            mean,
            median,
            stddev: var.sqrt(),
            min,
            max,
        })
    }

    /// Standard deviation as a percentage of the mean (the CoV in %).
    pub fn stddev_pct(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            100.0 * self.stddev / self.mean.abs()
        }
    }
}

/// The median of finite samples (sorted in place); the mean of the middle two for an even
/// count. NaN for none.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Samples farther than 3.5 scaled median absolute deviations from the median (the
/// modified z-score rule of Iglewicz and Hoaglin: robust, and a single wild sample cannot
/// hide itself by inflating the spread).
pub fn outliers(samples: &[f64]) -> Vec<f64> {
    if samples.len() < 4 {
        return Vec::new();
    }
    let m = median(&mut samples.to_vec());
    let mad = 1.4826 * median(&mut samples.iter().map(|x| (x - m).abs()).collect::<Vec<_>>());
    if mad == 0.0 {
        return samples.iter().copied().filter(|x| *x != m).collect();
    }
    samples.iter().copied().filter(|x| (x - m).abs() > 3.5 * mad).collect()
}

/// Sarle's bimodality coefficient above 5/9 (the value of a uniform distribution) flags
/// a sample that looks like two modes; needs at least 8 samples to mean anything.
pub fn bimodal(samples: &[f64]) -> bool {
    let n = samples.len() as f64;
    if samples.len() < 8 {
        return false;
    }
    let m = samples.iter().sum::<f64>() / n;
    let m2 = samples.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
    if m2 == 0.0 {
        return false;
    }
    let m3 = samples.iter().map(|x| (x - m).powi(3)).sum::<f64>() / n;
    let m4 = samples.iter().map(|x| (x - m).powi(4)).sum::<f64>() / n;
    // Sample (bias-corrected) skewness and excess kurtosis.
    let g1 = m3 / m2.powf(1.5) * (n * (n - 1.0)).sqrt() / (n - 2.0);
    let g2 = ((n + 1.0) * (m4 / m2.powi(2) - 3.0) + 6.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0));
    let b = (g1 * g1 + 1.0) / (g2 + 3.0 * (n - 1.0).powi(2) / ((n - 2.0) * (n - 3.0)));
    b > 5.0 / 9.0
}

impl Summary {
    /// The 95% confidence interval of the mean (Student t); `None` for a single sample.
    pub fn ci95(&self) -> Option<(f64, f64)> {
        (self.n >= 2).then(|| {
            let half = t_quantile(0.05, (self.n - 1) as f64) * self.stddev / (self.n as f64).sqrt();
            (self.mean - half, self.mean + half)
        })
    }
}

/// Change of `mean` against `base` in percent; positive means larger.
pub fn change_pct(base: f64, mean: f64) -> Option<f64> {
    (base != 0.0).then(|| 100.0 * (mean - base) / base.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert!((s.stddev - 2.138089935299395).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert!((s.stddev_pct() - 42.7617987).abs() < 1e-6);
        assert_eq!(Summary::of(&[3.0]).unwrap().stddev, 0.0);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn outliers_and_bimodality() {
        assert_eq!(outliers(&[10.0, 10.2, 9.9, 10.1, 10.0, 31.0]), vec![31.0]);
        assert!(outliers(&[10.0, 10.2, 9.9, 10.1, 10.0]).is_empty());
        assert!(
            outliers(&[1.0, 50.0, 2.0]).is_empty(),
            "too few samples to call one an outlier"
        );
        let two_modes = [1.0, 1.1, 0.9, 1.0, 1.05, 5.0, 5.1, 4.9, 5.0, 4.95];
        let one_mode = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.02, 0.98, 1.01, 0.99];
        assert!(bimodal(&two_modes));
        assert!(!bimodal(&one_mode));
        assert!(!bimodal(&two_modes[..6]));
    }

    #[test]
    fn change() {
        assert!((change_pct(10.0, 11.0).unwrap() - 10.0).abs() < 1e-9);
        assert!((change_pct(10.0, 9.0).unwrap() + 10.0).abs() < 1e-9);
        assert_eq!(change_pct(0.0, 1.0), None);
        assert_eq!(quartiles(&[1.0, 2.0, 3.0, 4.0, 5.0]), (2.0, 4.0));
        assert_eq!(quartiles(&[1.0, 2.0, 3.0, 4.0]), (1.75, 3.25));
    }

    #[test]
    fn resolution_is_the_finest_printed_place() {
        assert_eq!(resolution(&[0.005, 0.005]), Some(0.001));
        assert_eq!(resolution(&[0.012, 0.5, 0.0]), Some(0.001));
        assert_eq!(resolution(&[12.0, 40.0, -3.0]), Some(1.0));
        assert_eq!(resolution(&[1234.5678]), Some(1e-4));
        assert_eq!(resolution(&[0.0, 0.0]), None);
        assert_eq!(resolution(&[1.0 / 3.0, 2.0]), None, "computed, not printed");
    }
}
