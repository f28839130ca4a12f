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
use crate::store::rehearsal::{read, Job, Read};

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
    // A kernel none of whose cells ran (left out by --only) has no line.
    for k in stand_ins
        .iter()
        .filter(|k| got.jobs.iter().any(|j| j.kernel == k.kernel))
    {
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
        if jobs.is_empty() {
            continue;
        }
        let done = jobs.iter().filter(|j| j.state == "done").count();
        let has_server = super::server_of(&w.kind).is_some();
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
