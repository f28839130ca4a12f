//! `kreg bisect`: from "this metric got worse between two refs" to the first bad commit,
//! confirmed. The scenario gives the machines, the kernel's tree, config and patches, the
//! workload and the variant; its `bisect:` section (or the options, which win) gives the
//! range and the metric. The bisection is a run: `kreg resume` continues it, `kreg status`
//! shows it, `kreg bisect --show RUN` prints its report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use sqlx::PgPool;

use kreg::bisect::report;
use kreg::bisect::{metric_of, Outcome, Spec};
use kreg::config::Config;
use kreg::engine::session::Session;
use kreg::engine::{self, bisect as eb};
use kreg::scenario::{KernelSource, Scenario, TreeSource};
use kreg::store::{self, bisect as sb};

#[derive(clap::Args)]
pub struct BisectArgs {
    /// The scenario (its `bisect:` section, if any, gives what the options do not).
    #[arg(required_unless_present = "show")]
    pub file: Option<PathBuf>,
    /// The ref (commit, tag, branch) that behaves well.
    #[arg(long)]
    pub good: Option<String>,
    /// The ref that behaves badly.
    #[arg(long)]
    pub bad: Option<String>,
    /// WORKLOAD/METRIC: the number followed (e.g. hb/time).
    #[arg(long)]
    pub metric: Option<String>,
    /// The variant the workload runs under (default: the scenario's only one).
    #[arg(long)]
    pub variant: Option<String>,
    /// The scenario's kernel built from git whose tree, config and patches each step uses
    /// (default: its only such kernel).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Print the report of the bisection run RUN (as far as it went) and exit.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["good", "bad", "metric", "variant", "kernel"])]
    pub show: Option<i64>,
    /// With --show: print instead the bisection's scenario with its kernel at COMMIT (a
    /// commit of the range, by a prefix of its hash), to measure that commit with `kreg run`.
    #[arg(long, value_name = "COMMIT", requires = "show")]
    pub at: Option<String>,
    /// text, markdown or json.
    #[arg(long, default_value = "text", value_parser = ["text", "markdown", "json"])]
    pub format: String,
}

/// What to bisect: the section's settings under the options.
fn spec_of(s: &Scenario, a: &BisectArgs) -> Result<Spec> {
    let mut spec = s.bisect.clone().unwrap_or_default();
    let or = |opt: &Option<String>, was: Option<String>| opt.clone().or(was);
    spec.good = or(&a.good, spec.good);
    spec.bad = or(&a.bad, spec.bad);
    spec.variant = or(&a.variant, spec.variant);
    spec.kernel = or(&a.kernel, spec.kernel);
    if let Some(m) = &a.metric {
        spec.metric = Some(metric_of(m).map_err(|e| anyhow!(e))?);
    }
    let git_kernels: Vec<&str> = s
        .kernels
        .iter()
        .filter(|k| matches!(&k.source, KernelSource::Build(b) if matches!(b.tree, TreeSource::Git { .. })))
        .map(|k| k.name.as_str())
        .collect();
    if spec.kernel.is_none() {
        match git_kernels.as_slice() {
            [one] => spec.kernel = Some(one.to_string()),
            [] => bail!("the scenario has no kernel built from a git tree: a bisection builds commits of one"),
            many => bail!(
                "the scenario has several kernels built from git ({}): say which with --kernel",
                many.join(", ")
            ),
        }
    }
    if spec.variant.is_none() {
        match s.variants.as_slice() {
            [one] => spec.variant = Some(one.name.clone()),
            many => bail!(
                "the scenario has several variants ({}): say which with --variant",
                many.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    }
    let missing: Vec<&str> = [
        ("--good", spec.good.is_none()),
        ("--bad", spec.bad.is_none()),
        ("--metric", spec.metric.is_none()),
    ]
    .iter()
    .filter(|(_, m)| *m)
    .map(|(n, _)| *n)
    .collect();
    if !missing.is_empty() {
        bail!(
            "missing {} (an option, or the scenario's `bisect:` section)",
            missing.join(", ")
        );
    }
    let (w, _) = spec.metric.as_ref().expect("checked");
    if s.workload(w).is_none() {
        bail!("the scenario has no workload {w:?}");
    }
    let v = spec.variant.as_deref().expect("set");
    if s.variant(v).is_none() {
        bail!("the scenario has no variant {v:?}");
    }
    eb::source(s, spec.kernel.as_deref().expect("set")).map_err(|e| anyhow!(e))?;
    Ok(spec)
}

/// `kreg bisect`.
pub async fn bisect(cfg: &Config, a: &BisectArgs) -> Result<ExitCode> {
    if let Some(run) = a.show {
        let db = super::db::connect(cfg).await?;
        match &a.at {
            Some(at) => print!("{}", pinned(&db, run, at).await?),
            None => print_report(&db, run, &a.format).await?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    let file = a.file.as_deref().expect("clap requires it");
    // Read where it resolves to: the scenario's relative paths are those the stored run
    // will be read with.
    let source = std::fs::canonicalize(file).unwrap_or(file.to_path_buf());
    let (text, s) = super::validate::load_from(&source, file)?;
    let spec = spec_of(&s, a)?;
    let agents = super::run::preflight(&s, cfg, file).await?;
    let db = super::db::connect(cfg).await?;
    let run_id = record(&db, cfg, &source, &text, &s, &spec).await?;
    let session = Session::recorded(store::run(&db, run_id).await?, s);
    drive(&db, session, cfg, agents, &a.format).await
}

/// The range resolved in the kernel's repository and the bisection recorded.
async fn record(db: &PgPool, cfg: &Config, source: &Path, text: &str, s: &Scenario, spec: &Spec) -> Result<i64> {
    let kernel = spec.kernel.clone().expect("set");
    let url = eb::source(s, &kernel).map_err(|e| anyhow!(e))?.url.to_string();
    let (good, bad) = (spec.good.clone().expect("set"), spec.bad.clone().expect("set"));
    let cache = cfg.cache_dir.clone();
    let (g, b) = (good.clone(), bad.clone());
    let commits = tokio::task::spawn_blocking(move || kreg::kernel::range::commits(&url, &g, &b, &cache))
        .await?
        .map_err(|e| anyhow!("{e}"))?;
    let (workload, metric) = spec.metric.clone().expect("set");
    let row = sb::BisectionRow {
        run_id: 0,
        kernel,
        workload,
        metric,
        variant: spec.variant.clone().expect("set"),
        good,
        bad,
        commit_count: commits.len() as i32,
        rules: sqlx::types::Json(serde_json::to_value(spec.rules).expect("serialisable")),
        outcome: None,
    };
    let n = commits.len();
    let source = source.display().to_string();
    let files = store::blobs::carry(db, s).await?;
    let scenario = store::ScenarioText {
        name: &s.name,
        yaml: text,
        source_path: &source,
        files: &files,
    };
    let run_id = sb::record_bisection(db, &scenario, &row, &commits).await?;
    // Progress on stderr: stdout is the report alone (`--format json | jq` works).
    eprintln!(
        "run {run_id}: bisecting {}/{} over {n} commits ({} .. {}); resume with `kreg resume {run_id}` if it stops",
        row.workload, row.metric, row.good, row.bad
    );
    Ok(run_id)
}

/// `kreg resume RUN` of a bisection: it goes on where it stands.
pub async fn resume(db: &PgPool, row: store::RunRow, cfg: &Config) -> Result<ExitCode> {
    let run = row.id;
    let b = sb::bisection(db, run)
        .await?
        .ok_or_else(|| anyhow!("run {run} is not a bisection"))?;
    if b.outcome.is_some() {
        // Ended on boots the lab failed: those are tried again; a failure of the kernel's,
        // the build's or the workload's stays what the bisection decided.
        let ms = sb::measurements(db, run).await?;
        let lab = sb::lab_failures_at_end(&ms);
        let Some(last) = ms.last().filter(|_| !lab.is_empty()) else {
            println!("run {run}: a finished bisection; nothing to resume (`kreg bisect --show {run}`)");
            return Ok(ExitCode::SUCCESS);
        };
        sb::reopen(db, run, &lab).await?;
        eprintln!(
            "run {run}: the bisection ended on {} boot(s) of {} ({}) that the lab failed ({}): they are set aside and tried again",
            lab.len(),
            last.kernel,
            last.role.name(),
            last.error.as_deref().unwrap_or("no reason stored")
        );
    }
    eprintln!("run {run}: resuming the bisection");
    drive(db, Session::of(row)?, cfg, Default::default(), "text").await
}

/// Drives the bisection of `session` (new, or resumed) and prints its report.
pub async fn drive(
    db: &PgPool,
    mut session: Session,
    cfg: &Config,
    reached: engine::reach::Reached,
    format: &str,
) -> Result<ExitCode> {
    let run_id = session.id();
    let mut progress = super::run::Progress::new();
    let mut on_event = |e: engine::Event| progress.show(e);
    let outcome = tokio::select! {
        r = eb::bisect(db, &mut session, cfg, reached, &mut on_event) => r?,
        signal = super::run::interrupted() => {
            store::interrupt_run(db, run_id).await?;
            for line in engine::restore_settings(db, run_id, cfg).await? {
                eprintln!("{}", kreg::text::printable(&line));
            }
            eprintln!(
                "run {run_id}: bisection interrupted by {signal}; the boot in progress is measured again on resume. Continue with `kreg resume {run_id}`"
            );
            return Ok(ExitCode::from(130));
        }
    };
    print_report(db, run_id, format).await?;
    Ok(match outcome {
        Outcome::Culprit { .. } | Outcome::DoesNotReproduce { .. } => ExitCode::SUCCESS,
        // Nothing was bisected: an error, as the README says (1), with why on stderr.
        Outcome::EndpointFailed { commit, reason } => {
            eprintln!(
                "kreg: run {run_id}: the range's {} end (commit {commit}) could not be built or booted: {}",
                if commit == 0 { "good" } else { "bad" },
                kreg::text::one_line(&reason)
            );
            ExitCode::from(1)
        }
        Outcome::TwoChanges { first, second, .. } if first.culprit().is_some() && second.culprit().is_some() => {
            ExitCode::SUCCESS
        }
        Outcome::Range { .. } | Outcome::Ambiguous { .. } | Outcome::TwoChanges { .. } => ExitCode::from(3),
    })
}

async fn print_report(db: &PgPool, run_id: i64, format: &str) -> Result<()> {
    let r = kreg::view::bisect::load_report(db, run_id).await?;
    match format {
        "json" => println!("{}", serde_json::to_string_pretty(&r)?),
        f => print!("{}", kreg::text::printable(&report::render(&r, f == "markdown"))),
    }
    Ok(())
}

/// `kreg status RUN` of a bisection: its report as it stands, then every measurement in
/// the order asked (its commit, why, and what the boot gave); `None` for another run.
pub async fn status(db: &PgPool, run_id: i64) -> Result<Option<String>> {
    let Some(row) = sb::bisection(db, run_id).await? else {
        return Ok(None);
    };
    let mut out = report::render(&kreg::view::bisect::load_report(db, run_id).await?, false);
    out.push_str("measurements:\n");
    let commits = sb::commits(db, run_id).await?;
    for m in sb::measurements(db, run_id).await? {
        let c = &commits[m.commit_index as usize];
        let got = match (&m.value, &m.error) {
            (Some(v), _) => format!("{} = {v:.6}", row.metric),
            (None, Some(e)) => format!("no value: {}", kreg::text::one_line(e.lines().next().unwrap_or(""))),
            (None, None) => "being measured".into(),
        };
        let built = if m.compiled { ", built for it" } else { "" };
        out.push_str(&format!(
            "  {:>3} {:<9} {:<20} boot {:<3} {got}{built}  ({})\n",
            m.seq, m.role, m.kernel, m.boot, c.subject
        ));
        if let Some(t) = m.phases.as_deref().and_then(report::phases_text) {
            out.push_str(&format!("      {t}\n"));
        }
    }
    Ok(Some(out))
}

/// The bisection's stored scenario with its kernel pinned to the commit `at` names.
async fn pinned(db: &PgPool, run_id: i64, at: &str) -> Result<String> {
    let run = store::run(db, run_id).await?;
    let row = sb::bisection(db, run_id)
        .await?
        .ok_or_else(|| anyhow!("run {run_id} is not a bisection"))?;
    let commits = sb::commits(db, run_id).await?;
    let found: Vec<&report::Commit> = commits
        .iter()
        .filter(|c| at.len() >= 4 && c.hash.starts_with(&at.to_lowercase()))
        .collect();
    let commit = match found.as_slice() {
        [one] => one,
        [] => bail!("{at:?} is not a commit of run {run_id}'s range (give at least 4 characters of its hash)"),
        _ => bail!("{at:?} names several commits of the range: give more of the hash"),
    };
    let text = kreg::scenario::pin::with_kernel_ref(&run.yaml, &row.kernel, &commit.hash).map_err(|e| anyhow!(e))?;
    Ok(format!(
        "# {} with kernel {} at {} ({}), from bisection run {run_id};\n# its relative paths are those of {}: save it in that folder\n{text}",
        run.scenario_name, row.kernel, commit.hash, commit.subject, run.source_path
    ))
}
