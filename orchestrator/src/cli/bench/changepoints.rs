//! `kreg bench changepoints`: the change-point search of the history page and `kreg alerts`
//! (`kreg::stats::changepoint`, the same code) on synthetic series: how often a step is
//! found at its run, and how often a series without one raises a false change point.

use std::process::ExitCode;

use anyhow::Result;
use comfy_table::{presets, Table};

use kreg::stats::changepoint::{simulate, Settings};

#[derive(clap::Args)]
pub struct ChangepointArgs {
    /// Series per case.
    #[arg(long, default_value_t = 1000)]
    series: usize,
    /// Runs in each series.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: ChangepointArgs) -> Result<ExitCode> {
    let s = Settings::default();
    println!(
        "change points by E-Divisive means: {} series of {} runs per case, seed {}; p ≤ {} over {} permutations, \
         at least {} runs a side; each run's value normal around its level",
        args.series, args.runs, args.seed, s.alpha, s.permutations, s.min_size
    );
    let cases: [(&str, Option<f64>, f64); 7] = [
        ("no change, CoV 1%", None, 0.01),
        ("no change, CoV 5%", None, 0.05),
        ("+5% step, CoV 1%", Some(0.05), 0.01),
        ("-5% step, CoV 1%", Some(-0.05), 0.01),
        ("+2% step, CoV 1%", Some(0.02), 0.01),
        ("+1% step, CoV 1%", Some(0.01), 0.01),
        ("+5% step, CoV 5%", Some(0.05), 0.05),
    ];
    let mut table = Table::new();
    table.load_preset(presets::ASCII_MARKDOWN);
    table.set_header([
        "series",
        "found at the run",
        "within one run",
        "with a false change point",
        "ms per series",
    ]);
    for (i, (name, step, cov)) in cases.iter().enumerate() {
        let started = std::time::Instant::now();
        let t = simulate(args.series, args.runs, *step, *cov, args.seed + i as u64, &s);
        let ms = started.elapsed().as_secs_f64() * 1000.0 / args.series.max(1) as f64;
        let share = |k: usize| format!("{:.1}%", 100.0 * k as f64 / t.series.max(1) as f64);
        let (exact, near) = if step.is_some() {
            (share(t.exact), share(t.near))
        } else {
            ("-".into(), "-".into())
        };
        table.add_row(vec![
            name.to_string(),
            exact,
            near,
            share(t.false_alarms),
            format!("{ms:.2}"),
        ]);
    }
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}
