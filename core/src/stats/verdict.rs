//! One comparison of a row against its baseline at one look: the test the metric's kind
//! calls for, the change with its interval, and one of four verdicts: a regression or an
//! improvement (significant and at least the minimum effect), no change (equivalence
//! shown: the interval inside ±minimum effect), or inconclusive with the reason and the
//! runs that would settle it. Deterministic: the same samples give the same verdict.

use super::kind::MetricKind;
use super::rank::{hodges_lehmann, rank_test, runs_to_reach, MONTE_CARLO_DRAWS};
use super::tests_impl::{pooled_kurtosis, t_quantile, welch, yuen};
use super::{median, normal_quantile, quartiles};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    #[serde(rename = "regression")]
    Regression,
    #[serde(rename = "improvement")]
    Improvement,
    #[serde(rename = "no change")]
    NoChange,
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// A change the test calls significant, measured within one boot of each side: two boots
    /// of one kernel can differ as much (memory layout, caches, interrupt placement), so it
    /// is not counted as a regression until boots (`boots: 2` or more) confirm it.
    #[serde(rename = "unconfirmed regression")]
    UnconfirmedRegression,
    #[serde(rename = "unconfirmed improvement")]
    UnconfirmedImprovement,
}

impl Verdict {
    /// Every verdict, in the order pages list them.
    pub const ALL: [Verdict; 6] = [
        Verdict::Regression,
        Verdict::Improvement,
        Verdict::UnconfirmedRegression,
        Verdict::UnconfirmedImprovement,
        Verdict::NoChange,
        Verdict::Inconclusive,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
            Verdict::UnconfirmedRegression => "unconfirmed regression",
            Verdict::UnconfirmedImprovement => "unconfirmed improvement",
        }
    }

    /// A regression or an improvement (confirmed: not one boot each).
    pub fn is_change(self) -> bool {
        matches!(self, Verdict::Regression | Verdict::Improvement)
    }

    /// A change seen within one boot of each side, not confirmed across boots.
    pub fn is_unconfirmed(self) -> bool {
        matches!(self, Verdict::UnconfirmedRegression | Verdict::UnconfirmedImprovement)
    }

    /// What a change becomes when each side was measured on boots of its own that the
    /// analysis cannot tell apart from the kernel (see [`Verdict::UnconfirmedRegression`]).
    pub fn unconfirmed(self) -> Verdict {
        match self {
            Verdict::Regression => Verdict::UnconfirmedRegression,
            Verdict::Improvement => Verdict::UnconfirmedImprovement,
            v => v,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// Welch's t-test on the means.
    Welch,
    /// Welch's t-test on the logarithms of the values: percentiles that are all positive
    /// and rarely tied, compared by the ratio of their geometric means. It reaches a small
    /// alpha with a few observations a side, where a rank test cannot.
    WelchLog,
    /// Yuen's test of 20%-trimmed means: means and throughputs whose noise has heavy tails
    /// (see [`HEAVY_TAILS`]), where a few wild runs would swamp Welch's test.
    Yuen,
    /// The permutation test of the rank sum on midranks, counted exactly.
    RankExact,
    /// The same test, by Monte Carlo with a fixed seed.
    RankMonteCarlo,
}

impl Test {
    /// Whether the test is on ranks (its smallest p is bounded by the sample sizes).
    pub fn by_ranks(self) -> bool {
        matches!(self, Test::RankExact | Test::RankMonteCarlo)
    }

    pub fn name(self) -> String {
        match self {
            Test::Welch => "Welch t-test".into(),
            Test::WelchLog => "Welch t-test on log values".into(),
            Test::Yuen => "Yuen's test of 20%-trimmed means (heavy tails)".into(),
            Test::RankExact => "exact permutation test on midranks".into(),
            Test::RankMonteCarlo => {
                format!("permutation test on midranks ({MONTE_CARLO_DRAWS} draws, fixed seed)")
            }
        }
    }
}

/// What the analysis counts as one observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Each run (iteration) is one observation.
    Run,
    /// Each boot is one observation (its runs' mean, or median for rank kinds).
    Boot,
}

impl Unit {
    pub fn plural(self) -> &'static str {
        match self {
            Unit::Run => "runs",
            Unit::Boot => "boots",
        }
    }
}

/// Settings a report states at its top.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The false-alarm rate per row, spent over the looks of an adaptive run.
    pub alpha: f64,
    /// The smallest change (fraction, 0.02 = 2%) worth calling a change.
    pub min_effect: f64,
    /// Each one-sided test of the equivalence test (the interval shown is 1 − 2× this).
    pub equivalence_alpha: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            // Half of the 1% false-alarm goal: room for the t-test's approximation on
            // skewed data and for the noise of any one study.
            alpha: 0.005,
            min_effect: 0.02,
            equivalence_alpha: 0.05,
        }
    }
}

impl Settings {
    /// Settings from a user's alpha and minimum effect (in percent), checked.
    pub fn checked(alpha: f64, min_effect_pct: f64) -> Result<Settings, String> {
        // Written so that NaN fails both checks.
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(format!("alpha must be between 0 and 1, not {alpha}"));
        }
        if !(0.0..100.0).contains(&min_effect_pct) {
            return Err(format!(
                "the minimum effect is a percentage from 0 to 100, not {min_effect_pct}"
            ));
        }
        Ok(Settings {
            alpha,
            min_effect: min_effect_pct / 100.0,
            ..Settings::default()
        })
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub kind: MetricKind,
    pub test: Test,
    pub unit: Unit,
    /// Observations per side: [baseline, new].
    pub n: [usize; 2],
    /// Mean (Welch) or median (ranks) of each side's observations.
    pub centre: [f64; 2],
    pub p: f64,
    /// After the multiple-comparison control across the rows of the same look.
    pub p_adjusted: f64,
    /// The alpha this look could spend.
    pub alpha: f64,
    /// Estimated change as a fraction of the baseline (difference of means, or the
    /// Hodges–Lehmann shift over the baseline median); NaN when the baseline is 0.
    pub change: f64,
    /// Interval of the change at `ci_level`; `None` when the data cannot bound it
    /// (written `[null, null]`).
    #[serde(serialize_with = "interval_pair")]
    pub ci: Option<(f64, f64)>,
    pub ci_level: f64,
    pub verdict: Verdict,
    pub reason: String,
    /// The look (0-based) that gave the verdict, of `looks`.
    pub look: usize,
    pub looks: usize,
    /// Runs (or boots) per side that would likely settle an inconclusive row.
    pub runs_needed: Option<usize>,
    /// The smallest p the test could give with these observations.
    #[serde(skip)]
    pub min_p: f64,
    /// The spread of one observation relative to the baseline's centre.
    #[serde(skip)]
    pub rel_sd: f64,
    /// The direction when the change is not a number (+1: larger).
    #[serde(skip)]
    pub sign: f64,
    /// When the observations vary by less than the step they were printed in, or fall on a
    /// few distinct values: that step (or the smallest gap), relative to the baseline's
    /// centre. The interval is then at least ± this wide.
    #[serde(skip)]
    pub step: Option<f64>,
}

/// An interval as `[low, high]`, with nulls for an unbounded one.
fn interval_pair<S: serde::Serializer>(ci: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    let (l, h) = ci.unwrap_or((f64::NAN, f64::NAN));
    let finite = |v: f64| v.is_finite().then_some(v);
    [finite(l), finite(h)].serialize(s)
}

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
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        look: 0,
        looks: 1,
        runs_needed: None,
        min_p: 1.0,
        rel_sd: f64::NAN,
        sign: 0.0,
        step: None,
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
    let centre = c.centre[0].abs();
    if !(centre > 0.0 && c.change.is_finite()) {
        return;
    }
    let step = [printed_step(base, new), value_gap(base, new)]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
    if step > 0.0 {
        let step = step / centre;
        c.ci = Some((l.min(c.change - step), h.max(c.change + step)));
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
    if all.len() < 2 || all.len() == n {
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
    c.centre = [ma, mb];
    c.p = welch(base, new).map(|x| x.2).unwrap_or(1.0);
    c.p_adjusted = c.p;
    c.min_p = 0.0;
    c.sign = (mb - ma).signum();
    if ma != 0.0 {
        let q = t_quantile(2.0 * tail, df);
        c.change = (mb - ma) / ma.abs();
        let positive = base.iter().chain(new).all(|v| *v > 0.0);
        c.ci = fieller(ma, mb, va, vb, q, positive);
        c.rel_sd = ((sa + sb) / 2.0).sqrt() / ma.abs();
    }
    c
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
    let ([ma, mb], [va, vb]) = (y.means, y.se2);
    c.centre = [ma, mb];
    c.p = y.p;
    c.p_adjusted = y.p;
    c.min_p = 0.0;
    c.sign = (mb - ma).signum();
    if ma != 0.0 {
        let q = t_quantile(2.0 * tail, y.df);
        c.change = (mb - ma) / ma.abs();
        let positive = base.iter().chain(new).all(|v| *v > 0.0);
        c.ci = fieller(ma, mb, va, vb, q, positive);
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
/// quantity (every value above 0) the ratio is kept above 0, so the change never goes
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

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

/// An interval of the change as text: "[-1.2%, +3.4%]" or "unbounded".
pub fn interval_text(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((l, h)) => format!("[{}, {}]", pct(l), pct(h)),
        None => "unbounded".into(),
    }
}

/// The fewest observations a side for a regression or improvement by a t-test: with three,
/// two modes of 50/50 split all one way on each side in 2 of 64 same-against-same
/// comparisons (3.1%); with four, in 2 of 256 (0.8%).
pub const MIN_FOR_CHANGE: usize = 4;

/// Settles the verdict of `c` at a look that may spend `alpha`, after the adjustment has
/// set `p_adjusted`. `higher_is_better` gives the direction.
pub fn decide(c: &mut Comparison, higher_is_better: bool, alpha: f64, s: &Settings) {
    c.alpha = alpha;
    c.runs_needed = None;
    let min = s.min_effect;
    let unit = c.unit.plural();
    let test = c.test.name();
    let level = format!("{:.0}%", 100.0 * c.ci_level);
    let ci = interval_text(c.ci);
    let within = c.ci.is_some_and(|(l, h)| l >= -min && h <= min);
    let significant = c.p_adjusted < alpha;
    let p_text = if c.p_adjusted != c.p {
        format!("p={:.2e}, adjusted {:.2e}", c.p, c.p_adjusted)
    } else {
        format!("p={:.2e}", c.p)
    };
    let change_verdict = |sign: f64| {
        if (sign < 0.0) == higher_is_better {
            Verdict::Regression
        } else {
            Verdict::Improvement
        }
    };
    let few = c.n[0].min(c.n[1]) < MIN_FOR_CHANGE && !c.test.by_ranks();
    let (verdict, reason) = if c.n[0] < 2 || c.n[1] < 2 {
        c.runs_needed = Some(2);
        (
            Verdict::Inconclusive,
            format!("too few {unit} ({} vs {}): needs at least 2 per side", c.n[0], c.n[1]),
        )
    } else if significant && few && (c.change.is_nan() || c.change.abs() >= min) {
        c.runs_needed = Some(MIN_FOR_CHANGE);
        (
            Verdict::Inconclusive,
            too_few_for_change(c, (&test, &p_text, &level, &ci), alpha),
        )
    } else if significant && c.change.is_nan() {
        (
            change_verdict(c.sign),
            format!(
                "{test}, {p_text} < alpha {alpha:.2e}; the baseline's centre is 0, so the change has no relative size"
            ),
        )
    } else if significant && c.change.abs() >= min {
        (
            change_verdict(c.change),
            format!(
                "{test}, {p_text} < alpha {alpha:.2e}; change {} {level} CI {ci}, at least the minimum effect ±{:.1}%",
                pct(c.change),
                100.0 * min
            ),
        )
    } else if within {
        let why = if significant { "a real but smaller change; " } else { "" };
        (
            Verdict::NoChange,
            format!("{why}{level} CI of the change {ci} inside ±{:.1}% (equivalence: two one-sided tests); {test}, {p_text}", 100.0 * min),
        )
    } else if c.min_p >= alpha {
        let need = if c.test.by_ranks() { runs_to_reach(alpha) } else { 2 };
        c.runs_needed = Some(need.max(c.n[0].max(c.n[1]) + 1));
        (
            Verdict::Inconclusive,
            format!(
                "needs ≥ {need} {unit} per side: the {test} cannot reach p < {alpha:.2e} with {} vs {} (its smallest p here is {:.2e}); {need} is for values without ties at this look's alpha, tied values need more; {level} CI of the change {ci}",
                c.n[0], c.n[1], c.min_p
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            open_reason(c, s, alpha, significant, (&test, &p_text, &level, &ci)),
        )
    };
    c.verdict = verdict;
    c.reason = reason;
    note_step(c, min);
}

/// An inconclusive row whose interval was widened to the data's step says so; when the step
/// is the minimum effect or more, no number of runs can show "no change".
fn note_step(c: &mut Comparison, min: f64) {
    if let (Verdict::Inconclusive, Some(step)) = (c.verdict, c.step) {
        c.reason.push_str(&format!(
            "; the values fall on steps of {:.1}% of the baseline (the step they are printed in, or the gap between the few distinct values they take), so the interval is at least that wide",
            100.0 * step
        ));
        if step >= min {
            c.runs_needed = None;
            c.reason
                .push_str(": more runs will not settle it, a finer measure will (longer runs, more loops)");
        }
    }
}

/// Why a significant change on fewer than [`MIN_FOR_CHANGE`] observations a side is not a
/// verdict (`text`: the test's name, the p text, the interval's level and the interval).
fn too_few_for_change(c: &Comparison, text: (&str, &str, &str, &str), alpha: f64) -> String {
    let (test, p_text, level, ci) = text;
    format!(
        "{test}, {p_text} < alpha {alpha:.2e}, change {} {level} CI {ci}, but a change needs ≥ {MIN_FOR_CHANGE} {} per side ({} vs {}): with fewer, a figure with two modes (a cache that warms or not, a task placed on one node or the other) drawn all one way on each side passes for a shift in up to 3% of same-against-same comparisons",
        pct(c.change),
        c.unit.plural(),
        c.n[0],
        c.n[1]
    )
}

/// Why a row whose test can reach alpha is still open, with the runs that would settle it
/// (`text`: the test's name, the p text, the interval's level and the interval).
fn open_reason(
    c: &mut Comparison,
    s: &Settings,
    alpha: f64,
    significant: bool,
    text: (&str, &str, &str, &str),
) -> String {
    let (test, p_text, level, ci) = text;
    c.runs_needed = runs_to_settle(c, s, alpha);
    let estimate = match c.runs_needed {
        Some(n) => format!("; about {n} {} per side would settle it", c.unit.plural()),
        None => String::new(),
    };
    let first = if significant {
        format!(
            "{test}, {p_text} < alpha but the change {} is below the minimum effect",
            pct(c.change)
        )
    } else {
        format!("{test}, {p_text} not below alpha {alpha:.2e}")
    };
    format!(
        "{first}; {level} CI of the change {ci} reaches beyond ±{:.1}%{estimate}",
        100.0 * s.min_effect
    )
}

/// Observations per side that would settle the row if the change and spread seen were the
/// truth (80% power by a normal approximation at this look's alpha): enough to show the
/// change if it is at least the minimum effect, or the equivalence if it is below. A rough
/// guide, not a promise: the change seen is itself noisy (`kreg bench verdicts` prints how
/// often such an estimate settled a row in simulation).
fn runs_to_settle(c: &Comparison, s: &Settings, alpha: f64) -> Option<usize> {
    if !c.rel_sd.is_finite() || !c.change.is_finite() {
        return None;
    }
    let z_power = 0.8416;
    let d = c.change.abs();
    let per_side = if d >= s.min_effect {
        2.0 * ((normal_quantile(1.0 - alpha / 2.0) + z_power) * c.rel_sd / d).powi(2)
    } else {
        let z = normal_quantile(1.0 - s.equivalence_alpha);
        2.0 * ((z + z_power) * c.rel_sd / (s.min_effect - d)).powi(2)
    };
    // Rank tests need about π/3 times the runs of a t-test on normal data.
    let per_side = if c.test.by_ranks() {
        per_side * std::f64::consts::PI / 3.0
    } else {
        per_side
    };
    let floor = if c.test.by_ranks() { runs_to_reach(alpha) } else { 2 };
    let n = per_side.ceil().min(1e6) as usize;
    Some(n.max(floor).max(c.n[0].max(c.n[1]) + 1))
}
