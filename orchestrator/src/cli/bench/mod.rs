//! `kreg bench`: figures the README promises, measured. `verdicts` (here): the verdicts'
//! promises by simulation — false alarms, equivalence shown, power against a 10% change and
//! the runs it took, for every noise shape the test suite holds them to; the agent's, the
//! bisection's, the change points', the dashboard's and the fleet's in their own files.

mod agent;
mod bisect;
mod changepoints;
mod dashboard;
mod files;
mod fleet;

use std::process::ExitCode;

use anyhow::Result;
use comfy_table::{presets, Table};
use kreg::stats::sim::{cases, run_trials, Case, Design};
use kreg::stats::Settings;

#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// False alarms, "no change" and power of the verdicts on simulated samples.
    Verdicts {
        /// Comparisons per case and design.
        #[arg(long, default_value_t = 20_000)]
        trials: usize,
        /// Seed of the simulations.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// The dashboard's server-side time and page weight for a run of many samples (needs
    /// a database: DATABASE_URL or the private cluster; the run it makes stays there).
    Dashboard {
        /// Samples in the run (kernels × variants × iterations × 10 metrics).
        #[arg(long, default_value_t = 10_000)]
        samples: usize,
        /// Loads of each page.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// Small finished runs stored besides, for the runs list.
        #[arg(long, default_value_t = 0)]
        runs: usize,
        /// Pages following the run live (each fetching the report's live rows on every
        /// change): the server time each change costs per viewer.
        #[arg(long, default_value_t = 0)]
        viewers: usize,
    },
    /// What the agent costs the machine it runs on: memory idle and during an upload, CPU
    /// idle, hackbench with it against without it.
    Agent(agent::AgentArgs),
    /// The fleet's queue: claim latency with many workers and pairs, the database's load,
    /// and how soon a killed worker's machines are leased again (agents on loopback; a
    /// database of its own on the configured server, dropped after).
    Fleet(fleet::FleetArgs),
    /// The bisection's decisions on described ranges: how often it names the right
    /// commit, a wrong one, "does not reproduce", a range or "ambiguous", and its cost.
    Bisect(bisect::BisectArgs),
    /// A run's carried file stored in the database and fetched back: the time each way,
    /// the database's CPU, and this process's memory (needs a database).
    Files(files::FilesArgs),
    /// The history's change-point search on synthetic series: steps found at their run,
    /// false change points in series without one.
    Changepoints(changepoints::ChangepointArgs),
}

/// The plans a case is tried under: for cases of runs, the README's adaptive 3..10, a
/// fixed 10, a fixed 3 (the smallest plan the README shows) and the demo's 4..8; for cases
/// of boots, 2..5 boots, a fixed 4, 2..4 and the shipped scenarios' plans in boots
/// (simulated with 3 runs a boot).
fn designs(case: &Case) -> Vec<(String, Design)> {
    if case.runs_per_boot() > 1 {
        vec![
            ("adaptive 2..5 boots x3".to_string(), Design::Adaptive(2, 5)),
            ("fixed 4 boots x3".to_string(), Design::Fixed(4)),
            ("seed000: 4..8 boots x3".to_string(), Design::Adaptive(4, 8)),
            ("adaptive 2..4 boots x3".to_string(), Design::Adaptive(2, 4)),
            ("seed001, seed004: 3..6 boots x3".to_string(), Design::Adaptive(3, 6)),
            ("seed002: 3..8 boots x3".to_string(), Design::Adaptive(3, 8)),
        ]
    } else {
        vec![
            ("adaptive 3..10".to_string(), Design::Adaptive(3, 10)),
            ("fixed 10".to_string(), Design::Fixed(10)),
            ("fixed 3".to_string(), Design::Fixed(3)),
            ("lab-hackbench: 4..8".to_string(), Design::Adaptive(4, 8)),
        ]
    }
}

pub async fn dispatch(cmd: BenchCmd, cfg: &kreg::config::Config) -> Result<ExitCode> {
    match cmd {
        BenchCmd::Verdicts { trials, seed } => verdicts(trials, seed),
        BenchCmd::Dashboard {
            samples,
            repeat,
            runs,
            viewers,
        } => dashboard::run(cfg, samples, repeat, runs, viewers).await,
        BenchCmd::Agent(args) => agent::run(cfg, args).await,
        BenchCmd::Bisect(args) => bisect::run(args),
        BenchCmd::Fleet(args) => fleet::run(cfg, args).await,
        BenchCmd::Changepoints(args) => changepoints::run(args),
        BenchCmd::Files(args) => files::run(cfg, args).await,
    }
}

fn verdicts(trials: usize, seed: u64) -> Result<ExitCode> {
    let s = Settings::default();
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header([
        "case",
        "kind",
        "design",
        "A/A false alarms",
        "A/A unconfirmed",
        "A/A no change",
        "A/A runs",
        "+10% caught",
        "+10% runs",
        "+1% called regression",
        "+3% called no change",
    ]);
    let started = std::time::Instant::now();
    let mut cells = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        for (name, design) in designs(case) {
            let seed = seed.wrapping_mul(1_000_003).wrapping_add(i as u64);
            let aa = run_trials(case, design, 0.0, trials, seed, &s);
            let ab = run_trials(case, design, 0.10, trials, seed ^ 0xA5A5, &s);
            let small = run_trials(case, design, 0.01, trials, seed ^ 0x5A5A, &s);
            let three = run_trials(case, design, 0.03, trials, seed ^ 0x3C3C, &s);
            cells.push(Cell {
                case: *case,
                design: name.clone(),
                aa,
                ab,
                small,
                three,
            });
            let pct = |x: f64| format!("{:.2}%", 100.0 * x);
            table.add_row(vec![
                case.name.to_string(),
                case.kind.to_string(),
                name,
                pct(aa.share(aa.alarms())),
                pct(aa.share(aa.unconfirmed_regressions + aa.unconfirmed_improvements)),
                pct(aa.share(aa.no_change)),
                format!("{:.1}", aa.mean_runs()),
                format!(
                    "{} ({} unconfirmed, {} wrong way)",
                    pct(ab.share(ab.caught())),
                    ab.unconfirmed_regressions,
                    ab.wrong_way()
                ),
                format!("{:.1}", ab.mean_runs()),
                format!(
                    "{} (+{} unconfirmed)",
                    pct(small.share(small.regressions)),
                    small.unconfirmed_regressions
                ),
                pct(three.share(three.no_change)),
            ]);
        }
    }
    println!(
        "verdicts on simulated samples: {trials} comparisons per cell, seed {seed}, alpha {}, minimum effect {}%, lower is better\n\
         runs: mean runs per side at the verdict (boot cases: 3 runs per boot)\n{table}\n{:.1} s",
        s.alpha,
        100.0 * s.min_effect,
        started.elapsed().as_secs_f64()
    );
    println!("\nthe README's claims, on these trials:\n{}", claims(&cells));
    println!("\n{}", report_section((trials / 10).max(1), seed, &s));
    println!("\n{}", settle_section((trials / 10).max(1), seed, &s));
    Ok(ExitCode::SUCCESS)
}

/// How often an inconclusive row's "about N runs per side would settle it" does, for rows
/// judged at 5 runs a side and measured again at N, by true change.
fn settle_section(trials: usize, seed: u64, s: &Settings) -> String {
    use kreg::stats::sim::settle_trials;
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header(["case", "true change", "rows with an estimate", "settled at N"]);
    let picked = ["normal CoV 3%", "lognormal CoV 10%", "lognormal CoV 10% (percentile)"];
    for (i, case) in cases().iter().filter(|c| picked.contains(&c.name)).enumerate() {
        for (j, change) in [0.0, 0.01, 0.03, 0.05].into_iter().enumerate() {
            let seed = seed.wrapping_mul(9_000_011).wrapping_add((10 * i + j) as u64);
            let (settled, estimated) = settle_trials(case, 5, change, trials, seed, s);
            table.add_row(vec![
                case.name.to_string(),
                format!("{:+.0}%", 100.0 * change),
                estimated.to_string(),
                format!("{:.1}%", 100.0 * settled as f64 / estimated.max(1) as f64),
            ]);
        }
    }
    format!(
        "\"about N runs per side would settle it\": rows inconclusive at 5 runs a side, measured again afresh at N a side (one look):\n{table}"
    )
}

/// A whole report of correlated rows, judged together: false alarms per row and per
/// report, and a 10% change in every row, under the plans of runs.
fn report_section(reports: usize, seed: u64, s: &Settings) -> String {
    use kreg::stats::sim::{run_report_trials, REPORT_CORRELATION, REPORT_ROWS};
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header([
        "design",
        "rows judged",
        "A/A false alarms per row",
        "A/A reports with a false alarm",
        "+10% rows caught",
        "+10% runs",
    ]);
    let mut worst: f64 = 0.0;
    let designs = [
        ("adaptive 3..10", Design::Adaptive(3, 10)),
        ("fixed 10", Design::Fixed(10)),
        ("fixed 4", Design::Fixed(4)),
        ("fixed 3", Design::Fixed(3)),
    ];
    for (i, (name, design)) in designs.into_iter().enumerate() {
        let seed = seed.wrapping_mul(7_000_003).wrapping_add(i as u64);
        let aa = run_report_trials(design, 0.0, reports, seed, s);
        let ab = run_report_trials(design, 0.10, reports, seed ^ 0xA5A5, s);
        let per_row = aa.rows.share(aa.rows.alarms());
        worst = worst.max(per_row);
        let pct = |x: f64| format!("{:.2}%", 100.0 * x);
        table.add_row(vec![
            name.to_string(),
            aa.rows.trials.to_string(),
            pct(per_row),
            pct(aa.reports_with_alarm as f64 / aa.reports.max(1) as f64),
            pct(ab.rows.share(ab.rows.caught())),
            format!("{:.1}", ab.rows.mean_runs()),
        ]);
    }
    format!(
        "an {REPORT_ROWS}-row report (12 percentiles lognormal CoV 5%, 6 means normal CoV 3%, rows correlated {REPORT_CORRELATION} through each run), {reports} reports per cell:\n{table}\n\
         - at most 1% false alarms per row in such a report, every plan: {} (worst {:.2}%)",
        if worst <= 0.01 { "holds" } else { "DOES NOT HOLD" },
        100.0 * worst
    )
}

/// One case under one plan, with its same-against-same, +10% and +1% trials.
struct Cell {
    case: Case,
    design: String,
    aa: kreg::stats::sim::Tally,
    ab: kreg::stats::sim::Tally,
    small: kreg::stats::sim::Tally,
    three: kreg::stats::sim::Tally,
}

type Pick = fn(&Cell) -> bool;
type Figure = fn(&Cell) -> f64;
/// A claim: what it says, the cells it covers, their figure, whether the figure is a floor
/// (else a ceiling), and the bound.
type Claim = (&'static str, Pick, Figure, bool, f64);

/// The claims of the README's verdict section that `kreg bench verdicts` checks.
fn claim_table() -> Vec<Claim> {
    let mut all = run_claims();
    all.extend(boot_claims());
    all
}

/// The claims on runs: false alarms, power, equivalence, small changes.
fn run_claims() -> Vec<Claim> {
    use kreg::stats::sim::Noise;
    vec![
        (
            "at most 1% false alarms per row, every case and plan",
            |_| true,
            |c| c.aa.share(c.aa.alarms()),
            false,
            0.01,
        ),
        (
            "a +10% change caught (confirmed or not) in at least 95% of trials, normal CoV <= 3%, adaptive 3..10 and fixed 10",
            |c| matches!(c.case.noise, Noise::Normal(v) if v <= 0.03) && c.design != "fixed 3",
            |c| c.ab.share(c.ab.caught()),
            true,
            0.95,
        ),
        (
            "a +10% change caught in at least 90% of trials, lognormal CoV 3% (means and percentiles), adaptive 3..10 and fixed 10",
            |c| c.case.noise == Noise::LogNormal(0.03) && c.design != "fixed 3",
            |c| c.ab.share(c.ab.caught()),
            true,
            0.90,
        ),
        (
            "a +10% change caught in at least 90% of trials, t3 tails sd 5%, adaptive 3..10 and fixed 10",
            |c| matches!(c.case.noise, Noise::T3(_)) && c.design != "fixed 3",
            |c| c.ab.share(c.ab.caught()),
            true,
            0.90,
        ),
        (
            "\"no change\" in at least 80% of same-against-same trials, normal CoV 1%, adaptive 3..10",
            |c| c.case.noise == Noise::Normal(0.01) && c.design == "adaptive 3..10",
            |c| c.aa.share(c.aa.no_change),
            true,
            0.80,
        ),
        (
            "a true +1% called a regression (confirmed or not) in at most 5% of trials, normal CoV 1%, every plan",
            |c| c.case.noise == Noise::Normal(0.01),
            |c| c.small.share(c.small.caught()),
            false,
            0.05,
        ),
    ]
}

/// The claims on boots and on the shipped scenarios' plans.
fn boot_claims() -> Vec<Claim> {
    use kreg::stats::sim::Noise;
    vec![
        (
            "one boot a side: a +10% change found (unconfirmed) in at least 90% of trials, adaptive 3..10",
            |c| matches!(c.case.noise, Noise::OneBoot(_)) && c.design == "adaptive 3..10",
            |c| c.ab.share(c.ab.caught()),
            true,
            0.90,
        ),
        (
            "one boot a side: never a regression or improvement",
            |c| matches!(c.case.noise, Noise::OneBoot(_)),
            |c| c.aa.share(c.aa.alarms()) + c.small.share(c.small.regressions) + c.ab.share(c.ab.regressions),
            false,
            0.0,
        ),
        (
            "seed000's plan, p99 5% a run and 1% a boot: at most 1% false alarms",
            |c| matches!(c.case.noise, Noise::Percentile { .. }) && c.design.starts_with("seed000"),
            |c| c.aa.share(c.aa.alarms()),
            false,
            0.01,
        ),
        (
            "seed000's plan, p99 5% a run and 1% a boot: a +10% shift caught in at least 90% of trials",
            |c| matches!(c.case.noise, Noise::Percentile { .. }) && c.design.starts_with("seed000"),
            |c| c.ab.share(c.ab.caught()),
            true,
            0.90,
        ),
        (
            "seed000's plan, a p99 of about 20 us in whole microseconds, 5% a run and 1% a boot: a +10% shift caught in at least 90% of trials",
            |c| matches!(c.case.noise, Noise::WholePercentile { .. }) && c.design.starts_with("seed000"),
            |c| c.ab.share(c.ab.caught()),
            true,
            0.90,
        ),
        (
            "percentiles on log-spaced steps (2^(1/3), 2^(1/4)): a true +3% called \"no change\" in at most 5% of trials, every plan",
            |c| matches!(c.case.noise, Noise::LogGrid { .. }),
            |c| c.three.share(c.three.no_change),
            false,
            0.05,
        ),
    ]
}

/// Each claim of the README's verdict section, the figure that decides it (the worst cell
/// it covers) and whether it holds.
fn claims(cells: &[Cell]) -> String {
    let mut out = String::new();
    let mut check = |claim: &str, cells: Vec<&Cell>, figure: Figure, at_least: bool, bound: f64| {
        let worst = cells.iter().min_by(|a, b| {
            let (x, y) = (figure(a), figure(b));
            if at_least {
                x.total_cmp(&y)
            } else {
                y.total_cmp(&x)
            }
        });
        let line = match worst {
            None => format!("- {claim}: no cell covers it\n"),
            Some(w) => {
                let v = figure(w);
                let holds = if at_least { v >= bound } else { v <= bound };
                format!(
                    "- {claim}: {} (worst {:.2}%, {} under {})\n",
                    if holds { "holds" } else { "DOES NOT HOLD" },
                    100.0 * v,
                    w.case.name,
                    w.design
                )
            }
        };
        out.push_str(&line);
    };
    for (claim, pick, figure, at_least, bound) in claim_table() {
        check(
            claim,
            cells.iter().filter(|c| pick(c)).collect(),
            figure,
            at_least,
            bound,
        );
    }
    out
}
