//! Stored runs read back as the reports and pages show them: the one place `kreg report`,
//! `kreg compare` and the dashboard load a run's samples, provenance and failed cells, so
//! that every reader sees the same tables and verdicts.

use sqlx::PgPool;

pub mod bisect;
pub mod bundle;
pub mod history;

use crate::plan::RunState;
use crate::report::{self, Baseline, FailedCell, MetricTable, Report};
use crate::results::KernelProvenance;
use crate::scenario::Scenario;
use crate::stats::Settings;
use crate::{plan, store};

/// Why a view could not be made: what was asked for does not exist, the request itself is
/// wrong (with the reason), or the database failed.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<store::StoreError> for ViewError {
    fn from(e: store::StoreError) -> Self {
        match e {
            store::StoreError::NoSuchRun(id) => ViewError::NotFound(format!("run {id} does not exist")),
            e => ViewError::Other(e.into()),
        }
    }
}

impl From<sqlx::Error> for ViewError {
    fn from(e: sqlx::Error) -> Self {
        ViewError::Other(e.into())
    }
}

pub type Result<T> = std::result::Result<T, ViewError>;

/// The store's reads for pages, with what does not exist as `NotFound`.
pub mod queries {
    pub use crate::store::pages::*;

    use super::{Result, ViewError};
    use sqlx::PgExecutor;

    pub async fn run(db: impl PgExecutor<'_>, id: i64) -> Result<RunItem> {
        run_item(db, id)
            .await?
            .ok_or_else(|| ViewError::NotFound(format!("run {id} does not exist")))
    }

    /// A run's stored row and its page's item, in one query.
    pub async fn run_and_row(db: impl PgExecutor<'_>, id: i64) -> Result<(crate::store::RunRow, RunItem)> {
        run_with_item(db, id)
            .await?
            .ok_or_else(|| ViewError::NotFound(format!("run {id} does not exist")))
    }

    pub async fn job(db: impl PgExecutor<'_>, id: i64) -> Result<JobItem> {
        crate::store::pages::job(db, id)
            .await?
            .ok_or_else(|| ViewError::NotFound(format!("job {id} does not exist")))
    }

    pub async fn raw(db: impl PgExecutor<'_>, job_id: i64, kind: &str) -> Result<String> {
        let none = || ViewError::NotFound(format!("job {job_id} has no raw output {kind:?}"));
        let kind = crate::record::RawKind::parse(kind).ok_or_else(none)?;
        crate::store::raw_output(db, job_id, &kind).await?.ok_or_else(none)
    }

    pub async fn build(db: impl PgExecutor<'_>, key: &str) -> Result<BuildItem> {
        crate::store::pages::build(db, key)
            .await?
            .ok_or_else(|| ViewError::NotFound(format!("no kernel build {key:?}")))
    }
}

/// A report with everything it says, owned: `report()` lends it to the renderers.
pub struct Loaded {
    pub run_id: i64,
    pub scenario: Scenario,
    pub baseline: Baseline,
    pub tables: Vec<MetricTable>,
    pub settings: Settings,
    pub prov: Vec<KernelProvenance>,
    pub warnings: Vec<String>,
    pub failed: Vec<FailedCell>,
    pub sched_stats: Option<report::sched_stats::SchedStats>,
    /// Where the run stands when it has not finished (its verdicts are provisional).
    pub provisional: Option<report::provisional::Provisional>,
    /// Of two runs compared: the base run's own rows (its samples and summaries), to show
    /// beside the new run's.
    pub base_tables: Vec<MetricTable>,
    /// Of two runs compared: each kernel's environment in both, aspect by aspect.
    pub environment: Vec<report::EnvAspect>,
}

impl Loaded {
    pub fn report(&self, boxes: bool) -> Report<'_> {
        Report {
            run_id: self.run_id,
            scenario: &self.scenario,
            baseline: &self.baseline,
            tables: &self.tables,
            settings: &self.settings,
            prov: &self.prov,
            warnings: self.warnings.clone(),
            failed: self.failed.clone(),
            boxes,
            sched_stats: self.sched_stats.as_ref(),
            provisional: self.provisional.as_ref(),
        }
    }
}

/// The scenario a run was recorded with.
pub async fn scenario(db: &PgPool, run_id: i64) -> Result<(store::RunRow, Scenario)> {
    let run = store::run(db, run_id).await?;
    let s = scenario_of(&run)?;
    Ok((run, s))
}

/// The scenario of a run already read.
pub fn scenario_of(run: &store::RunRow) -> Result<Scenario> {
    crate::scenario_file::of_run(run).map_err(|detail| {
        ViewError::Other(anyhow::anyhow!(
            "run {}: its stored scenario no longer loads: {detail}",
            run.id
        ))
    })
}

/// Checks that a baseline names a kernel or variant of the scenario.
pub fn check_baseline(s: &Scenario, run_id: i64, baseline: &Baseline) -> Result<()> {
    match baseline {
        Baseline::Kernel(k) if s.kernel(k).is_none() => {
            let names: Vec<&str> = s.kernels.iter().map(|k| k.name.as_str()).collect();
            Err(ViewError::Invalid(format!(
                "kernel {k:?} is not in run {run_id} (kernels: {})",
                names.join(", ")
            )))
        }
        Baseline::Variant(v) if s.variant(v).is_none() => {
            let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
            Err(ViewError::Invalid(format!(
                "variant {v:?} is not in run {run_id} (variants: {})",
                names.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

/// Run `run`'s report as `format` says, as `kreg report` prints it and a bundle holds it (a
/// bisection's is the bisection's, which has no CSV form).
pub async fn report_text(
    db: &PgPool,
    run: i64,
    baseline: Option<Baseline>,
    settings: &Settings,
    format: report::Format,
    boxes: bool,
) -> Result<String> {
    if store::run(db, run).await?.kind == plan::RunKind::Bisection {
        // A bisection's kernels are its commits, with no baseline among them: its report is
        // the bisection's.
        let r = bisect::load_report(db, run).await?;
        return Ok(match format {
            report::Format::Json => serde_json::to_string_pretty(&r).map_err(anyhow::Error::from)?,
            report::Format::Markdown => crate::bisect::report::render(&r, true),
            report::Format::Text | report::Format::Mail => crate::bisect::report::render(&r, false),
            f @ (report::Format::Csv
            | report::Format::KernelTable
            | report::Format::BaseHead
            | report::Format::CompareKernels
            | report::Format::TipPatch) => {
                return Err(ViewError::Invalid(format!(
                    "run {run} is a bisection: its report is text, markdown or json, not {}",
                    f.name()
                )))
            }
        });
    }
    let loaded = load_report(db, run, baseline, settings).await?;
    Ok(loaded.report(boxes).render(format))
}

/// `kreg report`'s tables of a run against a baseline (the scenario's unless given).
pub async fn load_report(db: &PgPool, run_id: i64, baseline: Option<Baseline>, settings: &Settings) -> Result<Loaded> {
    let run = store::run(db, run_id).await?;
    load_report_of(db, &run, baseline, settings).await
}

/// [`load_report`] of a run already read (its row as it stands now).
pub async fn load_report_of(
    db: &PgPool,
    run: &store::RunRow,
    baseline: Option<Baseline>,
    settings: &Settings,
) -> Result<Loaded> {
    let started = std::time::Instant::now();
    let run_id = run.id;
    let s = scenario_of(run)?;
    let baseline = baseline.unwrap_or_else(|| report::default_baseline(&s));
    check_baseline(&s, run_id, &baseline)?;
    // The samples read and judged while the report's other parts are read. Judging a large
    // run takes tens of ms of CPU: off the async threads, so that a server goes on answering.
    let judged = async {
        let (samples, warmup) = store::samples_and_warmups(db, run_id).await?;
        let samples = std::sync::Arc::new(samples);
        tracing::debug!(
            "report of run {run_id}: {} samples read in {:?}",
            samples.len(),
            started.elapsed()
        );
        let (s2, b2, set, mine) = (s.clone(), baseline.clone(), *settings, samples.clone());
        let tables = tokio::task::spawn_blocking(move || report::tables(&s2, &mine, &b2, &set))
            .await
            .map_err(|e| ViewError::Other(anyhow::anyhow!("judging the report: {e}")))?;
        Ok::<_, ViewError>((samples, warmup, tables))
    };
    // The small parts one after the other on one connection, beside the samples' two.
    let others = async {
        let prov = store::provenance(db, run_id, &s.sut().name).await?;
        let jobs = sched_stats_jobs(db, run_id).await?;
        let provisional = provisional_of(db, run_id, run.state, &s).await?;
        let failed = failed_of(db, run_id).await?;
        let mixed = store::fleet::mixed_labels(db, run_id).await?;
        Ok::<_, ViewError>((prov, jobs, provisional, failed, mixed))
    };
    let ((samples, warmup, tables), (prov, jobs, provisional, failed, mixed)) = tokio::try_join!(judged, others)?;
    tracing::debug!("report of run {run_id}: judged and read by {:?}", started.elapsed());
    let mut warnings: Vec<String> = plan_differs(&s, &run.plan_settings(), settings, &baseline)
        .into_iter()
        .collect();
    warnings.extend(report::warmup::lines(&warmup, &samples));
    warnings.extend(mixed.map(|m| mixed_line(&m)));
    // A hundred thousand samples take a few ms to free: not on the answer's way.
    tokio::task::spawn_blocking(move || drop(samples));
    let sched_stats = report::sched_stats::section(&s, &jobs, &baseline, settings.alpha);
    tracing::debug!("report of run {run_id}: loaded in {:?}", started.elapsed());
    Ok(Loaded {
        run_id,
        baseline,
        tables,
        settings: *settings,
        prov,
        warnings,
        failed,
        scenario: s,
        sched_stats,
        provisional,
        base_tables: Vec::new(),
        environment: Vec::new(),
    })
}

/// Where a run that has not finished stands (its jobs counted per cell), or `None` once it
/// ended.
pub async fn provisional_of(
    db: &PgPool,
    run_id: i64,
    state: RunState,
    s: &Scenario,
) -> Result<Option<report::provisional::Provisional>> {
    if !matches!(state, RunState::Running | RunState::Interrupted) {
        return Ok(None);
    }
    let jobs = store::jobs(db, run_id).await?;
    Ok(report::provisional::Provisional::of(
        state,
        jobs.iter().map(|j| {
            (
                j.workload.as_str(),
                j.kernel.as_str(),
                j.variant.as_str(),
                j.state,
                j.warmup,
            )
        }),
        s.max_iterations,
    ))
}

/// What a report of an adaptive run says when it judges with other settings than the run's
/// rounds were decided with: its rows stopped (or went on) at looks these settings would not
/// have chosen, so its verdicts are not the plan's.
pub fn plan_differs(s: &Scenario, plan: &Settings, settings: &Settings, baseline: &Baseline) -> Option<String> {
    let default = report::default_baseline(s);
    let same = plan.alpha == settings.alpha && plan.min_effect == settings.min_effect && *baseline == default;
    if !s.adaptive() || same {
        return None;
    }
    let name = |b: &Baseline| match b {
        Baseline::Kernel(k) => format!("kernel {k}"),
        Baseline::Variant(v) => format!("variant {v}"),
        Baseline::Run(r) => format!("run {r}"),
    };
    Some(format!(
        "judged with alpha {}, minimum effect {}%, baseline {}; this adaptive run's rounds were decided with alpha {}, minimum effect {}%, baseline {}: rows were given more runs, or stopped, by the plan's settings, not these",
        settings.alpha,
        100.0 * settings.min_effect,
        name(baseline),
        plan.alpha,
        100.0 * plan.min_effect,
        name(&default)
    ))
}

/// The `perf sched stats` recordings of a run's done jobs, parsed, each with kreg's own
/// /proc/schedstat delta of the job when it has both snapshots.
pub async fn sched_stats_jobs(db: &PgPool, run_id: i64) -> Result<Vec<report::sched_stats::Job>> {
    let rows = store::sched_stats_reports(db, run_id).await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let label = format!("{}/{} {} iteration {}", r.kernel, r.variant, r.workload, r.iteration);
        let report = crate::collect::perf_sched_stats::parse(&r.report)
            .map_err(|e| ViewError::Other(anyhow::anyhow!("job {} ({label}): its stored report: {e}", r.job_id)))?;
        let schedstat = match (&r.before, &r.after) {
            (Some(b), Some(a)) => {
                let snap = |t: &str| crate::schedstat::parse(t).ok();
                snap(b)
                    .zip(snap(a))
                    .and_then(|(b, a)| crate::schedstat::diff(&b, &a).ok())
            }
            _ => None,
        };
        out.push(report::sched_stats::Job {
            kernel: r.kernel,
            variant: r.variant,
            workload: r.workload,
            label,
            report,
            schedstat,
        });
    }
    Ok(out)
}

/// The cells of a run whose jobs failed.
pub async fn failed_of(db: &PgPool, run_id: i64) -> Result<Vec<FailedCell>> {
    let jobs: Vec<report::JobSummary> = store::jobs(db, run_id)
        .await?
        .into_iter()
        .map(|j| report::JobSummary {
            failed: j.state == plan::JobState::Failed,
            kernel: j.kernel,
            variant: j.variant,
            workload: j.workload,
            error: j.error,
            class: j.failure_class,
        })
        .collect();
    Ok(report::failed_cells(&jobs))
}

/// `kreg compare A B`: B's rows against A's, only where the two runs define the workload,
/// the variant and the kernel alike; what differs is said (in `warnings`), and a
/// comparison with nothing alike is refused.
pub async fn load_compare(db: &PgPool, run_a: i64, run_b: i64) -> Result<Loaded> {
    let ((ra, sa), (rb, mut sb)) = (scenario(db, run_a).await?, scenario(db, run_b).await?);
    if sa.name != sb.name {
        return Err(ViewError::Invalid(format!(
            "run {run_a} is of scenario {:?}, run {run_b} of {:?}: compare runs of one scenario",
            sa.name, sb.name
        )));
    }
    let unlike = report::unlike((run_a, &sa, &ra.yaml), (run_b, &sb, &rb.yaml));
    if !sb
        .workloads
        .iter()
        .any(|w| sa.workload(&w.name).is_some() && !unlike.workloads.contains(&w.name))
    {
        return Err(ViewError::Invalid(format!(
            "runs {run_a} and {run_b} share no workload defined alike: nothing to compare ({})",
            unlike.warnings.join("; ")
        )));
    }
    sb.workloads.retain(|w| !unlike.workloads.contains(&w.name));
    sb.variants.retain(|v| !unlike.variants.contains(&v.name));
    sb.kernels.retain(|k| !unlike.kernels.contains(&k.name));
    let mut warnings = unlike.warnings;
    let settings = Settings::default();
    let (samples_a, samples_b) = (store::samples(db, run_a).await?, store::samples(db, run_b).await?);
    let tables = report::compare_runs(&sa, &samples_a, &sb, &samples_b, &settings);
    let base_tables = report::tables(&sa, &samples_a, &report::default_baseline(&sa), &settings);
    let prov_a = store::provenance(db, run_a, &sa.sut().name).await?;
    let prov_b = store::provenance(db, run_b, &sb.sut().name).await?;
    warnings.extend(report::environment_changes(&prov_a, &prov_b));
    let environment = report::environment_aspects(&prov_a, &prov_b);
    // Each kernel shown once per run, labelled with it.
    let mut prov = Vec::new();
    for (run, list) in [(run_a, prov_a), (run_b, prov_b)] {
        for mut p in list {
            p.kernel = format!("{} (run {run})", p.kernel);
            prov.push(p);
        }
    }
    let provisional = provisional_of(db, run_b, rb.state, &sb).await?;
    Ok(Loaded {
        provisional,
        base_tables,
        environment,
        run_id: run_b,
        scenario: sb,
        baseline: Baseline::Run(run_a),
        tables,
        settings,
        sched_stats: None,
        prov,
        warnings,
        failed: failed_of(db, run_b).await?,
    })
}

/// What a report says of a run whose pairs' machines have different labels.
fn mixed_line(machines: &[(String, store::fleet::Labels)]) -> String {
    let each: Vec<String> = machines
        .iter()
        .map(|(n, l)| {
            let l: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{n} ({})", if l.is_empty() { "no labels".into() } else { l.join(",") })
        })
        .collect();
    format!(
        "machines of different labels were mixed in this run, as its submission allowed (--mix-labels): {}; rows are still compared within each machine, but a verdict speaks for that mix of machines",
        each.join("; ")
    )
}
