//! One comparison of a row against its baseline at one look: the test the metric's kind
//! calls for, the change with its interval, and one of four verdicts: a regression or an
//! improvement (significant and at least the minimum effect), no change (equivalence
//! shown: the interval inside ±minimum effect), or inconclusive with the reason and the
//! runs that would settle it. Deterministic: the same samples give the same verdict.

use super::kind::MetricKind;
use super::normal_quantile;
use super::rank::{runs_to_reach, MONTE_CARLO_DRAWS};
use crate::text::p_value;
use crate::Error;

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
    pub fn checked(alpha: f64, min_effect_pct: f64) -> Result<Settings, Error> {
        // Written so that NaN fails both checks.
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(Error::invalid(format!("alpha must be between 0 and 1, not {alpha}")));
        }
        if !(0.0..100.0).contains(&min_effect_pct) {
            return Err(Error::invalid(format!(
                "the minimum effect is a percentage from 0 to 100, not {min_effect_pct}"
            )));
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
    /// Where a change is at stake (the verdict is one, or the interval above clears 0):
    /// the interval at the level the change test is held to (1 − this look's alpha), which
    /// is the one that decides a change; drawn beside `ci`, marked.
    #[serde(serialize_with = "interval_pair_opt", skip_serializing_if = "Option::is_none")]
    pub ci_test: Option<Option<(f64, f64)>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_test_level: Option<f64>,
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
    /// Percentiles whose every value on both sides is the same number: the step of the
    /// tool's buckets is unknown (a histogram's may be a quarter of an octave), so no
    /// interval is claimed.
    #[serde(skip)]
    pub all_equal: bool,
}

fn interval_pair_opt<S: serde::Serializer>(ci: &Option<Option<(f64, f64)>>, s: S) -> Result<S::Ok, S::Error> {
    interval_pair(&ci.flatten(), s)
}

/// An interval as `[low, high]`, with nulls for an unbounded one.
fn interval_pair<S: serde::Serializer>(ci: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    let (l, h) = ci.unwrap_or((f64::NAN, f64::NAN));
    let finite = |v: f64| v.is_finite().then_some(v);
    [finite(l), finite(h)].serialize(s)
}

/// An interval's level as a percentage with the digits it needs: 0.9 → "90", 0.995 → "99.5".
pub fn level_text(level: f64) -> String {
    let s = format!("{:.2}", 100.0 * level);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
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

/// The fewest observations a side for any verdict by a t-test. For a change: with three, two
/// modes of 50/50 split all one way on each side in 2 of 64 same-against-same comparisons
/// (3.1%); with four, in 2 of 256 (0.8%). For no change: with two, both values of a side with
/// two modes come from the one the other side has in 1 of 4 draws.
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
    let p_text = p_text(c);
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
    } else if within && few {
        c.runs_needed = Some(MIN_FOR_CHANGE);
        (
            Verdict::Inconclusive,
            too_few_for_no_change(c, (&test, &p_text, &level, &ci), min),
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

/// The p-value as a reason gives it: "p=0.001, adjusted 0.004" after an adjustment.
fn p_text(c: &Comparison) -> String {
    if c.p_adjusted != c.p {
        let adjusted = p_value(c.p_adjusted);
        format!(
            "{}, adjusted {}",
            p_value(c.p),
            adjusted.trim_start_matches("p=").trim_start_matches("p ")
        )
    } else {
        p_value(c.p)
    }
}

/// An inconclusive row whose interval was widened to the data's step says so; when the step
/// is the minimum effect or more, no number of runs can show "no change".
fn note_step(c: &mut Comparison, min: f64) {
    if c.all_equal && c.verdict == Verdict::Inconclusive {
        c.runs_needed = None;
        c.reason.push_str(&format!(
            "; every value of both sides is {}: percentiles from a histogram's buckets can all fall in one bucket, whose width nothing here shows, so no interval is claimed (a finer measure will settle it: more loops, or the tool's finer buckets)",
            c.centre[0]
        ));
        return;
    }
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

/// Why an interval inside the band on fewer than [`MIN_FOR_CHANGE`] observations a side is
/// not "no change" (`text`: the test's name, the p text, the interval's level and the
/// interval).
fn too_few_for_no_change(c: &Comparison, text: (&str, &str, &str, &str), min: f64) -> String {
    let (test, p_text, level, ci) = text;
    format!(
        "{level} CI of the change {ci} inside ±{:.1}%, but \"no change\" needs ≥ {MIN_FOR_CHANGE} {} per side ({} vs {}): with fewer, one side's values can all come from one mode of a figure with two modes and look like the other's; {test}, {p_text}",
        100.0 * min,
        c.unit.plural(),
        c.n[0],
        c.n[1]
    )
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
    let beyond = c.ci.is_some_and(|(l, h)| l > s.min_effect || h < -s.min_effect);
    format!(
        "{first}; {level} CI of the change {ci} {} ±{:.1}%{estimate}",
        if beyond { "lies beyond" } else { "reaches beyond" },
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
