//! The runs page (every run with its progress) and a run's page (its job matrix, failed
//! jobs, each kernel's provenance and the scenario), both live.

use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;
use sqlx::PgPool;

use super::html::{self, esc, Live};
use super::params::Params;
use super::{id_of, json, ApiError, ApiResult, AppState, PageResult};
use crate::plan::JobState;
use crate::report::FailedCell;
use crate::results::KernelProvenance;
use crate::store::pages::RunsPage;
use crate::store::JobRow;
use crate::view::{self, queries, queries::BootItem, queries::RunItem, ViewError};

/// Runs a page lists unless `limit` says otherwise, and the most it may say.
const PAGE_RUNS: i64 = 50;
const MAX_PAGE_RUNS: i64 = 500;

/// A page of the runs list as asked: `after=ID` (the runs older than run ID, newest first),
/// `page=N` (1-based, counted from the newest or from `after`), `limit=N` (1 to 500).
struct Listing {
    page: RunsPage,
    runs: Vec<RunItem>,
    /// All runs, and those from this page on.
    total: i64,
    from_here: i64,
}

impl Listing {
    async fn load(db: &PgPool, q: Vec<(String, String)>) -> view::Result<Listing> {
        let p = Params::new(q, &["after", "page", "limit"])?;
        let limit = p.int("limit")?.unwrap_or(PAGE_RUNS);
        if !(1..=MAX_PAGE_RUNS).contains(&limit) {
            return Err(ViewError::Invalid(format!(
                "limit must be 1 to {MAX_PAGE_RUNS}, not {limit}"
            )));
        }
        let number = p.int("page")?.unwrap_or(1);
        if number < 1 {
            return Err(ViewError::Invalid(format!("page counts from 1, not {number}")));
        }
        let page = RunsPage {
            after: p.int("after")?,
            skip: (number - 1).saturating_mul(limit),
            limit,
        };
        let runs = queries::run_items_page(db, page).await?;
        let (total, after) = queries::run_counts(db, page.after).await?;
        Ok(Listing {
            page,
            runs,
            total,
            from_here: after - page.skip,
        })
    }

    /// The query of the next (older) page, when there is one.
    fn next(&self) -> Option<String> {
        let last = self.runs.last()?;
        (self.from_here > self.runs.len() as i64).then(|| {
            let limit = if self.page.limit == PAGE_RUNS {
                String::new()
            } else {
                format!("&limit={}", self.page.limit)
            };
            format!("?after={}{limit}", last.id)
        })
    }

    /// Where this page's runs sit in the whole list: "runs 51–100 of 5000".
    fn position(&self) -> String {
        let first = self.total - self.from_here + 1;
        format!(
            "runs {}–{} of {} (newest first)",
            first,
            first + self.runs.len() as i64 - 1,
            self.total
        )
    }
}

/// The runs, newest first, a page at a time: the next page in a `Link` header (rel="next")
/// and the count of all runs in `X-Total-Count`.
pub async fn runs_api(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> Response {
    let listing = match Listing::load(&st.db, q).await {
        Ok(l) => l,
        Err(e) => return ApiError(e).into_response(),
    };
    let mut res = match json(&listing.runs) {
        Ok(body) => body.into_response(),
        Err(e) => return e.into_response(),
    };
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&listing.total.to_string()) {
        headers.insert("x-total-count", v);
    }
    if let Some(next) = listing.next() {
        if let Ok(v) = HeaderValue::from_str(&format!("</api/v1/runs{next}>; rel=\"next\"")) {
            headers.insert(header::LINK, v);
        }
    }
    res
}

pub async fn runs_page(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> PageResult {
    let listing = Listing::load(&st.db, q).await?;
    let runs = &listing.runs;
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
    let mut nav = String::new();
    if !runs.is_empty() {
        let _ = write!(nav, "<p class=\"pages\">{}", esc(&listing.position()));
        if listing.page.after.is_some() || listing.page.skip > 0 {
            nav.push_str(" · <a href=\"/\">newest</a>");
        }
        if let Some(next) = listing.next() {
            let _ = write!(nav, " · <a href=\"/{}\" rel=\"next\">older runs</a>", esc(&next));
        }
        nav.push_str("</p>");
    }
    Ok(Html(html::layout(
        "Runs",
        &format!("<div id=\"runs\" data-live>{body}{nav}</div>{compare}"),
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
    /// Runs per cell the scenario plans: (at least, at most); they differ for an adaptive
    /// plan, which adds runs to the cells still open after each look.
    pub planned_runs: Option<(u32, u32)>,
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
    let (prov, scenario_error, planned_runs) = match view::scenario_of(&row) {
        Ok(s) => (
            crate::store::provenance(db, id, &s.sut().name).await?,
            None,
            Some((s.iterations, s.max_iterations)),
        ),
        Err(e) => (Vec::new(), Some(format!("{e:#}")), None),
    };
    let kernels = first_seen(jobs.iter().map(|j| &j.kernel));
    let builds = queries::builds_of_run(db, id).await?;
    let bisection = row.kind == crate::plan::RunKind::Bisection;
    Ok(RunView {
        bisection,
        planned_runs,
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

/// A run's page: made once per state of a run that is not running (a finished run's page
/// is read, not rendered, on every later load); a running run's page is made on each load,
/// and follows the run by its live parts (`run_live`), not by loading itself again.
pub async fn run_page(State(st): State<AppState>, Path(id): Path<String>) -> PageResult {
    let run = id_of("run", &id)?;
    let page = match crate::store::pages::run_version(&st.db, run).await? {
        None => return Err(ViewError::NotFound(format!("run {run} does not exist")).into()),
        Some(v) if !v.starts_with("running") => {
            st.pages
                .page(format!("{run} run page"), v, run_html(&st.db, run))
                .await?
        }
        Some(_) => std::sync::Arc::new(run_html(&st.db, run).await?),
    };
    Ok(Html(page.as_str().to_string()))
}

/// The facts at the top of a run's page (also its live part).
fn summary(r: &RunItem, v: (&[String], &[String], &[String])) -> String {
    let now = chrono::Utc::now();
    html::facts(&[
        ("scenario", esc(&r.scenario)),
        ("state", format!("<span id=\"run-state\">{}</span>", state_html(r))),
        ("progress", format!("<span id=\"run-progress\">{}</span>", progress(r))),
        ("started", html::time(&r.created_at)),
        (
            "duration",
            format!("<span id=\"run-duration\">{}</span>", html::duration(r.duration_s(now))),
        ),
        ("kernels", esc(&v.0.join(", "))),
        ("variants", esc(&v.1.join(", "))),
        ("workloads", esc(&v.2.join(", "))),
    ])
}

/// What a live run page updates on each change, without loading itself again: its facts,
/// its failed jobs, and how many jobs it has (a page with fewer, the adaptive plan having
/// added some, loads itself anew). A job's own cell follows the event itself. Two indexed
/// reads, whatever the run's size.
pub async fn run_live(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult {
    let run = id_of("run", &id)?;
    let item = crate::store::pages::run_item(&st.db, run)
        .await?
        .ok_or_else(|| view::ViewError::NotFound(format!("run {run} does not exist")))?;
    let failed = crate::store::pages::failed_jobs(&st.db, run).await?;
    json(&serde_json::json!({
        "jobs": item.jobs,
        "run-state": state_html(&item),
        "run-progress": progress(&item),
        "run-duration": html::duration(item.duration_s(chrono::Utc::now())),
        "failed-jobs": failed_table(&failed.iter().collect::<Vec<_>>()),
    }))
}

fn state_html(r: &RunItem) -> String {
    format!("<span class=\"state s-{0}\">{0}</span>", r.state)
}

async fn run_html(db: &PgPool, id: i64) -> view::Result<String> {
    let v = run_view(db, id).await?;
    let r = &v.run;
    let mut body = String::new();
    let _ = write!(
        body,
        "<div id=\"summary\">{}</div>",
        summary(r, (&v.kernels, &v.variants, &v.workloads))
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
        "<p class=\"links\">{} {} {} {}</p>",
        html::link(&format!("/runs/{id}/report"), "Comparison"),
        html::link(&format!("/runs/{id}/schedstat"), "Scheduler statistics"),
        html::link(&format!("/api/v1/runs/{id}"), "JSON"),
        html::link(&format!("/runs/{id}/bundle"), "Bundle (kreg export)"),
    );
    let _ = write!(
        body,
        "<h2>Jobs</h2><div id=\"matrix\" data-live data-jobs=\"{}\" data-live-run=\"/runs/{id}/live\">{}<div id=\"failed-jobs\">{}</div></div>",
        v.jobs.len(),
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
    Ok(html::layout(&format!("Run {id}"), &body, &Live::Run(id)))
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
        "</tbody></table></div><p class=\"legend\">{} {}</p>",
        ["pending", "running", "done", "failed"]
            .iter()
            .map(|s| format!("<span><i class=\"cell s-{s}\"></i>{s}</span>"))
            .collect::<String>(),
        esc(&plan_size(v, max_iter))
    );
    out
}

/// How many runs a cell has and may still get: a running adaptive plan adds runs to the
/// cells still open after each look, up to its maximum.
fn plan_size(v: &RunView, most: i32) -> String {
    let running = v.run.state == crate::plan::RunState::Running;
    match v.planned_runs {
        Some((min, max)) if max > min && running => format!(
            "up to {most} iterations per cell so far; the adaptive plan runs {min} to {max} per cell \
             and may still add runs to the cells not yet settled"
        ),
        Some((min, max)) if max > min => {
            format!("up to {most} iterations per cell (adaptive plan: {min} to {max} per cell)")
        }
        _ => format!("up to {most} iterations per cell"),
    }
}

fn failed_list(v: &RunView) -> String {
    let failed: Vec<&JobRow> = v.jobs.iter().filter(|j| j.state == JobState::Failed).collect();
    failed_table(&failed)
}

fn failed_table(failed: &[&JobRow]) -> String {
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
/// While the run goes, a knob kreg changed and has not put back is in effect, as planned;
/// only a run that ended (or stopped) without putting it back says "NOT restored".
fn tuning_cell(p: Option<&crate::results::KernelProvenance>, running: bool) -> String {
    match p {
        Some(p) if !p.tuning.is_empty() || !p.settings.is_empty() || !p.setup.is_empty() => {
            let mut lines: Vec<String> = p
                .tuning_lines()
                .iter()
                .chain(&p.setup_lines())
                .map(|t| esc(t))
                .collect();
            if !p.settings.is_empty() {
                let settings = if running {
                    p.setting_lines_running()
                } else {
                    p.setting_lines()
                };
                lines.push(format!("changed: {}", esc(&settings.join(", "))));
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
        let tuning = tuning_cell(p, v.run.state == crate::plan::RunState::Running);
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
