//! The `kreg` command line: parses arguments and hands each command to its file in `cli/`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use kreg::config::Config;

mod cli;
use kreg::report;

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
    /// Print what each job runs and the job matrix in the order it will run. Touches no
    /// host.
    Plan {
        file: PathBuf,
        /// Check the file alone, not the files it names.
        #[arg(long)]
        skip_files: bool,
        /// Also print the generated scripts (HammerDB's), passwords as ***.
        #[arg(long)]
        verbose: bool,
        /// The SUT's CPU count, for counts given per CPU or as a share of them (a lab's
        /// own count is known).
        #[arg(long)]
        cpus: Option<u32>,
    },
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
        /// The false-alarm rate per row (after the multiple-comparison control, spent over
        /// the looks of an adaptive run).
        #[arg(long, default_value_t = kreg::stats::Settings::default().alpha)]
        alpha: f64,
        /// Smallest change worth calling one, in percent.
        #[arg(long, default_value_t = 2.0)]
        min_effect: f64,
        /// Box-drawing characters in text tables (the default on a terminal; plain ASCII
        /// otherwise, for mail).
        #[arg(long)]
        boxes: bool,
    },
    /// kreg's private PostgreSQL cluster (used when DATABASE_URL is not set).
    Db {
        #[command(subcommand)]
        command: cli::db::DbCmd,
    },
    /// Two runs of one scenario: run B's rows against run A's (same kernel, variant, workload).
    Compare {
        run_a: i64,
        run_b: i64,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Box-drawing characters in text tables (the default on a terminal).
        #[arg(long)]
        boxes: bool,
    },
    /// Kernels kreg built: release, content key, where, and the runs that used them.
    Kernels,
    /// /proc/schedstat: the difference between two snapshots, or between two kernels or
    /// variants of a run.
    Schedstat {
        #[command(subcommand)]
        command: cli::schedstat::SchedstatCmd,
    },
    /// Read a tool's output by hand: print its metrics as JSON (name, value, unit, direction).
    Parse {
        /// hackbench, schbench (text or `-j` JSON), schbench-json, sysbench, netperf (`-k`, `-o` or its
        /// default table), hammerdb (stdout, time profile, or both), perf-bench, or
        /// perf-sched-stats (a `perf sched stats report`: the all-CPUs summary per domain level).
        kind: String,
        /// The output file; `-` reads standard input.
        file: PathBuf,
    },
    /// Two sets of numbers run by hand, compared as a report compares a row with its
    /// baseline (like ministat): the test for their kind, the change with its interval, and
    /// a verdict.
    Stats(cli::stats::StatsArgs),
    /// The dashboard: runs live, comparisons, jobs, kernels and history in a browser, and
    /// their data as JSON under /api/v1/. Read-only.
    Serve {
        /// Address and port to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Also answer requests that name this host (a DNS name or address of this
        /// machine); loopback names and the --listen address always. Repeatable.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_host: Vec<String>,
        /// Seconds a client has to send a request's headers (also how long an idle
        /// connection stays open).
        #[arg(long, default_value_t = 15, value_name = "SECS")]
        header_timeout: u64,
    },
    /// Benchmarks that print figures.
    Bench {
        #[command(subcommand)]
        command: cli::bench::BenchCmd,
    },
    /// The local qemu lab.
    Lab {
        #[command(subcommand)]
        command: cli::lab::LabCmd,
    },
    /// kreg's agent on machines: install it over SSH for the http transport, or see what
    /// runs where.
    Agent {
        #[command(subcommand)]
        command: cli::agent::AgentCmd,
    },
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
            let text = format!("{e:#}");
            eprintln!("kreg: error: {}", kreg::text::printable(&kreg::secrets::redact(&text)));
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cmd: Cmd, cfg: &Config) -> Result<ExitCode> {
    match cmd {
        Cmd::Validate { files, skip_files } => cli::validate::validate(&files, skip_files),
        Cmd::Plan {
            file,
            skip_files,
            verbose,
            cpus,
        } => cli::validate::plan(&file, skip_files, kreg::plan::Detail { verbose, cpus }),
        Cmd::Run { file } => cli::run::start(&file, cfg).await,
        Cmd::Resume { run } => cli::run::resume(run, cfg).await,
        Cmd::Status { run } => cli::status::status(&cli::db::connect(cfg).await?, run).await,
        Cmd::Report {
            run,
            baseline,
            baseline_variant,
            format,
            alpha,
            min_effect,
            boxes,
        } => {
            let base = match (baseline, baseline_variant) {
                (_, Some(v)) => Some(report::Baseline::Variant(v)),
                (Some(k), None) => Some(report::Baseline::Kernel(k)),
                (None, None) => None,
            };
            cli::report::report(cfg, run, base, (format, boxes), alpha, min_effect).await
        }
        Cmd::Schedstat { command } => cli::schedstat::dispatch(command, cfg).await,
        Cmd::Compare {
            run_a,
            run_b,
            format,
            boxes,
        } => cli::report::compare(&cli::db::connect(cfg).await?, run_a, run_b, (format, boxes)).await,
        Cmd::Kernels => cli::kernels::kernels(&cli::db::connect(cfg).await?).await,
        Cmd::Parse { kind, file } => cli::parse::parse(&kind, &file),
        Cmd::Stats(args) => cli::stats::stats(&args),
        Cmd::Serve {
            listen,
            allow_host,
            header_timeout,
        } => cli::serve::serve(cfg, listen, &allow_host, header_timeout).await,
        Cmd::Bench { command } => cli::bench::dispatch(command, cfg).await,
        Cmd::Db { command } => cli::db::dispatch(command, cfg).await,
        Cmd::Lab { command } => cli::lab::dispatch(command, cfg).await,
        Cmd::Agent { command } => cli::agent::dispatch(command, cfg).await,
    }
}
