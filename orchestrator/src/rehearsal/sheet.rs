//! The rehearsal's sheet read back from its run: the kernels stood in and booted, each
//! job's failure put to its step and to the place in the file that asked for it, the tools
//! installed, the settings made and put back, each workload's jobs and metrics, each
//! collector's records.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgPool;

use crate::rehearse::sheet::{place, position, JobCell, Outcome, Sheet, Step};
use crate::rehearse::Rehearsal;
use crate::scenario::Scenario;
use crate::yaml::Node;

use super::StandIn;

#[derive(sqlx::FromRow)]
struct Job {
    id: i64,
    kernel: String,
    variant: String,
    workload: String,
    state: String,
    error: Option<String>,
    kernel_release: Option<String>,
    tool_versions: sqlx::types::Json<BTreeMap<String, String>>,
}

/// What the run left, read once.
struct Read {
    jobs: Vec<Job>,
    /// kernel release → how it was booted.
    boots: BTreeMap<String, String>,
    /// workload → its metrics stored.
    metrics: BTreeMap<String, BTreeSet<String>>,
    /// job id → its raw records' kinds.
    raw: BTreeMap<i64, Vec<String>>,
    /// (host, setting, after, put back)
    settings: Vec<(String, String, String, bool)>,
}

async fn read(db: &PgPool, run: i64) -> Result<Read, sqlx::Error> {
    let jobs: Vec<Job> = sqlx::query_as(
        "SELECT id, kernel, variant, workload, state, error, kernel_release, tool_versions FROM jobs
         WHERE run_id = $1 ORDER BY ordinal",
    )
    .bind(run)
    .fetch_all(db)
    .await?;
    let boots: Vec<(String, String)> =
        sqlx::query_as("SELECT kernel_release, boot_method FROM hosts WHERE run_id = $1 ORDER BY id")
            .bind(run)
            .fetch_all(db)
            .await?;
    let metrics: Vec<(String, String)> = sqlx::query_as(
        "SELECT DISTINCT j.workload, r.metric FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = $1",
    )
    .bind(run)
    .fetch_all(db)
    .await?;
    let raw: Vec<(i64, String)> = sqlx::query_as("SELECT job_id, kind FROM raw_outputs WHERE run_id = $1")
        .bind(run)
        .fetch_all(db)
        .await?;
    let settings: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT host, setting, after, restored_at IS NOT NULL FROM host_settings WHERE run_id = $1 ORDER BY id",
    )
    .bind(run)
    .fetch_all(db)
    .await?;
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (w, metric) in metrics {
        m.entry(w).or_default().insert(metric);
    }
    let mut r: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (job, kind) in raw {
        r.entry(job).or_default().push(kind);
    }
    Ok(Read {
        jobs,
        boots: boots.into_iter().collect(),
        metrics: m,
        raw: r,
        settings,
    })
}

/// The sheet of rehearsal `r` (its scenario as run, `text` the file's) from run `run`.
pub async fn of_run(
    db: &PgPool,
    run: i64,
    r: &Rehearsal,
    stand_ins: &[StandIn],
    text: &str,
) -> Result<Sheet, sqlx::Error> {
    let got = read(db, run).await?;
    let root = crate::yaml::parse(text).ok();
    let root = root.as_ref();
    let mut sheet = Sheet::default();
    kernels(&mut sheet, &got, stand_ins, root);
    for j in got.jobs.iter().filter(|j| j.state == "failed") {
        let reason = j.error.as_deref().unwrap_or("failed");
        let cell = JobCell {
            kernel: &j.kernel,
            variant: &j.variant,
            workload: &j.workload,
        };
        let (step, subject, path) = place(reason, &cell);
        let reason = crate::text::one_line(reason.lines().next().unwrap_or(reason)).into_owned();
        let at = position(root, &path);
        sheet.push(step, subject, Outcome::Failed { reason, at });
    }
    tools(&mut sheet, &r.scenario, &got);
    tuning(&mut sheet, r, &got);
    workloads(&mut sheet, &r.scenario, &got);
    collectors(&mut sheet, &r.scenario, &got);
    Ok(sheet)
}

fn failed_at(sheet: &Sheet, step: Step, subject: &str) -> bool {
    sheet
        .lines
        .iter()
        .any(|l| l.step == step && l.subject == subject && matches!(l.outcome, Outcome::Failed { .. }))
}

fn kernels(sheet: &mut Sheet, got: &Read, stand_ins: &[StandIn], root: Option<&Node>) {
    for k in stand_ins {
        let release = got
            .jobs
            .iter()
            .filter(|j| j.kernel == k.kernel)
            .find_map(|j| j.kernel_release.clone());
        let path = ["kernels".to_string(), format!("name={}", k.kernel), "source".into()];
        let build = match (&k.by, &release) {
            (None, _) => Outcome::Done("the machine's own kernel".into()),
            (Some(by), rel) => Outcome::NotRehearsable {
                why: format!(
                    "given as {}: stood in by {by}{}",
                    k.given,
                    rel.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
                ),
                at: position(root, &path),
            },
        };
        sheet.push(Step::Build, &k.kernel, build);
        if let Some(rel) = release {
            let how = got.boots.get(&rel).map(String::as_str).unwrap_or("?");
            let how = match how {
                "none" => "already running".to_string(),
                m => format!("booted by {m}"),
            };
            sheet.push(Step::Boot, &k.kernel, Outcome::Done(format!("{rel} {how}, agent back")));
        }
    }
}

fn tools(sheet: &mut Sheet, s: &Scenario, got: &Read) {
    for t in &s.tools {
        if failed_at(sheet, Step::Tools, &t.name) {
            continue;
        }
        let seen: Vec<String> =
            t.on.iter()
                .filter_map(|h| {
                    let key = format!("{}@{h}", t.name);
                    got.jobs
                        .iter()
                        .find_map(|j| j.tool_versions.0.get(&key).map(|v| format!("{key} {v}")))
                })
                .collect();
        let outcome = match seen.is_empty() {
            true => Outcome::NotReached,
            false => Outcome::Done(format!("installed: {}", seen.join(", "))),
        };
        sheet.push(Step::Tools, &t.name, outcome);
    }
}

fn tuning(sheet: &mut Sheet, r: &Rehearsal, got: &Read) {
    for u in &r.not_rehearsable {
        let outcome = Outcome::NotRehearsable {
            why: u.why.clone(),
            at: u.at,
        };
        sheet.push(Step::Tuning, &u.what, outcome);
    }
    let mut by_host: BTreeMap<&str, Vec<&(String, String, String, bool)>> = BTreeMap::new();
    for s in &got.settings {
        by_host.entry(&s.0).or_default().push(s);
    }
    for (host, rows) in by_host {
        let set: BTreeSet<String> = rows.iter().map(|(_, k, v, _)| format!("{k}={v}")).collect();
        sheet.push(
            Step::Tuning,
            host,
            Outcome::Done(format!("set: {}", set.into_iter().collect::<Vec<_>>().join(", "))),
        );
        let left: BTreeSet<&str> = rows.iter().filter(|r| !r.3).map(|r| r.1.as_str()).collect();
        let outcome = match left.is_empty() {
            true => Outcome::Done(format!("every change put back ({})", rows.len())),
            false => Outcome::Failed {
                reason: format!("left changed: {}", left.into_iter().collect::<Vec<_>>().join(", ")),
                at: None,
            },
        };
        sheet.push(Step::Restore, host, outcome);
    }
}

fn workloads(sheet: &mut Sheet, s: &Scenario, got: &Read) {
    for w in &s.workloads {
        let jobs: Vec<&Job> = got.jobs.iter().filter(|j| j.workload == w.name).collect();
        let done = jobs.iter().filter(|j| j.state == "done").count();
        let has_server = super::server_addresses(&Scenario {
            workloads: vec![w.clone()],
            ..s.clone()
        })
        .len()
            == 1;
        if has_server && !failed_at(sheet, Step::Server, &w.name) {
            let outcome = match done {
                0 => Outcome::NotReached,
                n => Outcome::Done(format!("started and ready for {n} job(s)")),
            };
            sheet.push(Step::Server, &w.name, outcome);
        }
        if done == 0 {
            if !sheet
                .lines
                .iter()
                .any(|l| l.subject == w.name && matches!(l.outcome, Outcome::Failed { .. }))
            {
                sheet.push(Step::Workload, &w.name, Outcome::NotReached);
            }
            continue;
        }
        sheet.push(
            Step::Workload,
            &w.name,
            Outcome::Done(format!("{done} of {} job(s) done", jobs.len())),
        );
        let metrics: Vec<String> = got
            .metrics
            .get(&w.name)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let more = match metrics.len() {
            n if n > 8 => format!(", and {} more", n - 8),
            _ => String::new(),
        };
        let shown = metrics.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        let outcome = match metrics.is_empty() {
            true => Outcome::Failed {
                reason: "jobs done but no metric stored".into(),
                at: None,
            },
            false => Outcome::Done(format!("{} metric(s): {shown}{more}", metrics.len())),
        };
        sheet.push(Step::Parse, &w.name, outcome);
    }
}

fn collectors(sheet: &mut Sheet, s: &Scenario, got: &Read) {
    let mut asked: BTreeMap<&'static str, Vec<&Job>> = BTreeMap::new();
    for w in &s.workloads {
        for name in s.collect.or(w.collect).names() {
            let jobs = got.jobs.iter().filter(|j| j.workload == w.name && j.state == "done");
            asked.entry(name).or_default().extend(jobs);
        }
    }
    for (name, jobs) in asked {
        if jobs.is_empty() {
            sheet.push(Step::Collectors, name, Outcome::NotReached);
            continue;
        }
        let missing: Vec<String> = jobs
            .iter()
            .filter(|j| {
                !got.raw
                    .get(&j.id)
                    .is_some_and(|kinds| kinds.iter().any(|k| k.starts_with(name)))
            })
            .map(|j| format!("{}/{}/{}", j.kernel, j.variant, j.workload))
            .collect();
        let outcome = match missing.is_empty() {
            true => Outcome::Done(format!("recorded in {} job(s)", jobs.len())),
            false => Outcome::Failed {
                reason: format!("recorded nothing in {}", missing.join(", ")),
                at: None,
            },
        };
        sheet.push(Step::Collectors, name, outcome);
    }
}
