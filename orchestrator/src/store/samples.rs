//! A run's samples as the verdicts read them: judged and warm-up, in the order taken.

use sqlx::{PgExecutor, PgPool};

use super::{copy, Result, StoreError};
use crate::results::Sample;

/// The judged samples of a run (warm-up runs left out).
pub async fn samples(db: &PgPool, run_id: i64) -> Result<Vec<Sample>> {
    Ok(samples_and_warmups(db, run_id).await?.0)
}

/// The samples of one boot's jobs (warm-ups left out), by kernel name and boot number.
pub async fn boot_samples(db: impl PgExecutor<'_>, run_id: i64, kernel: &str, boot: i32) -> Result<Vec<Sample>> {
    let rows: Vec<SampleRow> = sqlx::query_as(
        "SELECT j.kernel, j.variant, j.workload, j.iteration, r.metric, r.value, r.unit, r.higher_is_better,
                r.kind, r.kernel_release, r.observed_policy, COALESCE(j.boot_id, '') AS boot_id,
                COALESCE(j.machine, '') AS machine
         FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE r.run_id = $1 AND j.kernel = $2 AND j.boot = $3 AND NOT j.warmup ORDER BY j.iteration, r.metric",
    )
    .bind(run_id)
    .bind(kernel)
    .bind(boot)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Sample::from).collect())
}

/// A [`Sample`] as its query returns it.
#[derive(sqlx::FromRow)]
struct SampleRow {
    kernel: String,
    variant: String,
    workload: String,
    iteration: i32,
    metric: String,
    value: f64,
    unit: String,
    higher_is_better: bool,
    #[sqlx(try_from = "String")]
    kind: crate::stats::MetricKind,
    kernel_release: String,
    observed_policy: String,
    boot_id: String,
    machine: String,
}

impl From<SampleRow> for Sample {
    fn from(r: SampleRow) -> Sample {
        Sample {
            kernel: r.kernel.into(),
            variant: r.variant.into(),
            workload: r.workload.into(),
            iteration: r.iteration,
            metric: r.metric.into(),
            value: r.value,
            unit: r.unit.into(),
            higher_is_better: r.higher_is_better,
            kind: r.kind,
            kernel_release: r.kernel_release.into(),
            observed_policy: r.observed_policy.into(),
            boot_id: r.boot_id.into(),
            machine: r.machine.into(),
        }
    }
}

/// A run's samples, judged and of its warm-up runs (`warmup:`, which no verdict uses), each in the order taken (iteration, then the
/// plan's order, then metric).
pub async fn samples_and_warmups(db: &PgPool, run_id: i64) -> Result<(Vec<Sample>, Vec<Sample>)> {
    // Lean for large runs (a report may read 100,000 samples): the jobs' fields once per job
    // (a job's kernel release and policy are its results', stored with them in one
    // transaction), the results as a binary COPY (`copy`), each table on its own (a join
    // planned on statistics taken before a large run was stored can take a nested loop over
    // every result per job), both at once on two connections, and sorted here rather than by
    // the server (whose sort spills to disk at that size under the default work_mem).
    let (jobs, results): (Vec<JobFields>, Vec<copy::ResultRow>) = tokio::try_join!(
        async {
            sqlx::query_as(
                "SELECT id, ordinal, kernel, variant, workload, iteration, COALESCE(boot_id, '') AS boot_id, warmup,
                        COALESCE(kernel_release, '') AS kernel_release, COALESCE(observed_policy, '') AS observed_policy,
                        COALESCE(machine, '') AS machine
                 FROM jobs WHERE run_id = $1
                   AND slot NOT IN (SELECT slot FROM run_slots WHERE run_id = $1 AND state = 'set_aside')",
            )
            .bind(run_id)
            .fetch_all(db)
            .await
            .map_err(StoreError::from)
        },
        copy::results(db, run_id),
    )?;
    // Each job's text made shareable once, for all its samples: a sample of it to copy.
    let by_id: std::collections::HashMap<i64, (i32, bool, Sample)> = jobs
        .into_iter()
        .map(|j| {
            let template = Sample {
                kernel: j.kernel.into(),
                variant: j.variant.into(),
                workload: j.workload.into(),
                iteration: j.iteration,
                metric: "".into(),
                value: 0.0,
                unit: "".into(),
                higher_is_better: true,
                kind: crate::stats::MetricKind::Mean,
                kernel_release: j.kernel_release.into(),
                observed_policy: j.observed_policy.into(),
                boot_id: j.boot_id.into(),
                machine: j.machine.into(),
            };
            (j.id, (j.ordinal, j.warmup, template))
        })
        .collect();
    let (mut judged, mut warmups) = (Vec::with_capacity(results.len()), Vec::new());
    for r in results {
        let Some((ordinal, warmup, template)) = by_id.get(&r.job) else {
            continue;
        };
        let sample = Sample {
            metric: r.metric,
            value: r.value,
            unit: r.unit,
            higher_is_better: r.higher_is_better,
            kind: r.kind,
            ..template.clone()
        };
        if *warmup { &mut warmups } else { &mut judged }.push((*ordinal, sample));
    }
    Ok((in_run_order(judged), in_run_order(warmups)))
}

/// A job's fields a sample carries.
#[derive(sqlx::FromRow)]
struct JobFields {
    id: i64,
    ordinal: i32,
    kernel: String,
    variant: String,
    workload: String,
    iteration: i32,
    boot_id: String,
    warmup: bool,
    kernel_release: String,
    observed_policy: String,
    machine: String,
}

/// Samples (with their job's ordinal) in the order taken: iteration, ordinal, metric; sorted
/// by a small key, the samples moved once.
fn in_run_order(v: Vec<(i32, Sample)>) -> Vec<Sample> {
    let mut order: Vec<(i32, i32, &str, usize)> = v
        .iter()
        .enumerate()
        .map(|(i, (ordinal, s))| (s.iteration, *ordinal, &*s.metric, i))
        .collect();
    order.sort_unstable();
    let places: Vec<usize> = order.into_iter().map(|k| k.3).collect();
    let mut slots: Vec<Option<Sample>> = v.into_iter().map(|(_, s)| Some(s)).collect();
    places.into_iter().filter_map(|i| slots[i].take()).collect()
}
