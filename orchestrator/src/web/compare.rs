//! The comparison page (`kreg report`'s tables, from the same code) with its filters, the
//! downloads in the CLI's formats, two runs side by side (`kreg compare`), and a row's
//! samples.

use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use super::bars::{axis_row, bar_reach};
use super::html::{self, esc, Live};
use super::params::Params;
use super::svg::{self, Scale};
use super::{id_of, ApiError, AppState, PageError, PageResult};
use crate::report::{self, Baseline, MetricTable, Row};
use crate::stats::{Settings, Verdict};
use crate::view::{self, queries, Loaded, ViewError};

type Q = Query<Vec<(String, String)>>;

const REPORT_PARAMS: [&str; 8] = [
    "baseline",
    "alpha",
    "min_effect",
    "workload",
    "metric",
    "variant",
    "verdict",
    "show",
];
/// The verdicts a report's rows can be filtered by, as they are written.
pub(super) const VERDICTS: [&str; 6] = [
    "regression",
    "improvement",
    "unconfirmed regression",
    "unconfirmed improvement",
    "no change",
    "inconclusive",
];

/// What a comparison view asks for: the report's own settings, and what is shown of it.
pub(super) struct ReportQuery {
    params: Params,
    baseline: Option<Baseline>,
    settings: Settings,
    workload: Option<String>,
    metric: Option<String>,
    variant: Option<String>,
    verdict: Option<String>,
    /// Rows with no change shown, not folded.
    show_all: bool,
}

impl ReportQuery {
    pub(super) fn parse(pairs: Vec<(String, String)>, known: &[&str]) -> view::Result<ReportQuery> {
        let params = Params::new(pairs, known)?;
        let baseline = params.get("baseline").map(|b| match b.split_once(':') {
            Some(("variant", v)) => Baseline::Variant(v.to_string()),
            Some(("kernel", k)) => Baseline::Kernel(k.to_string()),
            _ => Baseline::Kernel(b.to_string()),
        });
        let defaults = Settings::default();
        let alpha = params.float("alpha")?.unwrap_or(defaults.alpha);
        let min_effect = params.float("min_effect")?.unwrap_or(100.0 * defaults.min_effect);
        let settings = Settings::checked(alpha, min_effect).map_err(|e| ViewError::Invalid(e.to_string()))?;
        Ok(ReportQuery {
            baseline,
            settings,
            workload: params.get("workload").map(String::from),
            metric: params.get("metric").map(String::from),
            variant: params.get("variant").map(String::from),
            verdict: params.one_of("verdict", &VERDICTS)?,
            show_all: params.one_of("show", &["changes", "all"])?.as_deref() == Some("all"),
            params,
        })
    }

    /// Unknown names in the filters are pages that do not exist.
    pub(super) fn check_names(&self, tables: &[MetricTable]) -> view::Result<()> {
        let missing = |what: &str, v: &Option<String>, has: &dyn Fn(&MetricTable, &str) -> bool| match v {
            Some(v) if !tables.iter().any(|t| has(t, v)) => {
                Err(ViewError::NotFound(format!("no {what} {v:?} in this report")))
            }
            _ => Ok(()),
        };
        missing("workload", &self.workload, &|t, v| t.workload == v)?;
        missing("metric", &self.metric, &|t, v| t.metric == v)?;
        missing("variant", &self.variant, &|t, v| t.rows.iter().any(|r| r.variant == v))
    }

    pub(super) fn table_shown(&self, t: &MetricTable) -> bool {
        self.workload.as_ref().is_none_or(|w| &t.workload == w) && self.metric.as_ref().is_none_or(|m| &t.metric == m)
    }

    pub(super) fn row_shown(&self, baseline: &Baseline, r: &Row) -> bool {
        if self.variant.as_ref().is_some_and(|v| &r.variant != v) {
            return false;
        }
        let verdict = r.comparison.as_ref().map(|c| c.verdict);
        match (&self.verdict, verdict) {
            (Some(_), None) => baseline.is_base(r),
            (Some(want), Some(v)) => v.as_str() == want,
            (None, Some(Verdict::NoChange)) => self.show_all,
            (None, _) => true,
        }
    }
}

/// Run `id`'s report judged with the query's baseline and settings, once per state of the
/// run for every page and download (see `cache`).
async fn load(st: &AppState, id: &str, q: &ReportQuery) -> view::Result<std::sync::Arc<Loaded>> {
    let run = id_of("run", id)?;
    let key = format!("{run} {:?} {:?}", q.baseline, q.settings);
    let make = view::load_report(&st.db, run, q.baseline.clone(), &q.settings);
    let loaded = match queries::run_version(&st.db, run).await? {
        Some(version) => st.judged.page(key, version, make).await?,
        None => return Err(ViewError::NotFound(format!("run {run} does not exist"))),
    };
    q.check_names(&loaded.tables)?;
    Ok(loaded)
}

/// Follows the runs' changes and makes the report page of each run that finishes while the
/// server is up, so that its first reader does not wait for a large run to be judged.
pub async fn prepare_finished(st: AppState) {
    let mut rx = st.changes.subscribe();
    loop {
        let payload = match rx.recv().await {
            Ok(p) => p,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&payload) else {
            continue;
        };
        // A run's own change (a job's carries "job" too) to a state it ends in.
        let finished =
            v.get("job").is_none() && matches!(v.get("state").and_then(|s| s.as_str()), Some("done" | "failed"));
        if let (true, Some(run)) = (finished, v.get("run").and_then(|r| r.as_i64())) {
            let id = run.to_string();
            // The key the report page without a query uses.
            let made = cached(
                &st,
                &id,
                format!("report {:?}", Vec::<(String, String)>::new()),
                report_html(&st, &id, Vec::new()),
            )
            .await;
            if let Err(e) = made {
                tracing::debug!("dashboard: preparing run {run}'s report: {e}");
            }
        }
    }
}

pub async fn report_api(State(st): State<AppState>, Path(id): Path<String>, Query(q): Q) -> Result<Response, ApiError> {
    let doc = cached(&st, &id, format!("api {q:?}"), report_json(&st, &id, q)).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], doc.as_str().to_string()).into_response())
}

/// The report's JSON as the API gives it, made (see `cache`) once per state of its run and
/// query.
async fn report_json(st: &AppState, id: &str, q: Vec<(String, String)>) -> view::Result<String> {
    let q = ReportQuery::parse(q, &REPORT_PARAMS)?;
    let loaded = load(st, id, &q).await?;
    let mut doc: serde_json::Value = serde_json::from_str(&loaded.report(false).render(report::Format::Json))
        .map_err(|e| ViewError::Other(e.into()))?;
    // The filters choose rows; the verdicts stay those of the whole report.
    let keep: Vec<bool> = loaded
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().map(move |r| (t, r)))
        .map(|(t, r)| {
            q.table_shown(t)
                && q.variant.as_ref().is_none_or(|v| &r.variant == v)
                && q.verdict
                    .as_ref()
                    .is_none_or(|w| r.comparison.as_ref().is_some_and(|c| c.verdict.as_str() == w))
        })
        .collect();
    if let Some(rows) = doc.get_mut("rows").and_then(|r| r.as_array_mut()) {
        let mut it = keep.iter();
        rows.retain(|_| *it.next().unwrap_or(&true));
    }
    serde_json::to_string(&doc).map_err(|e| ViewError::Other(e.into()))
}

/// `/runs/{id}/download/report.{md,csv,json,txt}`, `report-mail.txt` and `report-SHAPE.txt`
/// (`kernel-table`, `base-head`, `compare-kernels`, `tip-patch`): exactly what `kreg report --format …`
/// prints with the same baseline and settings.
pub async fn report_download(
    State(st): State<AppState>,
    Path((id, file)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response, PageError> {
    let Some(format) = report::Format::from_download(&file) else {
        return Err(ViewError::NotFound(format!("no download {file:?}")).into());
    };
    let mime = match format {
        report::Format::Markdown => "text/markdown; charset=utf-8",
        report::Format::Csv => "text/csv; charset=utf-8",
        report::Format::Json => "application/json",
        _ => "text/plain; charset=utf-8",
    };
    let q = ReportQuery::parse(q, &["baseline", "alpha", "min_effect"])?;
    let loaded = load(&st, &id, &q).await?;
    let mut text = loaded.report(false).render(format);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let disposition = format!("attachment; filename=\"run-{}-{file}\"", loaded.run_id);
    Ok((
        [
            (header::CONTENT_TYPE, mime.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        text,
    )
        .into_response())
}

pub async fn report_page(State(st): State<AppState>, Path(id): Path<String>, Query(q): Q) -> PageResult {
    let page = cached(&st, &id, format!("report {q:?}"), report_html(&st, &id, q)).await?;
    Ok(Html(page.as_str().to_string()))
}

/// A page of run `id` made once per state of the run (see `cache`).
async fn cached(
    st: &AppState,
    id: &str,
    key: String,
    make: impl std::future::Future<Output = view::Result<String>>,
) -> view::Result<std::sync::Arc<String>> {
    let run = id_of("run", id)?;
    match queries::run_version(&st.db, run).await? {
        Some(version) => st.pages.page(format!("{run} {key}"), version, make).await,
        None => Err(ViewError::NotFound(format!("run {run} does not exist"))),
    }
}

/// The report page, made (see `cache`) once per state of its run and query.
async fn report_html(st: &AppState, id: &str, q: Vec<(String, String)>) -> view::Result<String> {
    let q = ReportQuery::parse(q, &REPORT_PARAMS)?;
    let loaded = load(st, id, &q).await?;
    let run = loaded.run_id;
    let mut body = filters(&loaded, &q);
    let _ = write!(
        body,
        "<p class=\"links\">Downloads: {} {} {} {} · {}</p>",
        html::link(
            &format!("/runs/{run}/download/report.md{}", settings_query(&q)),
            "markdown"
        ),
        html::link(&format!("/runs/{run}/download/report.csv{}", settings_query(&q)), "CSV"),
        html::link(
            &format!("/runs/{run}/download/report.json{}", settings_query(&q)),
            "JSON"
        ),
        html::link(&format!("/runs/{run}/bundle"), "bundle (kreg export)"),
        html::link(&format!("/runs/{run}"), &format!("run {run}")),
    );
    // A run still going: the page follows it, row by row (see `report_rows`).
    let live = if loaded.provisional.is_some() {
        let query = q.params.with_all(&[]);
        let _ = write!(
            body,
            "<div id=\"report-live\" data-rows=\"/runs/{run}/report/rows{}\" hidden></div>",
            esc(&query)
        );
        Live::Run(run)
    } else {
        Live::No
    };
    let _ = write!(body, "<div id=\"report-notes\">{}</div>", notes(&loaded));
    body.push_str(&tables_html(&loaded, &q));
    body.push_str(&super::mail::block(&loaded, &settings_query(&q)));
    Ok(html::layout(&format!("Comparison, run {run}"), &body, &live))
}

/// What a live report page updates in place as jobs finish: its notes and each shown row's
/// cells by row id (a row not on the page yet makes the page fetch its tables again).
#[derive(Serialize)]
struct LiveRows {
    provisional: bool,
    notes: String,
    rows: Vec<(String, Vec<String>)>,
}

pub async fn report_rows(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Q,
) -> Result<Response, ApiError> {
    let body = cached(&st, &id, format!("rows {q:?}"), rows_json(&st, &id, q)).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body.as_str().to_string()).into_response())
}

/// The live rows' JSON, made once per state of the run and query.
async fn rows_json(st: &AppState, id: &str, q: Vec<(String, String)>) -> view::Result<String> {
    let q = ReportQuery::parse(q, &REPORT_PARAMS)?;
    let loaded = load(st, id, &q).await?;
    let mut rows = Vec::new();
    for t in loaded.tables.iter().filter(|t| q.table_shown(t)) {
        let shown: Vec<&Row> = t.rows.iter().filter(|r| q.row_shown(&loaded.baseline, r)).collect();
        rows.extend(table_rows(&loaded, t, &shown));
        rows.push(axis_row(&loaded, t, &shown, REPORT_HEAD.len(), INTERVAL_AT));
    }
    serde_json::to_string(&LiveRows {
        provisional: loaded.provisional.is_some(),
        notes: notes(&loaded),
        rows,
    })
    .map_err(|e| ViewError::Other(e.into()))
}

/// The report's own settings as a query (for downloads of the same report).
fn settings_query(q: &ReportQuery) -> String {
    let pairs: Vec<(&str, &str)> = ["baseline", "alpha", "min_effect"]
        .iter()
        .filter_map(|k| q.params.get(k).map(|v| (*k, v)))
        .collect();
    super::params::query_string(&pairs)
}

fn select(name: &str, label: &str, current: Option<&str>, options: &[(String, String)]) -> String {
    let mut out = format!("<label>{} <select name=\"{name}\">", esc(label));
    for (value, text) in options {
        let sel = if Some(value.as_str()) == current {
            " selected"
        } else {
            ""
        };
        let _ = write!(out, "<option value=\"{}\"{sel}>{}</option>", esc(value), esc(text));
    }
    out.push_str("</select></label>");
    out
}

fn distinct<'a>(items: impl Iterator<Item = &'a String>) -> Vec<(String, String)> {
    let mut v: Vec<String> = Vec::new();
    for i in items {
        if !v.contains(i) {
            v.push(i.clone());
        }
    }
    v.into_iter().map(|x| (x.clone(), x)).collect()
}

/// The filter form: a GET form, so that the whole view is in the URL.
fn filters(l: &Loaded, q: &ReportQuery) -> String {
    let all = || vec![(String::new(), "all".to_string())];
    let mut baselines: Vec<(String, String)> = l
        .scenario
        .kernels
        .iter()
        .map(|k| (format!("kernel:{}", k.name), format!("kernel {}", k.name)))
        .collect();
    baselines.extend(
        l.scenario
            .variants
            .iter()
            .map(|v| (format!("variant:{}", v.name), format!("variant {}", v.name))),
    );
    let current_base = match &l.baseline {
        Baseline::Kernel(k) => format!("kernel:{k}"),
        Baseline::Variant(v) => format!("variant:{v}"),
        Baseline::Run(_) => String::new(),
    };
    let mut workloads = all();
    workloads.extend(distinct(l.tables.iter().map(|t| &t.workload)));
    let mut metrics = all();
    metrics.extend(distinct(l.tables.iter().map(|t| &t.metric)));
    let mut variants = all();
    variants.extend(distinct(
        l.tables.iter().flat_map(|t| t.rows.iter().map(|r| &r.variant)),
    ));
    let mut verdicts = all();
    verdicts.extend(VERDICTS.iter().map(|v| (v.to_string(), v.to_string())));
    let show = [
        ("changes".to_string(), "fold rows with no change".to_string()),
        ("all".to_string(), "every row".to_string()),
    ];
    format!(
        "<form class=\"filters\" method=\"get\">{}{}{}{}{}{}<label>alpha <input name=\"alpha\" size=\"6\" value=\"{}\"></label>\
<label>min effect % <input name=\"min_effect\" size=\"4\" value=\"{}\"></label><button type=\"submit\">Apply</button></form>",
        select("baseline", "baseline", Some(&current_base), &baselines),
        select("workload", "workload", q.workload.as_deref(), &workloads),
        select("metric", "metric", q.metric.as_deref(), &metrics),
        select("variant", "variant", q.variant.as_deref(), &variants),
        select("verdict", "verdict", q.verdict.as_deref(), &verdicts),
        select("show", "rows", Some(if q.show_all { "all" } else { "changes" }), &show),
        q.settings.alpha,
        100.0 * q.settings.min_effect,
    )
}

/// Warnings first, then the report's settings and provenance lines, as `kreg report` says
/// them.
pub(super) fn notes(l: &Loaded) -> String {
    let rep = l.report(false);
    let mut out = String::new();
    for w in rep.warning_lines() {
        let _ = write!(out, "<p class=\"warning\">{}</p>", esc(&w));
    }
    let _ = write!(
        out,
        "<p class=\"settings\">{}; α = {} per row after Benjamini–Hochberg over {} comparisons; minimum effect ±{}%</p>",
        esc(&l.baseline.describe()),
        l.settings.alpha,
        report::comparisons(&l.tables),
        100.0 * l.settings.min_effect
    );
    let _ = write!(
        out,
        "<p class=\"reading\"><b>Reading a row:</b> <em>centre</em> is the mean (the median for \
percentiles and counts); <em>spread</em> is ± the standard deviation in % of the mean (<em>iqr</em>: \
the interquartile range in % of the median); <em>change</em> is the centre's against the baseline \
row; the <em>interval</em> drawing shows that change (the dot), its interval (the thick line, \
90% under a fixed plan; <em>no change</em> is that line inside the band) and, where a change is \
at stake, the interval at the test's own level, 1 − α (thin, dashed: a change is called only \
when the test reaches α), on the % axis under each table, over the band of ±{}%; <em>samples</em>: one dot per run, the line their centre: point at a dot for its value \
and job, click it to open the job.</p>",
        100.0 * l.settings.min_effect
    );
    if !l.failed.is_empty() {
        out.push_str("<ul class=\"failed\">");
        for c in &l.failed {
            let _ = write!(out, "<li>{}</li>", esc(&c.line()));
        }
        out.push_str("</ul>");
    }
    let info = rep.info_lines();
    if !info.is_empty() {
        let _ = write!(
            out,
            "<details class=\"provenance\"><summary>Provenance</summary><ul>{}</ul></details>",
            info.iter().map(|l| format!("<li>{}</li>", esc(l))).collect::<String>()
        );
    }
    out
}

/// One table per metric shown, rows filtered; tables left with nothing to show are listed
/// as folded at the end.
fn tables_html(l: &Loaded, q: &ReportQuery) -> String {
    let mut out = String::new();
    let mut folded = Vec::new();
    for t in l.tables.iter().filter(|t| q.table_shown(t)) {
        let rows: Vec<&Row> = t.rows.iter().filter(|r| q.row_shown(&l.baseline, r)).collect();
        let compared = rows.iter().any(|r| r.comparison.is_some()) || matches!(l.baseline, Baseline::Run(_));
        if rows.is_empty() || (!compared && t.rows.iter().any(|r| r.comparison.is_some())) {
            folded.push(t);
            continue;
        }
        out.push_str(&metric_table(l, t, &rows));
    }
    if !folded.is_empty() {
        let what = if q.verdict.is_some() {
            "with no row of that verdict"
        } else {
            "with no change in every compared row"
        };
        let _ = write!(
            out,
            "<details class=\"folded\"><summary>{} metric(s) folded, {what}</summary><ul>",
            folded.len()
        );
        for t in folded {
            let _ = write!(
                out,
                "<li>{} / {}: {}</li>",
                esc(&t.workload),
                esc(&t.metric),
                html::link(
                    &format!(
                        "/runs/{}/report{}",
                        l.run_id,
                        q.params.with_all(&[
                            ("workload", &t.workload),
                            ("metric", &t.metric),
                            ("show", "all"),
                            ("verdict", "")
                        ])
                    ),
                    "show"
                )
            );
        }
        out.push_str("</ul></details>");
    }
    if out.is_empty() {
        out.push_str("<p>No samples yet.</p>");
    }
    out
}

/// A row's samples as a strip plot that opens the list of them, with links to that list
/// and to the command lines the row's jobs ran.
fn samples_cell(run: i64, t: &MetricTable, r: &Row, scale: &Scale) -> String {
    let href = super::samples::href(run, t, r);
    let label = format!(
        "{} samples, {} … {}",
        r.summary.n,
        report::fmt_value(r.summary.min),
        report::fmt_value(r.summary.max)
    );
    format!(
        "<a href=\"{h}\">{}</a><br><small class=\"row-links\"><a href=\"{h}\">values</a> · \
<a href=\"{h}#commands\">command lines</a></small>",
        svg::strip(&r.side.values, r.centre(t.kind), scale, &label),
        h = esc(&href),
    )
}

/// A report row's id in the page: the same for the same row on every load.
pub(super) fn row_id(t: &MetricTable, r: &Row) -> String {
    use sha2::Digest;
    let key = format!("{}\0{}\0{}\0{}", t.workload, t.metric, r.kernel, r.variant);
    format!("r-{}", hex::encode(&sha2::Sha256::digest(key.as_bytes())[..6]))
}

/// The columns of a report table; the interval drawings are in column [`INTERVAL_AT`].
const REPORT_HEAD: [&str; 10] = [
    "kernel", "variant", "n", "centre", "spread", "change", "interval", "verdict", "reason", "samples",
];
const INTERVAL_AT: usize = 6;

fn metric_table(l: &Loaded, t: &MetricTable, rows: &[&Row]) -> String {
    let (ids, body): (Vec<String>, Vec<Vec<String>>) = table_rows(l, t, rows).into_iter().unzip();
    let axis = axis_row(l, t, rows, REPORT_HEAD.len(), INTERVAL_AT);
    let history = format!(
        "/history{}",
        super::params::query_string(&[
            ("scenario", &l.scenario.name),
            ("workload", &t.workload),
            ("metric", &t.metric)
        ])
    );
    metric_section(
        t,
        &format!(" · <a href=\"{}\">history</a>", esc(&history)),
        &html::table_with_foot("report", &REPORT_HEAD, &body, &ids, Some(&axis)),
    )
}

/// A metric's section of a comparison: its heading (unit, kind, direction, then `extra`,
/// already HTML) over its table.
pub(super) fn metric_section(t: &MetricTable, extra: &str, table: &str) -> String {
    format!(
        "<section class=\"metric\" data-workload=\"{}\" data-metric=\"{}\"><h2>{} / {} <small>{}, {}, {}{extra}</small></h2>{table}</section>",
        esc(&t.workload),
        esc(&t.metric),
        esc(&t.workload),
        esc(&t.metric),
        esc(&t.unit),
        t.kind,
        if t.higher_is_better { "higher is better" } else { "lower is better" },
    )
}

/// A table's rows as the page shows them: (row id, cells).
fn table_rows(l: &Loaded, t: &MetricTable, rows: &[&Row]) -> Vec<(String, Vec<String>)> {
    let scale = Scale::over(
        rows.iter().flat_map(|r| r.side.values.iter().copied()),
        3.0,
        svg::STRIP_W - 3.0,
    );
    let me = l.settings.min_effect;
    let reach = bar_reach(rows, me);
    let base_label = |r: &Row| match &l.baseline {
        Baseline::Run(id) => format!("against run {id}"),
        b if b.is_base(r) => "baseline".to_string(),
        _ => String::new(),
    };
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let c = r.comparison.as_ref();
            let verdict = c.map(|c| c.verdict.as_str()).unwrap_or("");
            vec![
                esc(&r.kernel),
                esc(&r.variant),
                r.summary.n.to_string(),
                esc(&report::fmt_value(r.centre(t.kind))),
                format!(
                    "{}{:.2}%",
                    if t.kind.by_ranks() { "iqr " } else { "±" },
                    r.spread_pct(t.kind)
                ),
                c.map(|c| format!("{:+.2}%", 100.0 * c.change))
                    .unwrap_or_else(|| base_label(r)),
                c.map(|c| svg::comparison_bar(c, me, reach, &format!("v-{}", verdict.replace(' ', "-"))))
                    .unwrap_or_default(),
                match (verdict.is_empty(), &l.provisional) {
                    (true, _) => String::new(),
                    (false, None) => html::verdict(verdict),
                    (false, Some(p)) => format!(
                        "{}<br><small class=\"provisional\">{}</small>",
                        html::verdict(verdict),
                        esc(&p.row_note(&t.workload, &r.kernel, &r.variant, r.summary.n))
                    ),
                },
                format!(
                    "<span class=\"reason\">{}</span>{}",
                    esc(c.map(|c| c.reason.as_str()).unwrap_or("")),
                    match r.notes() {
                        n if n.is_empty() => String::new(),
                        n => format!("<br><small class=\"notes\">{}</small>", esc(&n.join("; "))),
                    }
                ),
                samples_cell(l.run_id, t, r, &scale),
            ]
        })
        .collect();
    rows.iter().map(|r| row_id(t, r)).zip(body).collect()
}
