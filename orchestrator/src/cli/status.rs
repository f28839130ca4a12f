//! `kreg status`: where runs stand, and a run's jobs.

use std::process::ExitCode;

use anyhow::{bail, Result};
use sqlx::PgPool;

use kreg::plan::RunKind;
use kreg::store;

/// `kreg status`'s arguments.
#[derive(clap::Args)]
pub struct StatusArgs {
    /// A run: its jobs listed too.
    pub run: Option<i64>,
}

pub async fn status(db: &PgPool, run: Option<i64>) -> Result<ExitCode> {
    let runs = match run {
        Some(id) => store::pages::run_item(db, id).await?.into_iter().collect(),
        // Oldest first: the list grows at the bottom, as a terminal reads it.
        None => store::pages::run_items(db).await?.into_iter().rev().collect::<Vec<_>>(),
    };
    if let Some(id) = run {
        if runs.is_empty() {
            bail!("run {id} does not exist");
        }
    }
    if runs.is_empty() {
        println!("no runs yet: start one with `kreg run SCENARIO.yaml`");
    }
    let bisections = match runs.iter().any(|r| r.kind == RunKind::Bisection) {
        true => store::bisect::bisection_kinds(db).await?,
        false => Vec::new(),
    };
    for r in &runs {
        let of_run = |b: &&(i64, String, Option<String>)| b.0 == r.id && r.kind == RunKind::Bisection;
        let bisect = bisections.iter().find(of_run).map(|(_, what, kind)| {
            format!(
                "      a bisection of {}: {} (`kreg bisect --show {}`)",
                kreg::text::one_line(what),
                kind.as_deref()
                    .map(|k| k.replace('_', " "))
                    .unwrap_or_else(|| "going on".into()),
                r.id
            )
        });
        println!(
            "run {}  {:<24} {:<8} {}/{} done, {} failed  (started {})",
            r.id,
            kreg::text::one_line(&r.scenario),
            r.state,
            r.done,
            r.jobs,
            r.failed,
            r.created_at.format("%Y-%m-%d %H:%M:%S UTC")
        );
        if let Some(b) = bisect {
            println!("{b}");
        }
    }
    if let Some(id) = run {
        if runs.iter().any(|r| r.kind == RunKind::Bisection) {
            if let Some(log) = super::bisect::status(db, id).await? {
                print!("{}", kreg::text::printable(&log));
                return Ok(ExitCode::SUCCESS);
            }
        }
        for j in store::jobs(db, id).await? {
            let err = j
                .error
                .as_deref()
                .map(|e| format!("  {}", kreg::text::one_line(e.lines().next().unwrap_or(""))))
                .unwrap_or_default();
            let run = match j.warmup {
                true => "warm-up".to_string(),
                false => format!("iteration={}", j.iteration),
            };
            println!(
                "  #{:<4} {:<8} kernel={} variant={} workload={} {run} attempts={}{err}",
                j.ordinal, j.state, j.kernel, j.variant, j.workload, j.attempts
            );
        }
    } else {
        print!("{}", kreg::text::printable(&super::fleet::status(db).await?));
    }
    Ok(ExitCode::SUCCESS)
}
