//! Change points in a series of runs, by E-Divisive means (Matteson and James, "A
//! Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data", JASA
//! 2014), the method Otava and MongoDB's performance CI use on benchmark histories.
//!
//! For a segment of the series and a split of it into a left and a right part, the energy
//! distance between the parts is twice the mean distance across them less the mean
//! distance within each; weighted by `m·n / (m + n)`, it is largest at the split that
//! separates the segment's two distributions best, whatever their shape (no normality is
//! assumed, a change of spread counts too). The best split of every current segment is
//! found, the largest of them tested by permutation (the values shuffled within each
//! segment, the largest statistic of the shuffled series counted against it); when
//! significant it becomes a change point and the search goes on in the two new segments.
//!
//! The permutations are seeded from the values themselves, so one series always gives the
//! same change points: the history page, `kreg alerts` and the bench agree.

use serde::Serialize;

use super::kind::MetricKind;
use super::rng::Rng;
use super::verdict::{Comparison, Unit};

/// Where an alert raised at a change point stands in its triage, in the order pages list
/// them (new first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AlertState {
    New,
    Acknowledged,
    Invalid,
    Fixed,
}

crate::states::state_names!(AlertState { New => "new", Acknowledged => "acknowledged", Invalid => "invalid", Fixed => "fixed" });

impl AlertState {
    pub const ALL: [AlertState; 4] = [
        AlertState::New,
        AlertState::Acknowledged,
        AlertState::Invalid,
        AlertState::Fixed,
    ];

    /// The states' names joined by ", ", for messages.
    pub fn names() -> String {
        AlertState::ALL.map(AlertState::as_str).join(", ")
    }
}

/// How change points are searched for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// A split is a change point when its permutation p-value is at most this.
    pub alpha: f64,
    /// Permutations of each test.
    pub permutations: usize,
    /// The fewest runs on each side of a change point.
    pub min_size: usize,
}

impl Default for Settings {
    /// p ≤ 0.005 over 399 permutations (so at most one shuffled series may beat the real
    /// one), three runs at least on each side.
    fn default() -> Settings {
        Settings {
            alpha: 0.005,
            permutations: 399,
            min_size: 3,
        }
    }
}

/// A change point: the run at `at` (an index into the series) is the first of a new level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    pub at: usize,
    /// The permutation p-value when it was accepted.
    pub p: f64,
    /// The runs of the segments on each side, as the final segmentation has them.
    pub before: usize,
    pub after: usize,
    /// The change from the segment before to the segment after (its centre, difference
    /// and interval, as a report row compares two kernels).
    pub comparison: Comparison,
}

/// The change points of `values` (in time order), in the order of the series.
pub fn detect(values: &[f64], kind: MetricKind, s: &Settings) -> Vec<ChangePoint> {
    let mut rng = Rng::new(seed_of(values));
    let mut cuts: Vec<usize> = vec![0, values.len()];
    let mut found: Vec<(usize, f64)> = Vec::new();
    let mut shuffled = values.to_vec();
    while let Some((at, q)) = best_of_segments(values, &cuts, s.min_size) {
        let p = permutation_p(values, &cuts, q, s, &mut rng, &mut shuffled);
        if p > s.alpha {
            break;
        }
        found.push((at, p));
        let i = cuts.partition_point(|c| *c < at);
        cuts.insert(i, at);
    }
    found.sort_by_key(|f| f.0);
    found
        .into_iter()
        .map(|(at, p)| {
            let i = cuts.binary_search(&at).expect("a cut");
            let (before, after) = (&values[cuts[i - 1]..at], &values[at..cuts[i + 1]]);
            ChangePoint {
                at,
                p,
                before: before.len(),
                after: after.len(),
                // The interval at the level every report draws (90%: the equivalence
                // test's), so that a history's change and a report's read alike.
                comparison: super::measure(
                    before,
                    after,
                    kind,
                    Unit::Run,
                    super::verdict::Settings::default().equivalence_alpha,
                ),
            }
        })
        .collect()
}

/// The best split over all segments between `cuts`: (index, statistic).
fn best_of_segments(values: &[f64], cuts: &[usize], min_size: usize) -> Option<(usize, f64)> {
    cuts.windows(2)
        .filter_map(|w| best_split(&values[w[0]..w[1]], min_size).map(|(t, q)| (w[0] + t, q)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The p-value of a best split of statistic `q`: the share of permutations (values shuffled
/// within each segment) whose best split over all segments is at least as large, counting
/// the real series as one. Stops as soon as it cannot reach `alpha`.
fn permutation_p(values: &[f64], cuts: &[usize], q: f64, s: &Settings, rng: &mut Rng, buf: &mut [f64]) -> f64 {
    let total = s.permutations + 1;
    // The most permutations that may beat the real series with p ≤ alpha still possible.
    let allowed = ((s.alpha * total as f64).floor() as usize).saturating_sub(1);
    buf.copy_from_slice(values);
    let mut beaten = 0;
    for done in 1..=s.permutations {
        for w in cuts.windows(2) {
            shuffle(&mut buf[w[0]..w[1]], rng);
        }
        if best_of_segments(buf, cuts, s.min_size).is_some_and(|(_, m)| m >= q) {
            beaten += 1;
            if beaten > allowed {
                // Not significant, whatever the rest give: the p-value the permutations
                // so far give (a lower bound of the full one).
                return (beaten + 1) as f64 / (done + 1) as f64;
            }
        }
    }
    (beaten + 1) as f64 / total as f64
}

fn shuffle(x: &mut [f64], rng: &mut Rng) {
    for i in (1..x.len()).rev() {
        x.swap(i, rng.below(i + 1));
    }
}

/// The split of `x` with the largest weighted energy distance between its two parts:
/// (the first index of the right part, the statistic). `None` when `x` is too short to
/// leave `min_size` values on each side.
pub fn best_split(x: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let len = x.len();
    let min = min_size.max(2);
    if len < 2 * min {
        return None;
    }
    // to_left[t]: Σ_{i<t} |x_i − x_t|; to_right[t]: Σ_{j>t} |x_t − x_j|.
    let mut to_left = vec![0.0; len];
    let mut to_right = vec![0.0; len];
    for t in 0..len {
        for j in t + 1..len {
            let d = (x[t] - x[j]).abs();
            to_right[t] += d;
            to_left[j] += d;
        }
    }
    let total: f64 = to_right.iter().sum();
    // within_left[t]: the distances among x[..t]; within_right[t]: among x[t..].
    let mut within_left = vec![0.0; len + 1];
    for t in 1..=len {
        within_left[t] = within_left[t - 1] + to_left[t - 1];
    }
    let mut within_right = vec![0.0; len + 1];
    for t in (0..len).rev() {
        within_right[t] = within_right[t + 1] + to_right[t];
    }
    let mut best: Option<(usize, f64)> = None;
    for t in min..=len - min {
        let (m, n) = (t as f64, (len - t) as f64);
        let (wl, wr) = (within_left[t], within_right[t]);
        let across = total - wl - wr;
        let energy = 2.0 * across / (m * n) - wl / (m * (m - 1.0) / 2.0) - wr / (n * (n - 1.0) / 2.0);
        let q = m * n / (m + n) * energy;
        if best.is_none_or(|b| q > b.1) {
            best = Some((t, q));
        }
    }
    best
}

/// A seed from the values' bits (FNV-1a).
fn seed_of(values: &[f64]) -> u64 {
    values.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, b| (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3))
    })
}

/// What the simulator measures over many synthetic series.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub series: usize,
    /// Series with a change point exactly at the true change.
    pub exact: usize,
    /// Series with a change point within one run of it (exact included).
    pub near: usize,
    /// Series with a change point anywhere else (a false one).
    pub false_alarms: usize,
}

/// `count` series of `length` runs with noise of coefficient of variation `cov` (normal,
/// around 100), stepping by `step` (a fraction) at a run drawn uniformly from
/// `[min_size, length − min_size]`, or never when `step` is `None`; each searched as
/// [`detect`] searches a real series.
pub fn simulate(count: usize, length: usize, step: Option<f64>, cov: f64, seed: u64, s: &Settings) -> Tally {
    let mut rng = Rng::new(seed);
    let mut t = Tally {
        series: count,
        ..Tally::default()
    };
    let lo = s.min_size.max(2);
    for _ in 0..count {
        let at = lo + rng.below(length.saturating_sub(2 * lo) + 1);
        let values: Vec<f64> = (0..length)
            .map(|i| {
                let level = match step {
                    Some(f) if i >= at => 100.0 * (1.0 + f),
                    _ => 100.0,
                };
                level * (1.0 + cov * normal(&mut rng))
            })
            .collect();
        let found = detect(&values, MetricKind::Mean, s);
        let truth = step.map(|_| at);
        if truth.is_some_and(|a| found.iter().any(|c| c.at == a)) {
            t.exact += 1;
        }
        if truth.is_some_and(|a| found.iter().any(|c| c.at.abs_diff(a) <= 1)) {
            t.near += 1;
        }
        if found.iter().any(|c| truth.is_none_or(|a| c.at.abs_diff(a) > 1)) {
            t.false_alarms += 1;
        }
    }
    t
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Rng) -> f64 {
    let (u, v) = (rng.uniform(), rng.uniform());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(levels: &[(usize, f64)], cov: f64, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        levels
            .iter()
            .flat_map(|&(n, level)| (0..n).map(move |_| level))
            .map(|l| l * (1.0 + cov * normal(&mut rng)))
            .collect()
    }

    #[test]
    fn the_best_split_of_a_clean_step_is_the_step() {
        let x = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0];
        assert_eq!(best_split(&x, 2).unwrap().0, 4);
        assert_eq!(best_split(&x[..3], 2), None);
        // Against a direct computation of the statistic at every split.
        let y = series(&[(9, 10.0), (7, 12.0)], 0.05, 3);
        let direct = |t: usize| {
            let (l, r) = y.split_at(t);
            let mean_d = |a: &[f64], b: &[f64], same: bool| {
                let mut s = 0.0;
                let mut c = 0.0;
                for (i, u) in a.iter().enumerate() {
                    for (j, v) in b.iter().enumerate() {
                        if !same || i < j {
                            s += (u - v).abs();
                            c += 1.0;
                        }
                    }
                }
                s / c
            };
            let (m, n) = (l.len() as f64, r.len() as f64);
            m * n / (m + n) * (2.0 * mean_d(l, r, false) - mean_d(l, l, true) - mean_d(r, r, true))
        };
        let (t, q) = best_split(&y, 3).unwrap();
        let (dt, dq) = (3..=13)
            .map(|t| (t, direct(t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(t, dt);
        assert!((q - dq).abs() < 1e-9 * dq.abs(), "{q} {dq}");
    }

    #[test]
    fn finds_two_steps_with_their_changes_and_nothing_in_noise() {
        let x = series(&[(15, 100.0), (12, 105.0), (13, 98.0)], 0.01, 7);
        let found = detect(&x, MetricKind::Mean, &Settings::default());
        let at: Vec<usize> = found.iter().map(|c| c.at).collect();
        assert_eq!(at, [15, 27], "{found:#?}");
        let first = &found[0].comparison;
        assert!((first.change - 0.05).abs() < 0.01, "{first:?}");
        let (l, h) = first.ci.unwrap();
        assert!(l > 0.03 && h < 0.07 && l < 0.05 && h > 0.05, "{l} {h}");
        assert!(found[1].comparison.change < -0.05);
        assert!(found.iter().all(|c| c.p <= 0.005));
        assert_eq!((found[0].before, found[0].after), (15, 12));

        let flat = series(&[(40, 100.0)], 0.01, 11);
        assert!(detect(&flat, MetricKind::Mean, &Settings::default()).is_empty());
        // The same series, the same answer.
        let again = detect(&x, MetricKind::Mean, &Settings::default());
        let key = |f: &[ChangePoint]| f.iter().map(|c| (c.at, c.p, c.comparison.change)).collect::<Vec<_>>();
        assert_eq!(key(&again), key(&found));
    }

    #[test]
    fn too_short_a_series_has_no_change_point() {
        assert!(detect(&[1.0, 2.0, 3.0, 10.0, 11.0], MetricKind::Mean, &Settings::default()).is_empty());
        assert!(detect(&[], MetricKind::Mean, &Settings::default()).is_empty());
    }

    #[test]
    fn a_five_percent_step_at_one_percent_noise_is_found_at_its_run_and_noise_rarely_alarms() {
        let s = Settings::default();
        let steps = simulate(200, 30, Some(0.05), 0.01, 1, &s);
        assert!(steps.exact as f64 >= 0.9 * 200.0, "{steps:?}");
        let flat = simulate(400, 30, None, 0.01, 2, &s);
        assert!(flat.false_alarms as f64 <= 0.02 * 400.0, "{flat:?}");
    }
}
