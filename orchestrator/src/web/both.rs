//! Two runs compared, both sides shown: per metric and row, the base run's and the new
//! run's observations (n, centre, spread, every value, their jobs one click away), the
//! change with its interval against the ±minimum-effect band, the verdict and its reason;
//! the environments' differences listed above. Filters and the order of rows in the URL;
//! the same data in `/api/v1/compare`.

use std::fmt::Write;

use axum::extract::{Query, State};
use axum::response::Html;

use super::bars::{axis_row, bar_reach};
use super::compare::{metric_section, notes, row_id, ReportQuery};
use super::html::{self, esc, Live};
use super::params::{enc, Params};
use super::svg::{self, Scale};
use super::{AppState, PageResult};
use crate::report::{self, MetricTable, Row};
use crate::stats::Verdict;
use crate::view::{self, Loaded, ViewError};

type Q = Vec<(String, String)>;

const PARAMS: [&str; 7] = ["a", "b", "workload", "metric", "variant", "verdict", "sort"];

fn run_pair(p: &Params) -> view::Result<(i64, i64)> {
    match (p.int("a")?, p.int("b")?) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(ViewError::Invalid("give two runs: ?a=RUN&b=RUN".into())),
    }
}

/// The query without the runs, as the report's filters read it (every row shown).
fn filters(pairs: &Q) -> view::Result<ReportQuery> {
    let mut kept: Q = pairs
        .iter()
        .filter(|(k, _)| ["workload", "metric", "variant", "verdict"].contains(&k.as_str()))
        .cloned()
        .collect();
    kept.push(("show".into(), "all".into()));
    ReportQuery::parse(kept, &["workload", "metric", "variant", "verdict", "show"])
}

/// The base run's row for a new run's row.
fn base_of<'a>(l: &'a Loaded, t: &MetricTable, r: &Row) -> Option<&'a Row> {
    l.base_tables
        .iter()
        .find(|b| b.workload == t.workload && b.metric == t.metric)
        .and_then(|b| b.rows.iter().find(|x| x.kernel == r.kernel && x.variant == r.variant))
}

/// How bad a verdict is, for sorting: regressions first.
fn severity(r: &Row) -> u8 {
    match r.comparison.as_ref().map(|c| c.verdict) {
        Some(Verdict::Regression) => 0,
        Some(Verdict::UnconfirmedRegression) => 1,
        Some(Verdict::Inconclusive) => 2,
        Some(Verdict::UnconfirmedImprovement) => 3,
        Some(Verdict::Improvement) => 4,
        Some(Verdict::NoChange) => 5,
        None => 6,
    }
}

fn sorted(rows: &mut [&Row], sort: Option<&str>) {
    match sort {
        Some("change") => rows.sort_by(|a, b| {
            let size = |r: &Row| {
                r.comparison
                    .as_ref()
                    .map(|c| c.change.abs())
                    .filter(|c| c.is_finite())
                    .unwrap_or(-1.0)
            };
            size(b).total_cmp(&size(a))
        }),
        Some("verdict") => rows.sort_by_key(|r| severity(r)),
        _ => {}
    }
}

/// One side's cell: n, centre and spread, every value (in the page, not only on hover), a
/// strip on the table's common scale, and the link to its values with their jobs.
fn side_cell(run: i64, t: &MetricTable, r: Option<&Row>, scale: &Scale) -> String {
    let Some(r) = r else {
        return "<small>no samples</small>".into();
    };
    let spread = if t.kind.by_ranks() {
        format!("iqr {:.2}%", r.spread_pct(t.kind))
    } else {
        format!("±{:.2}%", r.spread_pct(t.kind))
    };
    let values: Vec<String> = r.side.values.iter().map(|v| report::fmt_value(*v)).collect();
    let href = super::samples::href(run, t, r);
    format!(
        "<div class=\"side\"><b>{}</b> {} <small>n={}</small><br><a href=\"{h}\">{}</a>\
<small class=\"values\">{}</small><small><a href=\"{h}\">jobs</a> · <a href=\"{h}#commands\">command lines</a></small></div>",
        esc(&report::fmt_value(r.centre(t.kind))),
        esc(&spread),
        r.summary.n,
        svg::strip(&r.side.values, r.centre(t.kind), scale, &format!("run {run}: {}", values.join(" "))),
        esc(&values.join(" ")),
        h = esc(&href)
    )
}

fn both_table(l: &Loaded, base_run: i64, t: &MetricTable, rows: &[&Row]) -> String {
    let bases: Vec<Option<&Row>> = rows.iter().map(|r| base_of(l, t, r)).collect();
    let scale = Scale::over(
        rows.iter()
            .flat_map(|r| r.side.values.iter().copied())
            .chain(bases.iter().flatten().flat_map(|r| r.side.values.iter().copied())),
        3.0,
        svg::STRIP_W - 3.0,
    );
    let me = l.settings.min_effect;
    let reach = bar_reach(rows, me);
    let mut ids = Vec::new();
    let body: Vec<Vec<String>> = rows
        .iter()
        .zip(&bases)
        .map(|(r, base)| {
            ids.push(row_id(t, r));
            let c = r.comparison.as_ref();
            let verdict = c.map(|c| c.verdict.as_str()).unwrap_or("");
            vec![
                esc(&r.kernel),
                esc(&r.variant),
                side_cell(base_run, t, *base, &scale),
                side_cell(l.run_id, t, Some(r), &scale),
                c.map(|c| format!("{:+.2}%", 100.0 * c.change)).unwrap_or_default(),
                c.map(|c| svg::comparison_bar(c, me, reach, &format!("v-{}", verdict.replace(' ', "-"))))
                    .unwrap_or_default(),
                if verdict.is_empty() {
                    String::new()
                } else {
                    html::verdict(verdict)
                },
                format!(
                    "<span class=\"reason\">{}</span>",
                    esc(c.map(|c| c.reason.as_str()).unwrap_or(""))
                ),
            ]
        })
        .collect();
    let base_head = format!("run {base_run} (base)");
    let new_head = format!("run {} (new)", l.run_id);
    metric_section(
        t,
        "",
        &html::table_with_foot(
            "report both",
            &[
                "kernel", "variant", &base_head, &new_head, "change", "interval", "verdict", "reason",
            ],
            &body,
            &ids,
            Some(&axis_row(l, t, rows, 8, 5)),
        ),
    )
}

/// The sort and filter controls, as a GET form: the view is in the URL.
fn controls(a: i64, b: i64, p: &Params) -> String {
    let sort = p.get("sort").unwrap_or("");
    let option = |value: &str, text: &str| {
        format!(
            "<option value=\"{value}\"{}>{text}</option>",
            if sort == value { " selected" } else { "" }
        )
    };
    let verdict = p.get("verdict").unwrap_or("");
    let mut verdicts = String::from("<option value=\"\">all</option>");
    for v in super::compare::VERDICTS {
        let _ = write!(
            verdicts,
            "<option value=\"{v}\"{}>{v}</option>",
            if verdict == v { " selected" } else { "" }
        );
    }
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/compare\"><input type=\"hidden\" name=\"a\" value=\"{a}\">\
<input type=\"hidden\" name=\"b\" value=\"{b}\"><label>sort <select name=\"sort\">{}{}{}</select></label>\
<label>verdict <select name=\"verdict\">{verdicts}</select></label><button type=\"submit\">Apply</button></form>",
        option("", "by name"),
        option("change", "by size of change"),
        option("verdict", "by verdict (regressions first)"),
    )
}

pub async fn compare_page(State(st): State<AppState>, Query(q): Query<Q>) -> PageResult {
    let p = Params::new(q.clone(), &PARAMS)?;
    let (a, b) = run_pair(&p)?;
    let sort = p.one_of("sort", &["change", "verdict"])?;
    let rq = filters(&q)?;
    let loaded = view::load_compare(&st.db, a, b).await?;
    rq.check_names(&loaded.tables)?;
    let mut body = format!(
        "<p>Run {}'s rows (new) beside run {}'s (base): same kernel, variant and workload, each side's \
         values in the page. {}</p>{}",
        html::link(&format!("/runs/{b}"), &b.to_string()),
        html::link(&format!("/runs/{a}"), &a.to_string()),
        html::link(&format!("/api/v1/compare?a={a}&b={b}"), "JSON"),
        controls(a, b, &p)
    );
    body.push_str(&notes(&loaded));
    let mut shown = 0;
    for t in loaded.tables.iter().filter(|t| rq.table_shown(t)) {
        let mut rows: Vec<&Row> = t.rows.iter().filter(|r| rq.row_shown(&loaded.baseline, r)).collect();
        if rows.is_empty() {
            continue;
        }
        sorted(&mut rows, sort.as_deref());
        shown += rows.len();
        body.push_str(&both_table(&loaded, a, t, &rows));
    }
    if shown == 0 {
        body.push_str("<p>No row matches these filters.</p>");
    }
    body.push_str(&environment(&loaded, a, b));
    Ok(Html(html::layout(
        &format!("Run {b} against run {a}"),
        &body,
        &Live::No,
    )))
}

pub async fn compare_api(State(st): State<AppState>, Query(q): Query<Q>) -> super::ApiResult {
    let p = Params::new(q, &PARAMS)?;
    let (a, b) = run_pair(&p)?;
    let loaded = view::load_compare(&st.db, a, b).await?;
    let mut doc: serde_json::Value = serde_json::from_str(&loaded.report(false).render(report::Format::Json))
        .map_err(|e| ViewError::Other(e.into()))?;
    // Each row with the base run's side beside it.
    let sides: Vec<serde_json::Value> = loaded
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().map(move |r| (t, r)))
        .map(|(t, r)| match base_of(&loaded, t, r) {
            Some(base) => serde_json::json!({
                "run": a, "summary": base.summary, "quartiles": [base.quartiles.0, base.quartiles.1],
                "samples": base.side.values, "boot_ids": base.side.boots,
            }),
            None => serde_json::Value::Null,
        })
        .collect();
    if let Some(rows) = doc["rows"].as_array_mut() {
        for (row, side) in rows.iter_mut().zip(sides) {
            row["base"] = side;
        }
    }
    doc["environment"] = serde_json::to_value(&loaded.environment).map_err(|e| ViewError::Other(e.into()))?;
    Ok(axum::Json(doc))
}

/// The two runs' environments, kernel by kernel and aspect by aspect, what differs first:
/// listed, not only warned about. Two builds of different configs link to their diff.
fn environment(l: &Loaded, a: i64, b: i64) -> String {
    if l.environment.is_empty() {
        return String::new();
    }
    let lines = |v: &[String]| match v.is_empty() {
        true => "<small>(none)</small>".to_string(),
        false => v.iter().map(|x| esc(x)).collect::<Vec<_>>().join("<br>"),
    };
    let mut rows: Vec<&report::EnvAspect> = l.environment.iter().collect();
    rows.sort_by_key(|e| e.same);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|e| {
            let mut verdict = if e.same {
                "same".to_string()
            } else {
                "<b class=\"differs\">differs</b>".to_string()
            };
            if e.what == "kernel build and config" && !e.same {
                let key = |p: &[String]| p.first().and_then(|l| l.split_whitespace().next()).map(str::to_string);
                if let (Some(ka), Some(kb)) = (key(&e.a), key(&e.b)) {
                    verdict.push_str(&format!(
                        "<br>{}",
                        html::link(&format!("/kernels/diff?a={}&b={}", enc(&ka), enc(&kb)), "config diff")
                    ));
                }
            }
            vec![esc(&e.kernel), esc(e.what), lines(&e.a), lines(&e.b), verdict]
        })
        .collect();
    let differ = rows.iter().filter(|e| !e.same).count();
    format!(
        "<section id=\"environment\"><h2>Environments <small>{differ} of {} aspects differ</small></h2>{}</section>",
        rows.len(),
        html::table(
            "environment",
            &[
                "kernel",
                "aspect",
                &format!("run {a} (base)"),
                &format!("run {b} (new)"),
                ""
            ],
            &body
        )
    )
}
