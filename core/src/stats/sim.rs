//! Simulated measurements for holding the verdicts to their promises: the noise shapes
//! kernel benchmarks show (normal, heavy-tailed, two modes, integer latency buckets,
//! offsets that differ from boot to boot), seeded, and the trials the test suite and
//! `kreg bench verdicts` run over them.

use super::judge::{judge, RowInput};
use super::kind::MetricKind;
use super::looks::Looks;
use super::rng::Rng;
use super::units::Side;
use super::verdict::{Settings, Verdict};

/// The shape of the noise around a centre.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Normal with this coefficient of variation.
    Normal(f64),
    /// Lognormal (a heavy right tail) with this coefficient of variation.
    LogNormal(f64),
    /// 70% in one mode, 30% in another 20% higher, each with 1% spread.
    Bimodal,
    /// Student's t with 3 degrees of freedom (heavy tails), scaled to this standard
    /// deviation relative to the centre.
    T3(f64),
    /// Lognormal CoV 10% around 20, rounded to whole numbers (microsecond buckets).
    Buckets,
    /// Gamma (skewed right) with this coefficient of variation.
    Gamma(f64),
    /// Normal CoV 3% within a boot, plus an offset per boot of this CoV.
    BootOffset(f64),
    /// The same, each side measured in one boot (`boots: 1`, the default).
    OneBoot(f64),
    /// A percentile: lognormal with CoV `run` from run to run, an offset per boot of CoV
    /// `boot`, three runs a boot.
    Percentile { run: f64, boot: f64 },
    /// The same around 20, printed in whole microseconds (schbench's wakeup p99 on a fast
    /// machine: 19, 20, 21 …).
    WholePercentile { run: f64, boot: f64 },
    /// A percentile as histogram-based tools report it: lognormal with this CoV around the
    /// centre, each value the nearest point of a grid of `per_octave` steps per doubling
    /// (2^(k/3), 2^(k/4): steps proportional to the value).
    LogGrid { per_octave: u32, cov: f64 },
}

/// A simulated case: noise, the metric's kind, and how the runs are taken.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Case {
    pub name: &'static str,
    pub noise: Noise,
    pub kind: MetricKind,
}

impl Case {
    /// The centre the samples are drawn around.
    fn centre(&self) -> f64 {
        if matches!(self.noise, Noise::Buckets | Noise::WholePercentile { .. }) {
            20.0
        } else {
            100.0
        }
    }

    /// Boots per side and runs per boot for a design of `runs` observations per side: a
    /// case with boot offsets spreads three runs over each boot.
    pub fn runs_per_boot(&self) -> usize {
        if matches!(
            self.noise,
            Noise::BootOffset(_) | Noise::Percentile { .. } | Noise::WholePercentile { .. }
        ) {
            3
        } else {
            1
        }
    }
}

/// Every case the verdicts are held to.
pub fn cases() -> Vec<Case> {
    use MetricKind::*;
    use Noise::*;
    let c = |name, noise, kind| Case { name, noise, kind };
    vec![
        c("normal CoV 1%", Normal(0.01), Mean),
        c("normal CoV 3%", Normal(0.03), Mean),
        c("normal CoV 10%", Normal(0.10), Mean),
        c("lognormal CoV 3%", LogNormal(0.03), Mean),
        c("lognormal CoV 10%", LogNormal(0.10), Mean),
        c("lognormal CoV 3% (percentile)", LogNormal(0.03), Latency),
        c("lognormal CoV 10% (percentile)", LogNormal(0.10), Latency),
        c("gamma CoV 30% (skewed)", Gamma(0.30), Mean),
        c("bimodal 70/30, modes 20% apart", Bimodal, Mean),
        c("bimodal 70/30 (percentile)", Bimodal, Latency),
        c("t3 heavy tails, sd 5%", T3(0.05), Mean),
        c("integer buckets, many ties", Buckets, Latency),
        c("boot offset 1%, 3 runs/boot", BootOffset(0.01), Mean),
        c("boot offset 2%, 3 runs/boot", BootOffset(0.02), Mean),
        c(
            "p99 5% a run, 1% a boot, 3 runs/boot",
            Percentile { run: 0.05, boot: 0.01 },
            Latency,
        ),
        c(
            "p99 ~20 us whole, 5% a run, 1% a boot, 3 runs/boot",
            WholePercentile { run: 0.05, boot: 0.01 },
            Latency,
        ),
        c(
            "percentile on a 2^(1/3) grid, CoV 10%",
            LogGrid {
                per_octave: 3,
                cov: 0.10,
            },
            Latency,
        ),
        c(
            "percentile on a 2^(1/4) grid, CoV 10%",
            LogGrid {
                per_octave: 4,
                cov: 0.10,
            },
            Latency,
        ),
        c("boot offset 1%, one boot a side", OneBoot(0.01), Mean),
        c("boot offset 2%, one boot a side", OneBoot(0.02), Mean),
    ]
}

/// Normal draws by Box–Muller over the seeded generator.
pub fn normal(rng: &mut Rng) -> f64 {
    let (u1, u2) = (rng.uniform(), rng.uniform());
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A gamma draw of shape `k` ≥ 1 and scale 1 (Marsaglia and Tsang's method).
fn gamma(rng: &mut Rng, k: f64) -> f64 {
    let d = k - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v > 0.0 && rng.uniform().ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

pub fn lognormal(rng: &mut Rng, mean: f64, cov: f64) -> f64 {
    let sigma = (1.0 + cov * cov).ln().sqrt();
    mean * (sigma * normal(rng) - sigma * sigma / 2.0).exp()
}

/// `boots` boots of `per_boot` runs each around `centre` (scaled by `factor`), the boots
/// labelled `side_label` and their number.
pub fn draw(case: &Case, rng: &mut Rng, factor: f64, boots: usize, per_boot: usize, side_label: &str) -> Side {
    let centre = case.centre() * factor;
    let mut side = Side::default();
    for boot in 0..boots {
        let offset = match case.noise {
            Noise::BootOffset(sd)
            | Noise::OneBoot(sd)
            | Noise::Percentile { boot: sd, .. }
            | Noise::WholePercentile { boot: sd, .. } => 1.0 + sd * normal(rng),
            _ => 1.0,
        };
        for _ in 0..per_boot {
            let v = match case.noise {
                Noise::Normal(cov) => centre * (1.0 + cov * normal(rng)),
                Noise::LogNormal(cov) => lognormal(rng, centre, cov),
                Noise::Gamma(cov) => centre * gamma(rng, 1.0 / (cov * cov)) * cov * cov,
                Noise::Bimodal => {
                    let mode = if rng.uniform() < 0.7 { centre } else { centre * 1.2 };
                    mode * (1.0 + 0.01 * normal(rng))
                }
                Noise::Buckets => lognormal(rng, centre, 0.10).round(),
                Noise::T3(sd) => {
                    // t3 = z / sqrt(χ²₃ / 3), whose variance is 3.
                    let chi = (0..3).map(|_| normal(rng).powi(2)).sum::<f64>();
                    let t = normal(rng) / (chi / 3.0).sqrt();
                    centre * (1.0 + sd * t / 3f64.sqrt())
                }
                Noise::BootOffset(_) | Noise::OneBoot(_) => centre * offset * (1.0 + 0.03 * normal(rng)),
                Noise::Percentile { run, .. } => lognormal(rng, centre * offset, run),
                Noise::WholePercentile { run, .. } => lognormal(rng, centre * offset, run).round(),
                Noise::LogGrid { per_octave, cov } => {
                    let k = (lognormal(rng, centre, cov).log2() * per_octave as f64).round();
                    2f64.powf(k / per_octave as f64)
                }
            };
            side.values.push(v);
            side.boots.push(format!("{side_label}{boot}").into());
        }
    }
    side
}

/// How a trial takes its runs: a fixed count, or adaptive between two counts (per side, in
/// observations: boots when the case has boot offsets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Design {
    Fixed(usize),
    Adaptive(usize, usize),
}

/// What the trials of one case and one true change gave.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub trials: usize,
    pub regressions: usize,
    pub improvements: usize,
    pub no_change: usize,
    /// Changes seen within one boot each, not regressions or improvements: in the
    /// direction of a regression, and of an improvement.
    pub unconfirmed_regressions: usize,
    pub unconfirmed_improvements: usize,
    /// Sum of the observations per side the verdicts were given at.
    pub runs: usize,
}

impl Tally {
    pub fn share(&self, n: usize) -> f64 {
        n as f64 / self.trials.max(1) as f64
    }
    pub fn mean_runs(&self) -> f64 {
        self.runs as f64 / self.trials.max(1) as f64
    }
    /// Regressions or improvements: false alarms when nothing changed.
    pub fn alarms(&self) -> usize {
        self.regressions + self.improvements
    }
    /// A worse side found: a regression, confirmed or within one boot each.
    pub fn caught(&self) -> usize {
        self.regressions + self.unconfirmed_regressions
    }
    /// A change found the wrong way, confirmed or not.
    pub fn wrong_way(&self) -> usize {
        self.improvements + self.unconfirmed_improvements
    }
}

/// `trials` comparisons of a baseline with a side whose centre is `1 + change` times it,
/// for a lower-is-better metric (so a positive change is a regression).
pub fn run_trials(case: &Case, design: Design, change: f64, trials: usize, seed: u64, s: &Settings) -> Tally {
    let mut rng = Rng::new(seed);
    let (looks, max) = match design {
        Design::Fixed(n) => (Looks::fixed(), n),
        Design::Adaptive(lo, hi) => (Looks::adaptive(lo, hi), hi),
    };
    let per_boot = case.runs_per_boot();
    let (boots, runs) = if per_boot > 1 { (max, per_boot) } else { (1, max) };
    // One boot a side: each side's boot its own, as two kernels'. Otherwise the runs of
    // both sides share their boots (two variants of one kernel), or the boots are the unit:
    // the test's own calibration is what is measured.
    let labels = match case.noise {
        Noise::OneBoot(_) => ("a", "b"),
        _ => ("s", "s"),
    };
    let mut t = Tally {
        trials,
        ..Tally::default()
    };
    for _ in 0..trials {
        let row = RowInput {
            base: draw(case, &mut rng, 1.0, boots, runs, labels.0),
            new: draw(case, &mut rng, 1.0 + change, boots, runs, labels.1),
            kind: case.kind,
            higher_is_better: false,
            by_boot: per_boot > 1,
        };
        let c = judge(&[row], &looks, s, true).pop().flatten().expect("a comparison");
        t.runs += c.n[0] * if per_boot > 1 { per_boot } else { 1 };
        t.count(c.verdict);
    }
    t
}

impl Tally {
    fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Regression => self.regressions += 1,
            Verdict::Improvement => self.improvements += 1,
            Verdict::NoChange => self.no_change += 1,
            Verdict::UnconfirmedRegression => self.unconfirmed_regressions += 1,
            Verdict::UnconfirmedImprovement => self.unconfirmed_improvements += 1,
            Verdict::Inconclusive => {}
        }
    }
}

/// Rows of the simulated report: schbench's shape, 12 latency percentiles (lognormal, CoV
/// 5% from run to run) and 6 means or throughputs (normal, CoV 3%).
pub const REPORT_ROWS: usize = 18;
const REPORT_PERCENTILES: usize = 12;
/// How much of each row's run-to-run noise is the run's own, shared by all its rows (a run
/// that went slow goes slow in every figure): the correlation between two rows.
pub const REPORT_CORRELATION: f64 = 0.8;

/// What the trials of a whole report gave: its rows' verdicts counted together
/// (`rows.trials` = trials × rows), and the reports with at least one false alarm.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReportTally {
    pub rows: Tally,
    pub reports_with_alarm: usize,
    pub reports: usize,
}

/// One run's figures for the simulated report: each row's value, correlated through the
/// run's shared factor.
fn report_run(rng: &mut Rng, factor: f64) -> Vec<f64> {
    let shared = normal(rng);
    let rho = REPORT_CORRELATION;
    (0..REPORT_ROWS)
        .map(|r| {
            let z = rho * shared + (1.0 - rho * rho).sqrt() * normal(rng);
            if r < REPORT_PERCENTILES {
                let sigma = (1.0f64 + 0.05 * 0.05).ln().sqrt();
                100.0 * factor * (sigma * z - sigma * sigma / 2.0).exp()
            } else {
                100.0 * factor * (1.0 + 0.03 * z)
            }
        })
        .collect()
}

/// `trials` reports of [`REPORT_ROWS`] rows, every row of the new side `1 + change` times
/// the baseline's (lower is better), judged together as a report judges them (one
/// adjustment across the rows at each look).
pub fn run_report_trials(design: Design, change: f64, trials: usize, seed: u64, s: &Settings) -> ReportTally {
    let mut rng = Rng::new(seed);
    let (looks, max) = match design {
        Design::Fixed(n) => (Looks::fixed(), n),
        Design::Adaptive(lo, hi) => (Looks::adaptive(lo, hi), hi),
    };
    let mut t = ReportTally {
        reports: trials,
        rows: Tally {
            trials: trials * REPORT_ROWS,
            ..Tally::default()
        },
        ..ReportTally::default()
    };
    for _ in 0..trials {
        let mut side = |factor: f64| -> Vec<Vec<f64>> { (0..max).map(|_| report_run(&mut rng, factor)).collect() };
        let (base, new) = (side(1.0), side(1.0 + change));
        let rows: Vec<RowInput> = (0..REPORT_ROWS)
            .map(|r| RowInput {
                base: Side::of_runs(&base.iter().map(|run| run[r]).collect::<Vec<_>>()),
                new: Side::of_runs(&new.iter().map(|run| run[r]).collect::<Vec<_>>()),
                kind: if r < REPORT_PERCENTILES {
                    MetricKind::Latency
                } else {
                    MetricKind::Mean
                },
                higher_is_better: false,
                by_boot: false,
            })
            .collect();
        let mut alarm = false;
        for c in judge(&rows, &looks, s, true).into_iter().flatten() {
            t.rows.runs += c.n[0];
            t.rows.count(c.verdict);
            alarm |= c.verdict.is_change();
        }
        t.reports_with_alarm += usize::from(alarm);
    }
    t
}

/// How often an inconclusive row's "about N runs per side would settle it" does: rows of
/// `case` with a true `change`, judged once at `first` runs a side; each inconclusive one
/// that gives an estimate N (up to 2000) is measured again, afresh, at N runs a side under
/// one look. Returns (rows that settled then, rows with an estimate).
pub fn settle_trials(case: &Case, first: usize, change: f64, trials: usize, seed: u64, s: &Settings) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let judge_at = |rng: &mut Rng, n: usize| {
        let row = RowInput {
            base: draw(case, rng, 1.0, 1, n, "s"),
            new: draw(case, rng, 1.0 + change, 1, n, "s"),
            kind: case.kind,
            higher_is_better: false,
            by_boot: false,
        };
        judge(&[row], &Looks::fixed(), s, true)
            .pop()
            .flatten()
            .expect("a comparison")
    };
    let (mut settled, mut estimated) = (0, 0);
    for _ in 0..trials {
        let c = judge_at(&mut rng, first);
        let Some(n) = c
            .runs_needed
            .filter(|n| *n <= 2000 && c.verdict == Verdict::Inconclusive)
        else {
            continue;
        };
        estimated += 1;
        if judge_at(&mut rng, n).verdict != Verdict::Inconclusive {
            settled += 1;
        }
    }
    (settled, estimated)
}
