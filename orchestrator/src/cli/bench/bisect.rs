//! `kreg bench bisect`: the bisection's decision code (`kreg::bisect`, the code the real
//! bisector drives) run on described ranges: the synthetic ranges the README's table shows,
//! or a range read from a file (`--replay`). Prints how often each outcome came out, and
//! what the bisections cost in builds and boots.

use std::process::ExitCode;

use anyhow::{Context, Result};
use comfy_table::{presets, Table};

use kreg::bisect::sim::{tally_each, CommitModel, MachineModel, Synthetic, Tally, Trial};
use kreg::bisect::Rules;

#[derive(clap::Args)]
pub struct BisectArgs {
    /// Bisections per range.
    #[arg(long, default_value_t = 1000)]
    trials: usize,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs of the workload in each boot.
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// With --replay: the machine's drift, the relative change of every value from one
    /// boot to the next (0.0001: +0.01 % a boot, compounding).
    #[arg(long, default_value_t = 0.0, requires = "replay", allow_hyphen_values = true)]
    drift: f64,
    /// With --replay: the chance that any boot fails for the machine's own reasons (0.02:
    /// one boot in fifty), on top of each commit's own `boot_fails`.
    #[arg(long, default_value_t = 0.0, requires = "replay")]
    boot_failures: f64,
    /// Boots a measurement is given before its failure counts (the scenario's
    /// `bisect: boot_tries`).
    #[arg(long, default_value_t = Rules::default().boot_tries as u32, value_parser = clap::value_parser!(u32).range(1..=20))]
    boot_tries: u32,
    /// Print each bisection as one line of JSON on stdout (the range, the trial, its
    /// outcome, boots, failed boots and builds); the table goes to stderr.
    #[arg(long)]
    trials_json: bool,
    /// A range described in a JSON file (its format is in the README) instead of the
    /// synthetic ones.
    #[arg(long, value_name = "FILE")]
    replay: Option<std::path::PathBuf>,
}

/// A range read from a file: its commits in order (the first good, the last bad) and,
/// when known, the index of the first bad commit.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Replay {
    commits: Vec<CommitModel>,
    #[serde(default)]
    culprit: Option<usize>,
    /// Two changes: the first commit of each, in order (instead of `culprit`).
    #[serde(default)]
    culprits: Vec<usize>,
    /// Runs of the workload in a boot, as the scenario's iterations (else `--runs`).
    #[serde(default)]
    runs: Option<usize>,
}

/// A synthetic range: what it is, the range, its culprits (the first bad commit when one
/// commit is it, both when two share the change), the machine it is measured on.
type Row = (&'static str, Synthetic, Vec<usize>, MachineModel);

/// The synthetic ranges, measured with `runs` runs a boot.
fn ranges(runs: usize) -> Vec<Row> {
    let base = Synthetic {
        commits: 64,
        culprits: vec![(37, 0.03)],
        cov: 0.01,
        boot_cov: 0.01,
        build_fails: vec![],
    };
    let steady = MachineModel::steady(runs);
    let machine = |drift, boot_fails| MachineModel {
        runs,
        drift,
        boot_fails,
    };
    let with = |culprits: Vec<(usize, f64)>| Synthetic {
        culprits,
        ..base.clone()
    };
    let mut all = vec![
        (
            "64 commits, +3% at 37, CoV 1%, boots 1%",
            base.clone(),
            vec![37],
            steady,
        ),
        (
            "the same, the machine drifting +0.01% a boot",
            base.clone(),
            vec![37],
            machine(0.0001, 0.0),
        ),
        (
            "the same, the machine drifting -0.01% a boot",
            base.clone(),
            vec![37],
            machine(-0.0001, 0.0),
        ),
        (
            "the same, 2% of boots failing, drifting +0.01% a boot",
            base.clone(),
            vec![37],
            machine(0.0001, 0.02),
        ),
        (
            "the same, 2% of boots failing, drifting -0.01% a boot",
            base.clone(),
            vec![37],
            machine(-0.0001, 0.02),
        ),
        ("the same without the change", with(vec![]), vec![], steady),
        (
            "without the change, 2% of boots failing, drifting +0.01%",
            with(vec![]),
            vec![],
            machine(0.0001, 0.02),
        ),
        (
            "two commits of +1.5% (20 and 40)",
            with(vec![(20, 0.015), (40, 0.015)]),
            vec![20, 40],
            steady,
        ),
        (
            "the two, 2% of boots failing, drifting -0.01% a boot",
            with(vec![(20, 0.015), (40, 0.015)]),
            vec![20, 40],
            machine(-0.0001, 0.02),
        ),
    ];
    all.extend(changes(base, steady));
    all
}

/// The ranges measured on a steady machine: changes of other sizes and shapes, a broken
/// commit, other lengths.
fn changes(base: Synthetic, steady: MachineModel) -> Vec<Row> {
    let drift = Synthetic {
        culprits: (1..64).map(|i| (i, 0.0005)).collect(),
        ..base.clone()
    };
    let with = |culprits: Vec<(usize, f64)>| Synthetic {
        culprits,
        ..base.clone()
    };
    vec![
        (
            "two commits, +2% at 20 and +1% at 40",
            with(vec![(20, 0.02), (40, 0.01)]),
            vec![20, 40],
            steady,
        ),
        ("a drift of +0.05% a commit (+3.2% in all)", drift, vec![], steady),
        (
            "+1.2% at 37, boots 1%: too near the noise",
            with(vec![(37, 0.012)]),
            vec![37],
            steady,
        ),
        (
            "+1.3% at 37, near the 1% minimum, CoV 0.5%, boots 0.3%",
            Synthetic {
                culprits: vec![(37, 0.013)],
                cov: 0.005,
                boot_cov: 0.003,
                ..base.clone()
            },
            vec![37],
            steady,
        ),
        (
            "+3% at 37, 36 does not build",
            Synthetic {
                build_fails: vec![36],
                ..base.clone()
            },
            vec![37],
            steady,
        ),
        (
            "16 commits, +5% at 9, CoV 3%, boots 2%",
            Synthetic {
                commits: 16,
                culprits: vec![(9, 0.05)],
                cov: 0.03,
                boot_cov: 0.02,
                build_fails: vec![],
            },
            vec![9],
            steady,
        ),
        (
            "256 commits, -3% at 200, CoV 1%, boots 1%",
            Synthetic {
                commits: 256,
                culprits: vec![(200, -0.03)],
                ..base
            },
            vec![200],
            steady,
        ),
    ]
}

fn pct(n: usize, of: usize) -> String {
    format!("{:.1}%", 100.0 * n as f64 / of.max(1) as f64)
}

/// A range's row; `broken` commits do not build (each may cost a build of its own).
fn row(t: &mut Table, what: &str, commits: usize, broken: usize, x: &Tally) {
    let log2 = (commits as f64).log2().ceil() as usize;
    t.add_row(vec![
        what.to_string(),
        pct(x.exact, x.trials),
        pct(x.confirmed, x.trials),
        pct(x.two_named, x.trials),
        pct(x.wrong, x.trials),
        pct(x.partly, x.trials),
        pct(x.does_not_reproduce, x.trials),
        pct(x.endpoint_failed, x.trials),
        pct(x.ranges, x.trials),
        pct(x.ambiguous, x.trials),
        format!("{:.1} / {} (goal {})", x.mean_builds, x.max_builds, log2 + 3 + broken),
        format!("{:.0} / {}", x.mean_boots, x.max_boots),
        format!("{:.1}", x.mean_failed_boots),
    ]);
}

/// The table the rows go in, with its header.
fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_MARKDOWN);
    t.set_header(vec![
        "range",
        "exact culprit",
        "confirmed",
        "two named",
        "wrong culprit",
        "partly named",
        "does not reproduce",
        "an endpoint failed",
        "a range",
        "ambiguous",
        "builds mean / max (goal)",
        "boots mean / max",
        "failed boots mean",
    ]);
    t
}

/// Each trial as a line of JSON, when asked.
fn each_trial<'a>(json: bool, range: &'a str) -> impl FnMut(usize, &Trial) + 'a {
    move |i, r| {
        if json {
            let line = serde_json::json!({
                "range": range,
                "trial": i,
                "outcome": r.outcome,
                "boots": r.boots,
                "failed_boots": r.failed_boots,
                "builds": r.builds,
            });
            println!("{line}");
        }
    }
}

/// One row of the range in the replay file `path`; the runs a boot it was measured with.
fn replay_row(t: &mut Table, path: &std::path::Path, args: &BisectArgs, rules: Rules) -> Result<usize> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let r: Replay = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    anyhow::ensure!(
        r.commits.len() >= 2,
        "{}: a range needs at least 2 commits",
        path.display()
    );
    let machine = MachineModel {
        runs: r.runs.unwrap_or(args.runs),
        drift: args.drift,
        boot_fails: args.boot_failures,
    };
    let what = path.display().to_string();
    let broken = r.commits.iter().filter(|c| c.build_fails).count();
    anyhow::ensure!(
        r.culprit.is_none() || r.culprits.is_empty(),
        "{}: give the culprit or the culprits, not both",
        path.display()
    );
    let expected: Vec<usize> = r.culprit.into_iter().chain(r.culprits.iter().copied()).collect();
    anyhow::ensure!(
        expected.iter().all(|&c| c > 0 && c < r.commits.len()),
        "{}: a culprit is the index of a commit after the first",
        path.display()
    );
    let mut each = each_trial(args.trials_json, &what);
    let x = tally_each(
        &r.commits,
        &expected,
        rules,
        machine,
        (args.trials, args.seed),
        &mut each,
    );
    row(t, &what, r.commits.len(), broken, &x);
    Ok(machine.runs)
}

pub fn run(args: BisectArgs) -> Result<ExitCode> {
    let rules = Rules {
        boot_tries: args.boot_tries as usize,
        ..Rules::default()
    };
    let mut t = table();
    let runs = match &args.replay {
        Some(path) => replay_row(&mut t, path, &args, rules)?,
        None => {
            for (what, range, culprit, machine) in ranges(args.runs) {
                let mut each = each_trial(args.trials_json, what);
                let x = tally_each(
                    &range.models(),
                    &culprit,
                    rules,
                    machine,
                    (args.trials, args.seed),
                    &mut each,
                );
                row(&mut t, what, range.commits, range.build_fails.len(), &x);
            }
            args.runs
        }
    };
    let said = format!(
        "bisections of described ranges: {} per range, {} runs a boot, seed {}; endpoints at alpha {} (min effect {}%), \
         a step good or bad when its position's interval is clear of 1/2 ({}..{} rounds of step, good, step, bad); \
         a boot that gives no value is tried again, {} boots in all before it counts; \
         builds count every commit built (the endpoints, each step, each failed build, the revert); the goal is \
         ceil(log2 commits) + 3, and 1 more for each commit that does not build; boots count failed ones; \
         \"confirmed\": exact, and the sandwich and the revert agree; \"two named\": two changes expected, both named; \
         \"partly named\": some culprits named, none wrongly, not all (or two changes where one was)\n{t}",
        args.trials,
        runs,
        args.seed,
        rules.alpha,
        rules.min_effect * 100.0,
        rules.step_rounds.0,
        rules.step_rounds.1,
        rules.boot_tries,
    );
    if args.trials_json {
        eprintln!("{said}");
    } else {
        println!("{said}");
    }
    Ok(ExitCode::SUCCESS)
}
