//! `kreg report` and `kreg compare`: the stored samples as a `report::Report`, with the
//! failed cells, and between two runs only what they define alike.

use std::process::ExitCode;

use anyhow::{bail, Result};
use sqlx::PgPool;

use kreg::{engine, plan, report, store};

use crate::Format;

/// A format, and whether text tables may use box-drawing characters (asked for, or
/// printing to a terminal).
pub type Style = (Format, bool);

fn boxes(asked: bool) -> bool {
    use std::io::IsTerminal;
    asked || std::io::stdout().is_terminal()
}

pub async fn print_report(
    db: &PgPool,
    run_id: i64,
    baseline: Option<report::Baseline>,
    (format, boxes_asked): Style,
    settings: &kreg::stats::Settings,
) -> Result<()> {
    let run = store::run(db, run_id).await?;
    let s = engine::scenario_of(&run)?;
    let baseline = baseline.unwrap_or_else(|| report::default_baseline(&s));
    match &baseline {
        report::Baseline::Kernel(k) if s.kernel(k).is_none() => {
            let names: Vec<&str> = s.kernels.iter().map(|k| k.name.as_str()).collect();
            bail!("kernel {k:?} is not in run {run_id} (kernels: {})", names.join(", "));
        }
        report::Baseline::Variant(v) if s.variant(v).is_none() => {
            let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
            bail!("variant {v:?} is not in run {run_id} (variants: {})", names.join(", "));
        }
        _ => {}
    }
    let samples = store::samples(db, run_id).await?;
    let tables = report::tables(&s, &samples, &baseline, settings);
    let prov = store::provenance(db, run_id, &s.sut().name).await?;
    let rep = report::Report {
        run_id,
        scenario: &s,
        baseline: &baseline,
        tables: &tables,
        settings,
        prov: &prov,
        warnings: Vec::new(),
        failed: failed_of(db, run_id).await?,
        boxes: boxes(boxes_asked),
    };
    let text = rep.render(format.into());
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(())
}

/// The cells of a run whose jobs failed.
async fn failed_of(db: &PgPool, run_id: i64) -> Result<Vec<report::FailedCell>> {
    let jobs: Vec<report::JobSummary> = store::jobs(db, run_id)
        .await?
        .into_iter()
        .map(|j| report::JobSummary {
            failed: j.state == plan::JobState::Failed,
            kernel: j.kernel,
            variant: j.variant,
            workload: j.workload,
            error: j.error,
        })
        .collect();
    Ok(report::failed_cells(&jobs))
}

/// `kreg compare A B`: B's rows against A's, only where the two runs define the workload,
/// the variant and the kernel alike; what differs is said, and a comparison with nothing
/// alike is refused.
pub async fn compare(db: &PgPool, run_a: i64, run_b: i64, (format, boxes_asked): Style) -> Result<ExitCode> {
    let (ra, rb) = (store::run(db, run_a).await?, store::run(db, run_b).await?);
    let (sa, mut sb) = (engine::scenario_of(&ra)?, engine::scenario_of(&rb)?);
    if sa.name != sb.name {
        bail!(
            "run {run_a} is of scenario {:?}, run {run_b} of {:?}: compare runs of one scenario",
            sa.name,
            sb.name
        );
    }
    let unlike = report::unlike((run_a, &sa, &ra.yaml), (run_b, &sb, &rb.yaml));
    if !sb
        .workloads
        .iter()
        .any(|w| sa.workload(&w.name).is_some() && !unlike.workloads.contains(&w.name))
    {
        for w in &unlike.warnings {
            eprintln!("kreg: {w}");
        }
        bail!("runs {run_a} and {run_b} share no workload defined alike: nothing to compare");
    }
    sb.workloads.retain(|w| !unlike.workloads.contains(&w.name));
    sb.variants.retain(|v| !unlike.variants.contains(&v.name));
    sb.kernels.retain(|k| !unlike.kernels.contains(&k.name));
    let mut warnings = unlike.warnings;
    let settings = kreg::stats::Settings::default();
    let (samples_a, samples_b) = (store::samples(db, run_a).await?, store::samples(db, run_b).await?);
    let tables = report::compare_runs(&sa, &samples_a, &sb, &samples_b, &settings);
    let base = report::Baseline::Run(run_a);
    let prov_a = store::provenance(db, run_a, &sa.sut().name).await?;
    let prov_b = store::provenance(db, run_b, &sb.sut().name).await?;
    warnings.extend(report::environment_changes(&prov_a, &prov_b));
    // Each kernel shown once per run, labelled with it.
    let mut prov = Vec::new();
    for (run, list) in [(run_a, prov_a), (run_b, prov_b)] {
        for mut p in list {
            p.kernel = format!("{} (run {run})", p.kernel);
            prov.push(p);
        }
    }
    let rep = report::Report {
        run_id: run_b,
        scenario: &sb,
        baseline: &base,
        tables: &tables,
        settings: &settings,
        prov: &prov,
        warnings,
        failed: failed_of(db, run_b).await?,
        boxes: boxes(boxes_asked),
    };
    print!("{}", rep.render(format.into()));
    Ok(ExitCode::SUCCESS)
}

/// `kreg report` with its settings checked.
pub async fn report(
    cfg: &kreg::config::Config,
    run: i64,
    baseline: Option<report::Baseline>,
    style: Style,
    alpha: f64,
    min_effect: f64,
) -> Result<ExitCode> {
    let settings = kreg::stats::Settings::checked(alpha, min_effect).map_err(anyhow::Error::msg)?;
    let db = super::db::connect(cfg).await?;
    print_report(&db, run, baseline, style, &settings).await?;
    Ok(ExitCode::SUCCESS)
}
