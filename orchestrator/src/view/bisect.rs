//! A bisection read back from the store as its report, for `kreg bisect --show`,
//! `kreg status` and the dashboard alike: its decisions replayed from the stored
//! measurements, the numbers and the builds counted from them.

use anyhow::{anyhow, Result};
use sqlx::PgPool;

use crate::bisect::report::{self, About, Boot};
use crate::bisect::Outcome;
use crate::store::{self, bisect as sb};

/// The report of a bisection run as it stands.
pub async fn load_report(db: &PgPool, run_id: i64) -> Result<report::Report> {
    let run = store::run(db, run_id).await?;
    let row = sb::bisection(db, run_id)
        .await?
        .ok_or_else(|| anyhow!("run {run_id} is not a bisection"))?;
    let ms = sb::measurements(db, run_id).await?;
    let (bisection, _) = sb::replay(&row, &ms).map_err(|e| anyhow!(e))?;
    let boots: Vec<Boot> = ms
        .iter()
        .filter(|m| m.measured())
        .map(|m| Boot {
            commit: m.commit_index as usize,
            role: m.role,
            value: match (&m.value, &m.error) {
                (Some(v), _) => Ok(*v),
                (None, e) => Err(e.clone().unwrap_or_default()),
            },
        })
        .collect();
    let compiled = ms.iter().filter(|m| m.compiled).count();
    let failed = ms.iter().filter(|m| m.compiled && m.error.is_some()).count();
    let outcome: Option<Outcome> = row
        .outcome
        .as_ref()
        .and_then(|o| serde_json::from_value(o.0.clone()).ok());
    // The machine is named as the scenario names its SUT (when the stored text still loads).
    let sut = crate::scenario_file::of_run(&run)
        .map(|s| s.sut().name.clone())
        .unwrap_or_else(|_| "the SUT".into());
    let machine = store::provenance(db, run_id, &sut)
        .await
        .ok()
        .and_then(|p| p.into_iter().find_map(|k| k.boots.into_iter().find(|b| b.host == sut)))
        .map(|b| format!("{sut} ({}, {} CPUs)", b.cpu_model, b.cpus))
        .unwrap_or(sut);
    let about = About {
        run: run_id,
        scenario_file: run.source_path.clone(),
        kernel: row.kernel.clone(),
        workload: row.workload.clone(),
        metric: row.metric.clone(),
        variant: row.variant.clone(),
        machine,
        good_ref: row.good.clone(),
        bad_ref: row.bad.clone(),
    };
    // Only the commits the report names are read: the ends, those measured, the culprit.
    let count = row.commit_count as usize;
    let named: Vec<i32> = report::Range::named(count, &boots, outcome.as_ref())
        .into_iter()
        .map(|i| i as i32)
        .collect();
    let range = report::Range {
        count,
        known: sb::commits_at(db, run_id, &named)
            .await?
            .into_iter()
            .map(|(i, c)| (i as usize, c))
            .collect(),
    };
    let mut r = report::report(
        about,
        &range,
        &bisection,
        &boots,
        report::Builds { compiled, failed },
        outcome,
    );
    r.phases = phase_totals(&ms);
    Ok(r)
}

/// The measurements' phases summed by name, in the order they first ran.
fn phase_totals(ms: &[sb::Measurement]) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for (name, secs) in ms.iter().filter_map(|m| m.phases.as_ref()).flatten() {
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 += secs,
            None => out.push((name.clone(), *secs)),
        }
    }
    out
}
