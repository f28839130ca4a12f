//! The `kreg` command line: parses arguments, loads configuration, and calls the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use sha2::Digest;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use kreg::config::Config;

mod lab_cli;
mod report_cli;
mod run_cli;
use kreg::{plan, report, scenario, store};
use report_cli::{compare, print_report};
use run_cli::drive;

#[derive(Parser)]
#[command(name = "kreg", version, about = "Reproduce Linux kernel performance regressions")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check scenario files; print every problem as FILE:LINE:COL: message.
    Validate {
        files: Vec<PathBuf>,
        /// Check the file alone, not the files it names (a template for another machine).
        #[arg(long)]
        skip_files: bool,
    },
    /// Print the job matrix in the order it will run. Touches no host.
    Plan { file: PathBuf },
    /// Record a new run of a scenario and drive it to the end.
    Run { file: PathBuf },
    /// Continue a run from its first job not done.
    Resume { run: i64 },
    /// Show where runs stand.
    Status { run: Option<i64> },
    /// Per metric: kernel × variant with n, mean, stddev%, change against the baseline and
    /// a verdict (regression, improvement, no change, inconclusive).
    Report {
        run: i64,
        /// Compare against this kernel instead of the scenario's baseline.
        #[arg(long, conflicts_with = "baseline_variant")]
        baseline: Option<String>,
        /// Compare variants instead: each row against this variant on the same kernel.
        #[arg(long)]
        baseline_variant: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Significance level, after the multiple-comparison control.
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
        /// Smallest change worth calling one, in percent.
        #[arg(long, default_value_t = 2.0)]
        min_effect: f64,
    },
    /// kreg's private PostgreSQL cluster (used when DATABASE_URL is not set).
    Db {
        #[command(subcommand)]
        command: DbCmd,
    },
    /// Two runs of one scenario: run B's rows against run A's (same kernel, variant, workload).
    Compare {
        run_a: i64,
        run_b: i64,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Kernels kreg built: release, content key, where, and the runs that used them.
    Kernels,
    /// /proc/schedstat: the difference between two snapshots, or between two kernels or
    /// variants of a run.
    Schedstat {
        #[command(subcommand)]
        command: SchedstatCmd,
    },
    /// Read a tool's output by hand: print its metrics as JSON (name, value, unit, direction).
    Parse {
        /// hackbench, schbench (text or `-j` JSON), schbench-json, sysbench, netperf, hammerdb or perf-bench.
        kind: String,
        /// The output file; `-` reads standard input.
        file: PathBuf,
    },
    /// The local qemu lab.
    Lab {
        #[command(subcommand)]
        command: lab_cli::LabCmd,
    },
}

#[derive(Subcommand)]
enum SchedstatCmd {
    /// after − before, per CPU, per domain, summed, with rates and derived figures.
    Diff {
        before: PathBuf,
        after: PathBuf,
        /// The kernel's HZ, to turn jiffies into seconds.
        #[arg(long, default_value_t = 250)]
        hz: u32,
    },
    /// Mean per-job deltas of two sides of a run: KERNEL or KERNEL/VARIANT each.
    Compare { run: i64, a: String, b: String },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Markdown,
    Csv,
    Json,
}

impl From<Format> for report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Text => report::Format::Text,
            Format::Markdown => report::Format::Markdown,
            Format::Csv => report::Format::Csv,
            Format::Json => report::Format::Json,
        }
    }
}

#[derive(Subcommand)]
enum DbCmd {
    /// Start the private cluster if needed and print its URL (for psql or DATABASE_URL).
    Url,
    /// Stop the private cluster.
    Stop,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("KREG_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let cfg = Config::from_env();
    match dispatch(cli.command, &cfg).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kreg: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cmd: Cmd, cfg: &Config) -> Result<ExitCode> {
    match cmd {
        Cmd::Validate { files, skip_files } => validate(&files, skip_files),
        Cmd::Plan { file } => {
            let (_, s) = load(&file)?;
            print!("{}", plan::render(&s, &plan::expand(&s)));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run { file } => {
            let (text, s) = load(&file)?;
            // Every host reached and authenticated before anything is recorded.
            let found = kreg::preflight::check(&s).await;
            for w in &found.warnings {
                eprintln!("kreg: warning: {w}");
            }
            if !found.problems.is_empty() {
                for p in &found.problems {
                    eprintln!("kreg: {p}");
                }
                bail!(
                    "{} cannot start: {} problem(s), no run recorded",
                    file.display(),
                    found.problems.len()
                );
            }
            let db = connect(cfg).await?;
            let sha = hex::encode(sha2::Sha256::digest(text.as_bytes()));
            let scenario_id = store::upsert_scenario(&db, &s.name, &text, &sha).await?;
            let jobs = plan::expand(&s);
            let source = std::fs::canonicalize(&file).unwrap_or(file.clone());
            let mut tx = db.begin().await?;
            let run_id = store::create_run(&mut tx, scenario_id, &source.display().to_string(), &jobs).await?;
            tx.commit().await?;
            println!(
                "run {run_id}: {} jobs ({}); resume with `kreg resume {run_id}` if it stops",
                jobs.len(),
                s.name
            );
            drive(&db, run_id, cfg).await
        }
        Cmd::Resume { run } => {
            let db = connect(cfg).await?;
            let before = store::jobs(&db, run).await?;
            if before.is_empty() {
                store::run(&db, run).await?;
            }
            let left = before.iter().filter(|j| j.state != plan::JobState::Done).count();
            if left == 0 {
                println!("run {run}: finished, all {} jobs done; nothing to resume", before.len());
                return Ok(ExitCode::SUCCESS);
            }
            println!("run {run}: resuming, {left} of {} jobs left", before.len());
            drive(&db, run, cfg).await
        }
        Cmd::Status { run } => {
            let db = connect(cfg).await?;
            status(&db, run).await
        }
        Cmd::Report {
            run,
            baseline,
            baseline_variant,
            format,
            alpha,
            min_effect,
        } => {
            // Written so that NaN fails both checks.
            let alpha_ok = alpha > 0.0 && alpha < 1.0;
            let effect_ok = min_effect >= 0.0 && min_effect.is_finite();
            if !(alpha_ok && effect_ok) {
                bail!("--alpha must be between 0 and 1 and --min-effect a percentage ≥ 0");
            }
            let settings = kreg::stats::Settings {
                alpha,
                min_effect: min_effect / 100.0,
                ..Default::default()
            };
            let db = connect(cfg).await?;
            let base = match (baseline, baseline_variant) {
                (_, Some(v)) => Some(report::Baseline::Variant(v)),
                (Some(k), None) => Some(report::Baseline::Kernel(k)),
                (None, None) => None,
            };
            print_report(&db, run, base, format, &settings).await?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Schedstat {
            command: SchedstatCmd::Diff { before, after, hz },
        } => {
            let read = |p: &PathBuf| -> Result<kreg::schedstat::Snapshot> {
                let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
                kreg::schedstat::parse(&text).with_context(|| p.display().to_string())
            };
            let d = kreg::schedstat::diff(&read(&before)?, &read(&after)?).map_err(anyhow::Error::msg)?;
            print!("{}", kreg::schedstat::render_diff(&d, hz));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Schedstat {
            command: SchedstatCmd::Compare { run, a, b },
        } => {
            let db = connect(cfg).await?;
            schedstat_compare(&db, run, &a, &b).await
        }
        Cmd::Compare { run_a, run_b, format } => {
            let db = connect(cfg).await?;
            compare(&db, run_a, run_b, format).await
        }
        Cmd::Kernels => {
            let db = connect(cfg).await?;
            let builds = store::builds(&db).await?;
            if builds.is_empty() {
                println!("no kernels built yet");
            }
            let mut table = comfy_table::Table::new();
            table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
            table.set_header([
                "key",
                "release",
                "config hash",
                "compiler",
                "built on",
                "built",
                "used by (run:kernel)",
                "files",
            ]);
            for b in builds {
                table.add_row(vec![
                    b.key,
                    b.release,
                    b.config_hash[..12.min(b.config_hash.len())].to_string(),
                    b.compiler,
                    b.built_on,
                    b.created_at.format("%Y-%m-%d %H:%M").to_string(),
                    b.used_by.join(" "),
                    b.path,
                ]);
            }
            println!("{table}");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Parse { kind, file } => {
            let text = if file.as_os_str() == "-" {
                let mut t = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).context("cannot read standard input")?;
                t
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?
            };
            let metrics = kreg::workload::parse_output(&kind, &text).with_context(|| format!("{}", file.display()))?;
            let json: Vec<serde_json::Value> = metrics
                .iter()
                .map(|m| serde_json::json!({"name": m.name, "value": m.value, "unit": m.unit, "direction": m.direction()}))
                .collect();
            println!("{}", serde_json::to_string_pretty(&json)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Db { command: DbCmd::Url } => {
            let dir = cfg.data_dir.join("postgres");
            store::cluster::ensure(&cfg.data_dir)
                .await
                .context("starting kreg's private PostgreSQL")?;
            println!("postgres://kreg@localhost/kreg?host={}", dir.canonicalize()?.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Db { command: DbCmd::Stop } => {
            store::cluster::stop(&cfg.data_dir.canonicalize()?)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Lab { command } => lab_cli::dispatch(command, cfg).await,
    }
}

fn load(file: &Path) -> Result<(String, scenario::Scenario)> {
    match kreg::scenario_file::load(file, false) {
        Ok(x) => Ok(x),
        Err(diags) => {
            for d in &diags {
                eprintln!("{}", d.render(&file.display().to_string()));
            }
            bail!("{} has {} problem(s)", file.display(), diags.len())
        }
    }
}

fn validate(files: &[PathBuf], skip_files: bool) -> Result<ExitCode> {
    if files.is_empty() {
        bail!("give at least one scenario file");
    }
    let mut bad = false;
    for f in files {
        match kreg::scenario_file::load(f, skip_files) {
            Ok((_, s)) => println!("{}: ok ({} jobs)", f.display(), kreg::scenario_file::job_count(&s)),
            Err(diags) => {
                bad = true;
                for d in diags {
                    println!("{}", d.render(&f.display().to_string()));
                }
            }
        }
    }
    Ok(if bad { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

async fn connect(cfg: &Config) -> Result<PgPool> {
    let options = match &cfg.database_url {
        Some(url) => PgConnectOptions::from_str(url.expose()).context("DATABASE_URL is not a valid PostgreSQL URL")?,
        None => store::cluster::ensure(&cfg.data_dir)
            .await
            .context("starting kreg's private PostgreSQL")?,
    };
    store::open(options).await.context("opening the database")
}

async fn schedstat_compare(db: &PgPool, run: i64, a: &str, b: &str) -> Result<ExitCode> {
    let pairs = store::schedstat_pairs(db, run).await?;
    let side = |spec: &str| -> Result<Vec<kreg::schedstat::Diff>> {
        let (kernel, variant) = match spec.split_once('/') {
            Some((k, v)) => (k, Some(v)),
            None => (spec, None),
        };
        let mut out = Vec::new();
        for (k, v, _, before, after) in &pairs {
            if k == kernel && variant.is_none_or(|x| x == v) {
                let d = kreg::schedstat::diff(&kreg::schedstat::parse(before)?, &kreg::schedstat::parse(after)?)
                    .map_err(anyhow::Error::msg)?;
                out.push(d);
            }
        }
        if out.is_empty() {
            bail!("run {run} has no done job with schedstat snapshots for {spec:?}");
        }
        Ok(out)
    };
    let (da, db_) = (side(a)?, side(b)?);
    let (ta, xa) = kreg::schedstat::mean_totals(&da).expect("non-empty");
    let (tb, xb) = kreg::schedstat::mean_totals(&db_).expect("non-empty");
    println!(
        "run {run}: /proc/schedstat deltas per job, summed over CPUs; {a} ({} jobs) vs {b} ({} jobs)",
        da.len(),
        db_.len()
    );
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(["counter", a, b, "change%"]);
    let pct = |x: f64, y: f64| {
        if x != 0.0 {
            format!("{:+.2}%", 100.0 * (y - x) / x)
        } else {
            "-".into()
        }
    };
    for (i, name) in kreg::schedstat::CPU_FIELDS.iter().enumerate() {
        if *name != "array_exp" {
            table.add_row(vec![
                name.to_string(),
                format!("{:.1}", ta[i]),
                format!("{:.1}", tb[i]),
                pct(ta[i], tb[i]),
            ]);
        }
    }
    for ((name, va, unit), (_, vb, _)) in xa.iter().zip(&xb) {
        table.add_row(vec![
            format!("{name} ({unit})"),
            format!("{va:.2}"),
            format!("{vb:.2}"),
            pct(*va, *vb),
        ]);
    }
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}

async fn status(db: &PgPool, run: Option<i64>) -> Result<ExitCode> {
    let runs = store::runs(db, run).await?;
    if let Some(id) = run {
        if runs.is_empty() {
            bail!("run {id} does not exist");
        }
    }
    if runs.is_empty() {
        println!("no runs yet: start one with `kreg run SCENARIO.yaml`");
    }
    for r in &runs {
        println!(
            "run {}  {:<24} {:<8} {}/{} done, {} failed  (started {})",
            r.id,
            r.scenario_name,
            r.state,
            r.done,
            r.jobs,
            r.failed,
            r.created_at.format("%Y-%m-%d %H:%M:%S UTC")
        );
    }
    if let Some(id) = run {
        for j in store::jobs(db, id).await? {
            let err = j
                .error
                .as_deref()
                .map(|e| format!("  {}", e.lines().next().unwrap_or("")))
                .unwrap_or_default();
            println!(
                "  #{:<4} {:<8} kernel={} variant={} workload={} iteration={} attempts={}{err}",
                j.ordinal, j.state, j.kernel, j.variant, j.workload, j.iteration, j.attempts
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
