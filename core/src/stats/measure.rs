//! Measuring one comparison: the test a metric's kind and its noise call for (Welch's
//! t-test on means, Yuen's on trimmed means for heavy tails, Welch's on logarithms for
//! latencies that allow it, the permutation test of ranks otherwise), the change with its
//! interval on the ratio's scale, never finer than the data. The verdict is
//! [`super::verdict::decide`]'s.

use super::hypothesis::{pooled_kurtosis, t_quantile, welch, yuen};
use super::kind::MetricKind;
use super::rank::{hodges_lehmann, rank_test};
use super::verdict::{Comparison, Test, Unit, Verdict};
use super::{median, quartiles};

fn variance(x: &[f64]) -> f64 {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0)
}

fn blank(kind: MetricKind, test: Test, unit: Unit, base: &[f64], new: &[f64]) -> Comparison {
    Comparison {
        kind,
        test,
        unit,
        n: [base.len(), new.len()],
        centre: [f64::NAN, f64::NAN],
        p: 1.0,
        p_adjusted: 1.0,
        alpha: f64::NAN,
        change: f64::NAN,
        ci: None,
        ci_level: f64::NAN,
        ci_test: None,
        ci_test_level: None,
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        look: 0,
        looks: 1,
        runs_needed: None,
        min_p: 1.0,
        rel_sd: f64::NAN,
        sign: 0.0,
        step: None,
        all_equal: false,
    }
}

/// Measures `new` against `base` (observations in the order taken). `tail` is each
/// one-sided level of the interval (0.05: a 90% interval). The verdict is left for
/// [`decide`], after the adjustment across rows.
pub fn measure(base: &[f64], new: &[f64], kind: MetricKind, unit: Unit, tail: f64) -> Comparison {
    let constant = |x: &[f64]| x.iter().all(|v| *v == x[0]);
    let enough = base.len() >= 2 && new.len() >= 2;
    let varies = enough && !(constant(base) && constant(new));
    let mut c = if !kind.by_ranks() && varies && heavy_tails(base, new) {
        measure_yuen(base, new, kind, unit, tail)
    } else if !kind.by_ranks() && varies {
        measure_welch(base, new, kind, unit, tail)
    } else if base.is_empty() || new.is_empty() {
        blank(kind, Test::Welch, unit, base, new)
    } else if kind == MetricKind::Latency && varies && logs_apply(base, new) {
        measure_welch_log(base, new, kind, unit, tail)
    } else {
        measure_ranks(base, new, kind, unit, tail)
    };
    c.ci_level = 1.0 - 2.0 * tail;
    if !kind.by_ranks() && !enough {
        // The t-test needs two observations a side; say so rather than rank two numbers.
        c.min_p = 1.0;
    }
    widen_to_resolution(&mut c, base, new);
    c
}

/// An interval is never finer than the data. Two steps bound what the numbers can show:
/// the one they were printed in, when each side's values lie within it (0.005 s five
/// times, with a tool that prints milliseconds), and the smallest gap between two distinct
/// values when the values fall on a few of them (schbench's bucketed percentiles: 256 and
/// 304, nothing between). The interval is widened to at least ± that step around the
/// estimate. When the noise spans many distinct values, the smallest gap is far inside
/// the interval and nothing changes.
fn widen_to_resolution(c: &mut Comparison, base: &[f64], new: &[f64]) {
    let Some((l, h)) = c.ci else { return };
    let all = || base.iter().chain(new);
    if c.kind == MetricKind::Latency && base.len() + new.len() >= 2 && all().all(|v| *v == base[0]) {
        // One number everywhere: a histogram's bucket, of a width nothing here tells.
        c.ci = None;
        c.all_equal = true;
        return;
    }
    let centre = c.centre[0].abs();
    if !(centre > 0.0 && c.change.is_finite()) {
        return;
    }
    let step = [printed_step(base, new), value_gap(base, new)]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
    // Only a step that widens the interval is one (and is said).
    if step > 0.0 && (c.change - step / centre < l || c.change + step / centre > h) {
        let step = step / centre;
        let mut low = l.min(c.change - step);
        if base.iter().chain(new).all(|v| *v >= 0.0) {
            // Widened, still on the ratio's scale: no value below 0, no change below −100 %.
            low = low.max(-1.0);
        }
        c.ci = Some((low, h.max(c.change + step)));
        c.step = Some(step);
    }
}

/// The step the values were printed in, when each side's values lie within one step.
fn printed_step(base: &[f64], new: &[f64]) -> Option<f64> {
    let all: Vec<f64> = base.iter().chain(new).copied().collect();
    let q = super::resolution(&all)?;
    let spread = |x: &[f64]| {
        let (lo, hi) = x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
        hi - lo
    };
    (spread(base) <= q * 1.000001 && spread(new) <= q * 1.000001).then_some(q)
}

/// The smallest gap between two distinct values of both sides, when some values are tied
/// (values on buckets): what a change can be resolved to. Continuous data has no ties, and
/// when it has one by chance its smallest gap is far inside any interval.
fn value_gap(base: &[f64], new: &[f64]) -> Option<f64> {
    let mut all: Vec<f64> = base.iter().chain(new).copied().collect();
    let n = all.len();
    all.sort_by(f64::total_cmp);
    all.dedup();
    // Values on steps tie often; a continuous measure ties by chance once in a while. A
    // quarter of the values tied (the bound under which percentiles are compared on
    // their logarithms) tells steps from chance.
    if all.len() < 2 || 4 * all.len() > 3 * n {
        return None;
    }
    all.windows(2).map(|w| w[1] - w[0]).min_by(f64::total_cmp)
}

fn measure_welch(base: &[f64], new: &[f64], kind: MetricKind, unit: Unit, tail: f64) -> Comparison {
    let mut c = blank(kind, Test::Welch, unit, base, new);
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (ma, mb) = (mean(base), mean(new));
    let (sa, sb) = (variance(base), variance(new));
    let (va, vb) = (sa / base.len() as f64, sb / new.len() as f64);
    let df = (va + vb).powi(2) / (va.powi(2) / (base.len() as f64 - 1.0) + vb.powi(2) / (new.len() as f64 - 1.0));
    let p = welch(base, new).map(|x| x.2).unwrap_or(1.0);
    let means = Means {
        m: [ma, mb],
        v: [va, vb],
        df,
        p,
    };
    means_compared(&mut c, means, tail, base, new);
    if ma != 0.0 {
        c.rel_sd = ((sa + sb) / 2.0).sqrt() / ma.abs();
    }
    c
}

/// Two means (or trimmed means), baseline first, with their squared standard errors, as a
/// test compared them: at `df` degrees of freedom with p-value `p`.
struct Means {
    m: [f64; 2],
    v: [f64; 2],
    df: f64,
    p: f64,
}

/// Two means compared: the change relative to the baseline's and its Fieller interval
/// (kept above −100% when every value is positive).
fn means_compared(c: &mut Comparison, means: Means, tail: f64, base: &[f64], new: &[f64]) {
    let Means {
        m: [ma, mb],
        v: [va, vb],
        df,
        p,
    } = means;
    c.centre = [ma, mb];
    c.p = p;
    c.p_adjusted = p;
    c.min_p = 0.0;
    c.sign = (mb - ma).signum();
    if ma != 0.0 {
        let q = t_quantile(2.0 * tail, df);
        c.change = (mb - ma) / ma.abs();
        // Values that cannot be negative (counts, times, means of them) have a ratio of
        // means that cannot be either: the change never goes below −100 %.
        let positive = base.iter().chain(new).all(|v| *v >= 0.0);
        c.ci = fieller(ma, mb, va, vb, q, positive);
    }
}

/// The pooled kurtosis above which a mean is compared by its trimmed mean (3 for normal
/// noise; Student's t with 3 degrees of freedom gives 5 to 8 in samples of 20).
pub const HEAVY_TAILS: f64 = 3.5;

/// The fewest observations a side for Yuen's test: with 8, two are trimmed from each end
/// of each side. Below that, the trimmed-off values may be a second mode's few members on
/// one side only, and the trimmed means then differ by the whole gap between the modes.
pub const YUEN_MIN: usize = 8;

/// Whether the noise has heavy tails: both sides with at least [`YUEN_MIN`] observations
/// and the kurtosis of their deviations from their own side's mean above [`HEAVY_TAILS`].
/// A +10% change under t3 noise (sd 5%) is then caught within 10 runs in about 93% of
/// trials instead of 85%; on normal noise the choice raises the false-alarm rate of one
/// look by about a quarter of alpha (0.40% to 0.50% at alpha 0.40%, simulated).
fn heavy_tails(base: &[f64], new: &[f64]) -> bool {
    base.len().min(new.len()) >= YUEN_MIN && pooled_kurtosis(base, new) > HEAVY_TAILS
}

/// Yuen's test of 20%-trimmed means, its change the ratio of the trimmed means and its
/// interval Fieller's on them (with Yuen's standard errors and degrees of freedom).
fn measure_yuen(base: &[f64], new: &[f64], kind: MetricKind, unit: Unit, tail: f64) -> Comparison {
    let Some(y) = yuen(base, new) else {
        return measure_welch(base, new, kind, unit, tail);
    };
    let mut c = blank(kind, Test::Yuen, unit, base, new);
    let ([ma, _], [va, vb]) = (y.means, y.se2);
    let means = Means {
        m: y.means,
        v: y.se2,
        df: y.df,
        p: y.p,
    };
    means_compared(&mut c, means, tail, base, new);
    if ma != 0.0 {
        // The spread of one observation that gives the trimmed means' standard errors.
        let sd2 = (va * base.len() as f64 + vb * new.len() as f64) / 2.0;
        c.rel_sd = sd2.sqrt() / ma.abs();
    }
    c
}

/// Whether percentiles may be compared on their logarithms: every value above 0, and at
/// most a quarter of them tied with another (values that fall on a few buckets are
/// compared by ranks, which take ties as they are).
fn logs_apply(base: &[f64], new: &[f64]) -> bool {
    let mut all: Vec<f64> = base.iter().chain(new).copied().collect();
    if all.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
        return false;
    }
    let n = all.len();
    all.sort_by(f64::total_cmp);
    all.dedup();
    4 * all.len() >= 3 * n
}

/// Welch's t-test on the logarithms: the change is the ratio of the geometric means less
/// one, its interval the exponential of the difference's, so it never reaches −100%.
fn measure_welch_log(base: &[f64], new: &[f64], kind: MetricKind, unit: Unit, tail: f64) -> Comparison {
    let logs = |x: &[f64]| x.iter().map(|v| v.ln()).collect::<Vec<f64>>();
    let (la, lb) = (logs(base), logs(new));
    let mut c = blank(kind, Test::WelchLog, unit, base, new);
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let (ma, mb) = (mean(&la), mean(&lb));
    let (sa, sb) = (variance(&la), variance(&lb));
    let (va, vb) = (sa / la.len() as f64, sb / lb.len() as f64);
    let se = (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va.powi(2) / (la.len() as f64 - 1.0) + vb.powi(2) / (lb.len() as f64 - 1.0));
    let d = mb - ma;
    c.centre = [ma.exp(), mb.exp()];
    c.p = welch(&la, &lb).map(|x| x.2).unwrap_or(1.0);
    c.p_adjusted = c.p;
    c.min_p = 0.0;
    c.sign = d.signum();
    c.change = d.exp_m1();
    let q = t_quantile(2.0 * tail, df);
    c.ci = Some(((d - q * se).exp_m1(), (d + q * se).exp_m1()));
    c.rel_sd = ((sa + sb) / 2.0).sqrt();
    c
}

/// The interval of the relative change (mb − ma) / |ma| by Fieller's theorem: the ratios r
/// with (mb − r·ma)² ≤ q²(vb + r²·va), where va and vb are the squared standard errors of
/// the means. 0 lies inside exactly when Welch's test at the same level does not reject,
/// and the interval is on the ratio's own scale: it is not symmetric, and for a `positive`
/// quantity (no value below 0) the ratio is kept at 0 or above, so the change never goes
/// below −100%. `None` (unbounded) when the baseline's mean is not clear of 0.
fn fieller(ma: f64, mb: f64, va: f64, vb: f64, q: f64, positive: bool) -> Option<(f64, f64)> {
    let a = ma * ma - q * q * va;
    if a.is_nan() || a <= 0.0 {
        return None;
    }
    // vb·a + mb²·va: not negative when a > 0.
    let root = (ma * ma * vb + mb * mb * va - q * q * va * vb).max(0.0).sqrt();
    let (mut r1, r2) = ((ma * mb - q * root) / a, (ma * mb + q * root) / a);
    if positive {
        r1 = r1.max(0.0);
    }
    // (mb − ma)/|ma| is r − 1 for a positive baseline and 1 − r for a negative one.
    Some(if ma > 0.0 {
        (r1 - 1.0, r2 - 1.0)
    } else {
        (1.0 - r2, 1.0 - r1)
    })
}

fn measure_ranks(base: &[f64], new: &[f64], kind: MetricKind, unit: Unit, tail: f64) -> Comparison {
    let rt = rank_test(base, new).expect("both sides have observations");
    let test = if rt.exact {
        Test::RankExact
    } else {
        Test::RankMonteCarlo
    };
    let mut c = blank(kind, test, unit, base, new);
    let (ma, mb) = (median(&mut base.to_vec()), median(&mut new.to_vec()));
    // Positive values: the shift of their logarithms (the same test, the ranks being the
    // same), so that the change is a ratio and its interval stays above −100%.
    let positive = base.iter().chain(new).all(|v| *v > 0.0);
    let logs = |x: &[f64]| x.iter().map(|v| v.ln()).collect::<Vec<f64>>();
    let (shift, ci) = match positive {
        true => hodges_lehmann(&logs(base), &logs(new), tail),
        false => hodges_lehmann(base, new, tail),
    };
    c.centre = [ma, mb];
    c.p = rt.p;
    c.p_adjusted = rt.p;
    c.min_p = rt.min_p;
    c.sign = if shift != 0.0 {
        shift.signum()
    } else {
        rt.rank_shift.signum()
    };
    let all_zero = base.iter().chain(new).all(|v| *v == 0.0);
    if all_zero {
        (c.change, c.ci) = (0.0, Some((0.0, 0.0)));
    } else if positive {
        c.change = shift.exp_m1();
        c.ci = ci.map(|(l, h)| (l.exp_m1(), h.exp_m1()));
    } else if ma != 0.0 {
        c.change = shift / ma.abs();
        c.ci = ci.map(|(l, h)| (l / ma.abs(), h / ma.abs()));
    }
    if ma != 0.0 && !all_zero {
        // The interquartile range over 1.349 estimates a normal spread; pooled.
        let iqr = |x: &[f64]| {
            let (q1, q3) = quartiles(x);
            (q3 - q1) / 1.349
        };
        c.rel_sd = ((iqr(base).powi(2) + iqr(new).powi(2)) / 2.0).sqrt() / ma.abs();
    }
    c
}
