//! The `kreg` command line: parses arguments and hands each command to its file in `cli/`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use kreg::config::Config;

mod cli;

#[derive(Parser)]
#[command(name = "kreg", version, about = "Reproduce Linux kernel performance regressions")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check scenario files; print every problem as FILE:LINE:COL: message.
    Validate(cli::validate::ValidateArgs),
    /// Print what each job runs and the job matrix in the order it will run. Touches no
    /// host.
    Plan(cli::validate::PlanArgs),
    /// Record a new run of a scenario and drive it to the end.
    Run(cli::run::RunArgs),
    /// Rehearse a scenario on the local lab before the real machines: its hosts lab
    /// machines, its kernels stood in for, every cell once at a cut size; ends with the
    /// rehearsal's sheet (each step done, failed with its FILE:LINE:COL, or not rehearsable).
    Rehearse(cli::rehearse::RehearseArgs),
    /// Find the first commit between a good and a bad ref that changes a metric, and
    /// confirm it (its parent measured again beside it, and the bad end with it reverted).
    Bisect(cli::bisect::BisectArgs),
    /// Queue a scenario for the fleet's workers, spread over machine pairs of the pool.
    Submit(cli::fleet::SubmitArgs),
    /// Take slots of submitted runs from the queue and drive them, a lease per machine
    /// pair kept by heartbeat (run any number, on any hosts, with the database's URL).
    Worker(cli::worker::WorkerArgs),
    /// The fleet's pool of machines (SUTs and load generators, with labels).
    Machines {
        #[command(subcommand)]
        command: cli::fleet::MachinesCmd,
    },
    /// Continue a run from its first job not done.
    Resume(cli::resume::ResumeArgs),
    /// Show where runs stand.
    Status(cli::status::StatusArgs),
    /// Per metric: kernel × variant with n, mean, stddev%, change against the baseline and
    /// a verdict (regression, improvement, no change, inconclusive).
    Report(cli::report::ReportArgs),
    /// kreg's private PostgreSQL cluster (used when DATABASE_URL is not set).
    Db {
        #[command(subcommand)]
        command: cli::db::DbCmd,
    },
    /// A run in one file (a tar): its scenario, the files it carries, its rows and its
    /// report, for another site to import and reproduce.
    Export(cli::bundle::ExportArgs),
    /// A run a bundle of `kreg export` holds, put into this database (its id kept).
    Import(cli::bundle::ImportArgs),
    /// Two runs of one scenario: run B's rows against run A's (same kernel, variant, workload).
    Compare(cli::report::CompareArgs),
    /// Kernels kreg built: release, content key, where, and the runs that used them.
    Kernels,
    /// Change points in the histories of finished runs, kept as alerts to triage (new,
    /// acknowledged, invalid, fixed); without a subcommand, the new ones.
    Alerts {
        #[command(subcommand)]
        command: Option<cli::alerts::AlertsCmd>,
    },
    /// /proc/schedstat: the difference between two snapshots, or between two kernels or
    /// variants of a run.
    Schedstat {
        #[command(subcommand)]
        command: cli::schedstat::SchedstatCmd,
    },
    /// Read a tool's output by hand: print its metrics as JSON (name, value, unit, direction).
    Parse(cli::parse::ParseArgs),
    /// Two sets of numbers run by hand, compared as a report compares a row with its
    /// baseline (like ministat): the test for their kind, the change with its interval, and
    /// a verdict.
    Stats(cli::stats::StatsArgs),
    /// The dashboard: runs live, comparisons, jobs, kernels and history in a browser, and
    /// their data as JSON under /api/v1/. Read-only.
    Serve(cli::serve::ServeArgs),
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
    /// Write the manual pages (kreg, each subcommand, kreg-agent) into a folder.
    Man(cli::man::ManArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    // sqlx warns of every statement over a second: a carried file of a few hundred MiB
    // fetched a chunk at a time is one such statement, and no fault. Its errors reach the
    // user as kreg's own; `KREG_LOG=warn` shows its warnings too.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KREG_LOG").unwrap_or_else(|_| "warn,sqlx=error".into()),
        )
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
        Cmd::Validate(a) => cli::validate::validate(&a),
        Cmd::Plan(a) => cli::validate::plan(&a),
        Cmd::Run(a) => cli::run::run(&a, cfg).await,
        Cmd::Rehearse(a) => cli::rehearse::rehearse(&a, cfg).await,
        Cmd::Bisect(a) => cli::bisect::bisect(cfg, &a).await,
        Cmd::Submit(a) => cli::fleet::submit(&a, cfg).await,
        Cmd::Worker(a) => cli::worker::worker(&a, cfg).await,
        Cmd::Machines { command } => cli::fleet::machines(command, cfg).await,
        Cmd::Resume(a) => cli::resume::resume(a.run, cfg).await,
        Cmd::Status(a) => cli::status::status(&cli::db::connect(cfg).await?, a.run).await,
        Cmd::Report(a) => cli::report::report(cfg, &a).await,
        Cmd::Schedstat { command } => cli::schedstat::dispatch(command, cfg).await,
        Cmd::Compare(a) => cli::report::compare(cfg, &a).await,
        Cmd::Export(a) => cli::bundle::export(cfg, &a).await,
        Cmd::Import(a) => cli::bundle::import(cfg, &a).await,
        Cmd::Kernels => cli::kernels::kernels(&cli::db::connect(cfg).await?).await,
        Cmd::Alerts { command } => cli::alerts::dispatch(command, &cli::db::connect(cfg).await?).await,
        Cmd::Parse(a) => cli::parse::parse(&a),
        Cmd::Stats(args) => cli::stats::stats(&args),
        Cmd::Serve(a) => cli::serve::serve(cfg, &a).await,
        Cmd::Bench { command } => cli::bench::dispatch(command, cfg).await,
        Cmd::Db { command } => cli::db::dispatch(command, cfg).await,
        Cmd::Lab { command } => cli::lab::dispatch(command, cfg).await,
        Cmd::Agent { command } => cli::agent::dispatch(command, cfg).await,
        Cmd::Man(a) => cli::man::man(&a, <Cli as clap::CommandFactory>::command()),
    }
}
