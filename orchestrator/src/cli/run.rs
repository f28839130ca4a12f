//! `kreg run` and `kreg resume` as a terminal shows them: progress, the report at the end,
//! and Ctrl-C or SIGTERM stopping the job in progress cleanly.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use std::path::Path;

use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use sqlx::PgPool;

use kreg::config::Config;
use kreg::engine::session::Session;
use kreg::engine::{self, Event};
use kreg::{plan, store};

use kreg::report::Format;
use kreg::text::duration;

/// What a run's progress looks like: lines on stderr (each stage with what it cost, each job
/// with the time left), and a bar when stderr is a terminal.
pub(crate) struct Progress {
    bar: ProgressBar,
    tty: bool,
    /// When this process began driving the run (boots count as its jobs' time), and how
    /// many jobs it has finished since.
    started: Instant,
    finished: usize,
    total: usize,
}

impl Progress {
    /// A bar on a terminal, plain lines otherwise.
    pub(crate) fn new() -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = if tty {
            ProgressBar::new(0)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed_precise} eta {eta} {wide_msg}")
                .expect("template"),
        );
        Progress {
            bar,
            tty,
            started: Instant::now(),
            finished: 0,
            total: 0,
        }
    }

    /// A progress line, its control characters escaped (a workload's stderr may hold any).
    fn say(&self, line: String) {
        let line = kreg::text::printable(&kreg::secrets::redact(&line)).into_owned();
        if self.tty {
            self.bar.println(line)
        } else {
            eprintln!("{line}")
        }
    }

    /// "about 3 min left": the time per job so far (boots included) times the jobs left.
    fn left(&self, ordinal: i32) -> String {
        if self.finished == 0 {
            return String::new();
        }
        let per_job = self.started.elapsed().as_secs_f64() / self.finished as f64;
        // Ordinals count from 0 in run order.
        let jobs_left = self.total.saturating_sub(ordinal.max(0) as usize + 1);
        if jobs_left == 0 {
            return String::new();
        }
        format!("; about {} left", duration(per_job * jobs_left as f64))
    }

    fn job_finished(&mut self, ordinal: i32) -> String {
        self.bar.inc(1);
        self.finished += 1;
        format!("job #{ordinal}/{}", self.total)
    }

    pub(crate) fn show(&mut self, e: Event) {
        match e {
            Event::KernelBooting { kernel } => {
                self.bar.set_message(format!("preparing kernel {kernel}"));
                self.say(format!("kernel {kernel}: preparing (fetch and unpack, or build)"));
            }
            Event::KernelPrepared {
                kernel, release, secs, ..
            } => {
                let what = release.map_or("the running kernel".to_string(), |r| format!("release {r}"));
                self.bar.set_message(format!("booting kernel {kernel}"));
                self.say(format!(
                    "kernel {kernel}: ready on the controller in {} ({what}); booting",
                    duration(secs)
                ));
            }
            Event::BuildOutput { kernel, line } => {
                let line = kreg::text::one_line(&line);
                if self.tty {
                    self.bar.set_message(format!("building {kernel}: {line}"));
                } else {
                    eprintln!("build {kernel}: {line}");
                }
            }
            Event::KernelReady {
                kernel,
                release,
                boot_id,
                method,
                secs,
            } => self.say(format!(
                "kernel {kernel}: up in {} (boot method {method}), release {release}, boot id {boot_id}",
                duration(secs)
            )),
            Event::KernelFailed {
                kernel,
                reason,
                class,
                jobs,
            } => {
                self.bar.inc(jobs as u64);
                self.say(format!(
                    "kernel {kernel}: FAILED ({class}), its {jobs} jobs failed: {reason}"
                ));
            }
            e => self.show_job(e),
        }
    }

    /// A job's events, and what the run says besides (kernels' are [`Self::show`]'s).
    fn show_job(&mut self, e: Event) {
        match e {
            Event::JobStarted {
                ordinal,
                total,
                kernel,
                variant,
                workload,
                iteration,
            } => {
                self.total = total;
                self.bar.set_length(total as u64);
                let (run, field) = job_label(iteration);
                self.bar
                    .set_message(format!("#{ordinal} {kernel} {variant} {workload} {run}"));
                if !self.tty {
                    eprintln!("job #{ordinal}/{total}: kernel={kernel} variant={variant} workload={workload} {field}");
                }
            }
            Event::JobDone {
                ordinal,
                metrics,
                policy,
            } => {
                let head = self.job_finished(ordinal);
                let m: Vec<String> = metrics.iter().map(|(n, v, u)| format!("{n}={v} {u}")).collect();
                self.say(format!(
                    "{head}: {} (policy {policy}){}",
                    m.join(" "),
                    self.left(ordinal)
                ));
            }
            Event::JobFailed { ordinal, reason } => {
                let head = self.job_finished(ordinal);
                self.say(format!("{head}: FAILED: {reason}{}", self.left(ordinal)));
            }
            Event::Warning { message } => self.say(format!("warning: {message}")),
            Event::Bisect { message } => self.say(format!("bisect: {message}")),
            Event::Look { cells, jobs } => self.say(look_line(&cells, jobs)),
            Event::Leftovers { host, killed } => self.say(format!(
                "{host}: killed {} process(es) an earlier attempt left running: {}",
                killed.len(),
                killed.join(", ")
            )),
            // The kernels' events are said by `show`.
            _ => {}
        }
    }
}

fn look_line(cells: &[String], jobs: usize) -> String {
    if jobs == 0 {
        return "look: every row has its verdict or its last look".into();
    }
    format!(
        "look: {} cell(s) still inconclusive, {jobs} more job(s): {}",
        cells.len(),
        cells.join(", ")
    )
}

/// `reached`: the agents the preflight reached (none on a resume).
pub async fn drive(
    db: &PgPool,
    mut session: Session,
    cfg: &Config,
    reached: engine::reach::Reached,
) -> Result<ExitCode> {
    let run_id = session.id();
    let mut progress = Progress::new();
    let bar = progress.bar.clone();
    let mut on_event = |e: Event| progress.show(e);
    let outcome = tokio::select! {
        r = engine::drive(db, &mut session, cfg, reached, &mut on_event) => r?,
        signal = interrupted() => {
            // The drive was dropped with its requests: each agent ends what the job in
            // progress started when its request goes away.
            bar.finish_and_clear();
            store::interrupt_run(db, run_id).await?;
            for line in engine::restore_settings(db, run_id, cfg).await? {
                eprintln!("{}", kreg::text::printable(&line));
            }
            eprintln!(
                "run {run_id}: interrupted by {signal}; the job in progress was stopped and nothing of it stored. Continue with `kreg resume {run_id}`"
            );
            return Ok(ExitCode::from(130));
        }
    };
    bar.finish_and_clear();
    let loaded = kreg::view::load_report_of(db, &session.run, None, &kreg::stats::Settings::default()).await?;
    super::report::print(
        &loaded.report(super::report::boxes(false)).render(Format::Text),
        Format::Text,
    );
    println!("run {run_id}: {} jobs done, {} failed", outcome.done, outcome.failed);
    super::alerts::after_run(db, &session.run.scenario_name).await;
    Ok(if outcome.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// The first SIGINT or SIGTERM.
pub(super) async fn interrupted() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

/// `kreg run`'s arguments.
#[derive(clap::Args)]
pub struct RunArgs {
    #[arg(required_unless_present = "from", conflicts_with = "from")]
    pub file: Option<std::path::PathBuf>,
    /// Run a bundle of `kreg export` again: its scenario with the files it carries (the
    /// bundle's, not paths on this machine).
    #[arg(long, value_name = "BUNDLE")]
    pub from: Option<std::path::PathBuf>,
    /// Only the cells KERNEL/VARIANT/WORKLOAD (each a name of the scenario or *), e.g. a
    /// report row's cell and its baseline's, to measure them again. Repeatable
    #[arg(long, value_name = "KERNEL/VARIANT/WORKLOAD")]
    pub only: Vec<String>,
}

/// `kreg run FILE` or `kreg run --from BUNDLE`.
pub async fn run(a: &RunArgs, cfg: &Config) -> Result<ExitCode> {
    match (&a.file, &a.from) {
        (Some(file), _) => start(file, &a.only, cfg).await,
        (None, Some(bundle)) => {
            let from = super::bundle::Unpacked::read(bundle)?;
            let db = super::db::connect(cfg).await?;
            let files = from.put_files(&db).await?;
            let s = kreg::scenario_file::parse(&from.text, Path::new(&from.source)).map_err(|diags| {
                for d in &diags {
                    eprintln!("{}", d.render(&from.source));
                }
                anyhow::anyhow!("{}: its scenario has {} problem(s)", bundle.display(), diags.len())
            })?;
            let scenario = Recorded {
                text: &from.text,
                source: &from.source,
                files: Some(files),
            };
            record_and_drive(bundle, scenario, s, &a.only, cfg).await
        }
        (None, None) => bail!("give a scenario file or --from BUNDLE"),
    }
}

/// A scenario as `kreg run` records it: its text, where it came from, and the files it
/// carries when they were stored already (a bundle's).
struct Recorded<'a> {
    text: &'a str,
    source: &'a str,
    files: Option<Vec<store::blobs::RunFile>>,
}

/// `kreg run`: the hosts checked, the run recorded, then driven.
pub async fn start(file: &Path, only: &[String], cfg: &Config) -> Result<ExitCode> {
    // Read where it resolves to: the scenario's relative paths are those the stored run
    // will be read with.
    let source = std::fs::canonicalize(file).unwrap_or(file.to_path_buf());
    let (text, s) = super::validate::load_from(&source, file)?;
    let source = source.display().to_string();
    let scenario = Recorded {
        text: &text,
        source: &source,
        files: None,
    };
    record_and_drive(file, scenario, s, only, cfg).await
}

async fn record_and_drive(
    file: &Path,
    r: Recorded<'_>,
    s: kreg::scenario::Scenario,
    only: &[String],
    cfg: &Config,
) -> Result<ExitCode> {
    Ok(record_and_drive_id(file, r, s, None, only, cfg).await?.1)
}

/// The scenario of `file`, as given (its hosts' transports set by the caller), recorded
/// under the file's text and driven whole: the run's id and how it ended.
pub(super) async fn record_and_drive_scenario(
    file: &Path,
    s: kreg::scenario::Scenario,
    kind: Option<plan::RunKind>,
    only: &[String],
    cfg: &Config,
) -> Result<(i64, ExitCode)> {
    let source = std::fs::canonicalize(file).unwrap_or(file.to_path_buf());
    let text = std::fs::read_to_string(&source).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let source = source.display().to_string();
    let r = Recorded {
        text: &text,
        source: &source,
        files: None,
    };
    record_and_drive_id(file, r, s, kind, only, cfg).await
}

/// `kind`: the run's kind when not the scenario's own (a rehearsal).
async fn record_and_drive_id(
    file: &Path,
    r: Recorded<'_>,
    s: kreg::scenario::Scenario,
    kind: Option<plan::RunKind>,
    only: &[String],
    cfg: &Config,
) -> Result<(i64, ExitCode)> {
    let only = only
        .iter()
        .map(|o| plan::Only::parse(&s, o))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("{e}; no run recorded"))?;
    let jobs = plan::expand_only(&s, &only);
    if jobs.is_empty() {
        bail!(
            "{} has no job to run: no cell matches the --only given; no run recorded",
            file.display()
        );
    }
    // Every host reached and authenticated before anything is recorded.
    let agents = preflight(&s, cfg, file).await?;
    let db = super::db::connect(cfg).await?;
    let files = match r.files {
        Some(f) => f,
        None => store::blobs::carry(&db, &s).await?,
    };
    let scenario = store::ScenarioText {
        name: &s.name,
        yaml: r.text,
        source_path: r.source,
        files: &files,
    };
    let kind = kind.unwrap_or(plan::RunKind::of(&s));
    let run_id = store::record_run(&db, &scenario, kind, &jobs).await?;
    let cells = match only.is_empty() {
        true => String::new(),
        false => format!(
            ", only {}",
            only.iter().map(|o| o.to_string()).collect::<Vec<_>>().join(" ")
        ),
    };
    let again = match kind {
        plan::RunKind::Rehearsal => "rehearse again if it stops".to_string(),
        _ => format!("resume with `kreg resume {run_id}` if it stops"),
    };
    println!("run {run_id}: {} jobs ({}{cells}); {again}", jobs.len(), s.name);
    let session = Session::recorded(store::run(&db, run_id).await?, s);
    Ok((run_id, drive(&db, session, cfg, agents).await?))
}

/// A run of `kreg run` driven on from its first job not done.
pub(super) async fn resume_run(db: &sqlx::PgPool, row: store::RunRow, cfg: &Config) -> Result<ExitCode> {
    let run = row.id;
    let before = store::jobs(db, run).await?;
    let left = before.iter().filter(|j| j.state != plan::JobState::Done).count();
    let ended = matches!(row.state, plan::RunState::Done | plan::RunState::Failed);
    if left == 0 && ended {
        println!("run {run}: finished, all {} jobs done; nothing to resume", before.len());
        return Ok(ExitCode::SUCCESS);
    }
    if left == 0 {
        // Stopped after its last job was stored: what it left changed on the machines is
        // put back (an adaptive run takes the look it had not taken) and it ends.
        println!(
            "run {run}: all {} jobs done, the run not ended; ending it",
            before.len()
        );
    } else {
        println!("run {run}: resuming, {left} of {} jobs left", before.len());
    }
    drive(db, Session::of(row)?, cfg, Default::default()).await
}

/// A job's place in its cell, for the progress line and the plain log: iteration 0 is a
/// warm-up run (`warmup:`), stored and not judged.
fn job_label(iteration: i32) -> (String, String) {
    match iteration {
        0 => ("warm-up".to_string(), "warm-up".to_string()),
        i => (format!("iteration {i}"), format!("iteration={i}")),
    }
}

/// The preflight of `s` (every host reached and authenticated, its features and perf
/// checked) with what it found said on stderr: notes, warnings, then problems. The agents
/// reached, or an error when a problem keeps the scenario from starting (nothing recorded).
pub async fn preflight(
    s: &kreg::scenario::Scenario,
    cfg: &Config,
    file: &Path,
) -> Result<kreg::engine::reach::Reached> {
    let found = kreg::preflight::check(s, cfg).await;
    for n in &found.notes {
        eprintln!("kreg: {}", kreg::text::printable(n));
    }
    for w in &found.warnings {
        eprintln!("kreg: warning: {}", kreg::text::printable(w));
    }
    if !found.problems.is_empty() {
        for p in &found.problems {
            eprintln!("kreg: {}", kreg::text::printable(p));
        }
        bail!(
            "{} cannot start: {} problem(s), no run recorded",
            file.display(),
            found.problems.len()
        );
    }
    Ok(found.agents)
}
