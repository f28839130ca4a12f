//! The runs page (every run with its progress) and a run's page (its job matrix, failed
//! jobs, each kernel's provenance and the scenario), both live.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Html;
use serde::Serialize;
use sqlx::PgPool;

use super::html::{self, esc, Live};
use super::{id_of, json, ApiResult, AppState, PageResult};
use crate::plan::JobState;
use crate::report::FailedCell;
use crate::results::KernelProvenance;
use crate::store::JobRow;
use crate::view::{self, queries, queries::BootItem, queries::RunItem};

pub async fn runs_api(State(st): State<AppState>) -> ApiResult {
    json(&queries::runs(&st.db).await?)
}

pub async fn runs_page(State(st): State<AppState>) -> PageResult {
    let runs = queries::runs(&st.db).await?;
    let now = chrono::Utc::now();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                html::link(&format!("/runs/{}", r.id), &r.id.to_string()),
                esc(&r.scenario),
                format!("<span class=\"state s-{0}\">{0}</span>", r.state),
                progress(r),
                html::time(&r.created_at),
                html::duration(r.duration_s(now)),
                html::link(&format!("/runs/{}/report", r.id), "report"),
            ]
        })
        .collect();
    let body = if runs.is_empty() {
        "<p>No runs yet: start one with <code>kreg run SCENARIO.yaml</code>.</p>".to_string()
    } else {
        html::table(
            "runs",
            &["run", "scenario", "state", "progress", "started", "duration", ""],
            &rows,
        )
    };
    let compare = if runs.len() >= 2 {
        let opts: String = runs
            .iter()
            .map(|r| format!("<option value=\"{0}\">run {0} ({1})</option>", r.id, esc(&r.scenario)))
            .collect();
        format!(
            "<form class=\"pick\" method=\"get\" action=\"/compare\"><label>run <select name=\"b\">{opts}</select></label>\
<label>against run <select name=\"a\">{opts}</select></label><button type=\"submit\">Compare</button></form>"
        )
    } else {
        String::new()
    };
    Ok(Html(html::layout(
        "Runs",
        &format!("<div id=\"runs\" data-live>{body}</div>{compare}"),
        &Live::All,
    )))
}

/// A bar of done, failed and running jobs of the total, with the counts.
fn progress(r: &RunItem) -> String {
    let total = r.jobs.max(1) as f64;
    let w = |n: i64| 100.0 * n as f64 / total;
    format!(
        "<div class=\"progress\" title=\"{d} done, {f} failed, {ru} running, {p} pending of {t}\">\
<span class=\"s-done\" style=\"width:{:.1}%\"></span><span class=\"s-failed\" style=\"width:{:.1}%\"></span>\
<span class=\"s-running\" style=\"width:{:.1}%\"></span></div><span class=\"counts\">{d}/{t} done, {f} failed, {p} pending</span>",
        w(r.done),
        w(r.failed),
        w(r.running),
        d = r.done,
        f = r.failed,
        ru = r.running,
        p = r.pending,
        t = r.jobs
    )
}

/// Everything a run's page shows.
#[derive(Serialize)]
pub struct RunView {
    pub run: RunItem,
    pub source_path: String,
    pub yaml: String,
    /// In the order the jobs first name them.
    pub kernels: Vec<String>,
    pub variants: Vec<String>,
    pub workloads: Vec<String>,
    pub jobs: Vec<JobRow>,
    pub failed: Vec<FailedCell>,
    pub provenance: Vec<KernelProvenance>,
    pub boots: Vec<BootItem>,
    /// Per kernel, the key of the build kreg made for it.
    pub builds: Vec<(String, String)>,
    /// Why the scenario could not be read back, when it could not.
    pub scenario_error: Option<String>,
    /// Whether the run is a bisection (its page: /runs/ID/bisect).
    pub bisection: bool,
}

fn first_seen<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

pub async fn run_view(db: &PgPool, id: i64) -> view::Result<RunView> {
    let (row, run) = queries::run_and_row(db, id).await?;
    let jobs = crate::store::jobs(db, id).await?;
    let (prov, scenario_error) = match view::scenario_of(&row) {
        Ok(s) => (crate::store::provenance(db, id, &s.sut().name).await?, None),
        Err(e) => (Vec::new(), Some(format!("{e:#}"))),
    };
    let kernels = first_seen(jobs.iter().map(|j| &j.kernel));
    let builds = queries::builds_of_run(db, id).await?;
    let bisection = crate::store::bisect::bisection(db, id).await?.is_some();
    Ok(RunView {
        bisection,
        variants: first_seen(jobs.iter().map(|j| &j.variant)),
        workloads: first_seen(jobs.iter().map(|j| &j.workload)),
        kernels,
        failed: view::failed_of(db, id).await?,
        boots: queries::boots(db, id).await?,
        provenance: prov,
        builds,
        scenario_error,
        source_path: row.source_path,
        yaml: row.yaml,
        run,
        jobs,
    })
}

pub async fn run_api(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult {
    json(&run_view(&st.db, id_of("run", &id)?).await?)
}

pub async fn run_page(State(st): State<AppState>, Path(id): Path<String>) -> PageResult {
    let id = id_of("run", &id)?;
    let v = run_view(&st.db, id).await?;
    let r = &v.run;
    let now = chrono::Utc::now();
    let mut body = String::new();
    let _ = write!(
        body,
        "<div id=\"summary\" data-live>{}</div>",
        html::facts(&[
            ("scenario", esc(&r.scenario)),
            ("state", format!("<span class=\"state s-{0}\">{0}</span>", r.state)),
            ("progress", progress(r)),
            ("started", html::time(&r.created_at)),
            ("duration", html::duration(r.duration_s(now))),
            ("kernels", esc(&v.kernels.join(", "))),
            ("variants", esc(&v.variants.join(", "))),
            ("workloads", esc(&v.workloads.join(", "))),
        ])
    );
    if v.bisection {
        let _ = write!(
            body,
            "<p class=\"links\">This run is a bisection: {}</p>",
            html::link(&format!("/runs/{id}/bisect"), "its range, steps and result")
        );
    }
    let _ = write!(
        body,
        "<p class=\"links\">{} {} {}</p>",
        html::link(&format!("/runs/{id}/report"), "Comparison"),
        html::link(&format!("/runs/{id}/schedstat"), "Scheduler statistics"),
        html::link(&format!("/api/v1/runs/{id}"), "JSON"),
    );
    let _ = write!(
        body,
        "<h2>Jobs</h2><div id=\"matrix\" data-live>{}{}</div>",
        matrix(&v),
        failed_list(&v)
    );
    body.push_str(&provenance(&v));
    let _ = write!(
        body,
        "<h2>Scenario</h2><p>{}</p>{}",
        esc(&v.source_path),
        html::pre(&v.yaml)
    );
    Ok(Html(html::layout(&format!("Run {id}"), &body, &Live::Run(id))))
}

/// Kernel × variant × workload, one cell per iteration, coloured by state.
fn matrix(v: &RunView) -> String {
    if v.jobs.is_empty() {
        return "<p>No jobs.</p>".into();
    }
    let max_iter = v.jobs.iter().map(|j| j.iteration).max().unwrap_or(0);
    let mut out = String::from(
        "<div class=\"scroll\"><table class=\"matrix\"><thead><tr><th>workload</th><th>variant</th><th>kernel</th><th>iterations</th></tr></thead><tbody>",
    );
    for w in &v.workloads {
        for var in &v.variants {
            for k in &v.kernels {
                let mut cells: Vec<&JobRow> = v
                    .jobs
                    .iter()
                    .filter(|j| &j.workload == w && &j.variant == var && &j.kernel == k)
                    .collect();
                if cells.is_empty() {
                    continue;
                }
                cells.sort_by_key(|j| j.iteration);
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"cells\">",
                    esc(w),
                    esc(var),
                    esc(k)
                );
                for j in cells {
                    let _ = write!(
                        out,
                        "<a class=\"cell s-{s}\" data-job=\"{id}\" data-state=\"{s}\" href=\"/jobs/{id}\" title=\"job {id}: kernel {k}, variant {var}, workload {w}, iteration {it}, boot {b}: {s}\"></a>",
                        s = j.state,
                        id = j.id,
                        k = esc(k),
                        var = esc(var),
                        w = esc(w),
                        it = j.iteration,
                        b = j.boot
                    );
                }
                out.push_str("</td></tr>");
            }
        }
    }
    let _ = write!(
        out,
        "</tbody></table></div><p class=\"legend\">{} up to {max_iter} iterations per cell</p>",
        ["pending", "running", "done", "failed"]
            .iter()
            .map(|s| format!("<span><i class=\"cell s-{s}\"></i>{s}</span>"))
            .collect::<String>()
    );
    out
}

fn failed_list(v: &RunView) -> String {
    let failed: Vec<&JobRow> = v.jobs.iter().filter(|j| j.state == JobState::Failed).collect();
    if failed.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = failed
        .iter()
        .map(|j| {
            vec![
                html::link(&format!("/jobs/{}", j.id), &format!("job {}", j.id)),
                esc(&j.kernel),
                esc(&j.variant),
                esc(&j.workload),
                j.iteration.to_string(),
                format!(
                    "<span class=\"reason\">{}</span>",
                    esc(j.error.as_deref().unwrap_or(""))
                ),
            ]
        })
        .collect();
    format!(
        "<h3>Failed jobs</h3>{}",
        html::table(
            "failed",
            &["job", "kernel", "variant", "workload", "iteration", "reason"],
            &rows
        )
    )
}

/// A kernel's tuning as read back per variant, and the knobs kreg changed.
fn tuning_cell(p: Option<&crate::results::KernelProvenance>) -> String {
    match p {
        Some(p) if !p.tuning.is_empty() || !p.settings.is_empty() || !p.setup.is_empty() => {
            let mut lines: Vec<String> = p
                .tuning_lines()
                .iter()
                .chain(&p.setup_lines())
                .map(|t| esc(t))
                .collect();
            if !p.settings.is_empty() {
                lines.push(format!("changed: {}", esc(&p.setting_lines().join(", "))));
            }
            lines.join("<br>")
        }
        _ => "none applied by kreg".into(),
    }
}

/// Per kernel: releases, each boot and how it was made, the build, tools, CPU, tuning.
fn provenance(v: &RunView) -> String {
    let mut out = String::from("<h2>Kernels</h2>");
    if let Some(e) = &v.scenario_error {
        let _ = write!(
            out,
            "<p class=\"error\">the scenario could not be read back: {}</p>",
            esc(e)
        );
    }
    for k in &v.kernels {
        let boots: Vec<&BootItem> = v.boots.iter().filter(|b| &b.kernel == k).collect();
        let p = v.provenance.iter().find(|p| &p.kernel == k);
        let mut releases: Vec<&str> = boots.iter().map(|b| b.release.as_str()).collect();
        releases.dedup();
        let boot_rows: Vec<Vec<String>> = boots
            .iter()
            .map(|b| {
                vec![
                    esc(&b.host),
                    esc(&b.reached),
                    format!("<code>{}</code>", esc(&b.boot_id)),
                    esc(&b.boot_method),
                    esc(&b.release),
                    format!("{} × {}", b.nr_cpus, esc(&b.cpu_model)),
                    format!("<code>{}</code>", esc(&b.cmdline)),
                    b.schedstat_version
                        .map(|x| x.to_string())
                        .unwrap_or_else(|| "none".into()),
                    html::time(&b.seen_at),
                ]
            })
            .collect();
        let build = v
            .builds
            .iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, key)| html::link(&format!("/kernels/{key}"), key))
            .unwrap_or_else(|| "not built by kreg".into());
        let tools = p.map(|p| esc(&p.tool_lines().join(", "))).unwrap_or_default();
        let tuning = tuning_cell(p);
        let _ = write!(
            out,
            "<h3 class=\"kernel\" data-kernel=\"{}\">kernel {}</h3>{}{}",
            esc(k),
            esc(k),
            html::facts(&[
                (
                    "release",
                    if releases.is_empty() {
                        "— (no job done on it yet)".to_string()
                    } else {
                        esc(&releases.join(", "))
                    },
                ),
                ("build", build),
                ("tools", tools),
                ("tuning", tuning),
            ]),
            html::table(
                "boots",
                &[
                    "host",
                    "reached",
                    "boot id",
                    "made by",
                    "release",
                    "CPUs",
                    "cmdline",
                    "schedstat",
                    "seen"
                ],
                &boot_rows
            )
        );
    }
    out
}
