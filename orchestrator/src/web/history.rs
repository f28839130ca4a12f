//! History: one metric of one workload across the runs of a scenario, per kernel and
//! variant: the centre the reports use (mean, or median for rank kinds) with its spread
//! (±1 sd, or the quartiles), as a chart and a table; the change points of each line marked
//! on the chart and listed with the alerts raised on them (their triage state, and the
//! `kreg bisect` command for the range).

use std::fmt::Write;

use axum::extract::{Query, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::params::{query_string, Params};
use super::svg::{self, Mark, Series};
use super::{json, ApiResult, AppState, PageResult};
use crate::stats::MetricKind;
use crate::store::alerts::{self, Alert};
use crate::view::history::{lines, Line};
use crate::view::{self, queries, ViewError};

#[derive(Serialize)]
pub struct AlertView {
    #[serde(flatten)]
    pub alert: Alert,
    /// The `kreg bisect` command for the alert's range, or why there is none.
    pub bisect: Result<String, String>,
}

#[derive(Serialize)]
pub struct HistoryView {
    pub scenario: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub kind: MetricKind,
    pub runs: Vec<i64>,
    pub lines: Vec<Line>,
    /// The alerts raised on this history, with their triage state (set by `kreg alerts`).
    pub alerts: Vec<AlertView>,
}

async fn history_view(st: &AppState, p: &Params) -> view::Result<Option<HistoryView>> {
    let (Some(scenario), Some(workload), Some(metric)) = (p.get("scenario"), p.get("workload"), p.get("metric")) else {
        return Ok(None);
    };
    let points = queries::history(&st.db, scenario, workload, metric).await?;
    let Some(first) = points.first() else {
        return Err(ViewError::NotFound(format!(
            "no samples of metric {metric:?} of workload {workload:?} in runs of scenario {scenario:?}"
        )));
    };
    let (unit, kind) = (first.unit.clone(), first.kind);
    let (runs, lines) = lines(points, kind);
    let mut views = Vec::new();
    for alert in alerts::of_history(&st.db, scenario, workload, metric).await? {
        let bisect = view::history::bisect_command(&st.db, &alert).await?;
        views.push(AlertView { alert, bisect });
    }
    Ok(Some(HistoryView {
        scenario: scenario.into(),
        workload: workload.into(),
        metric: metric.into(),
        unit,
        kind,
        runs,
        lines,
        alerts: views,
    }))
}

const PARAMS: [&str; 3] = ["scenario", "workload", "metric"];

pub async fn api(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> ApiResult {
    let p = Params::new(q, &PARAMS)?;
    match history_view(&st, &p).await? {
        Some(v) => json(&v),
        None => json(&queries::series(&st.db).await?),
    }
}

pub async fn page(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> PageResult {
    let p = Params::new(q, &PARAMS)?;
    let Some(v) = history_view(&st, &p).await? else {
        return choices(&st).await;
    };
    let series: Vec<Series> = v
        .lines
        .iter()
        .map(|l| Series {
            name: l.name.clone(),
            points: l.points.iter().map(|p| (p.run, p.centre, p.low, p.high)).collect(),
        })
        .collect();
    let spread = if v.kind.by_ranks() {
        "median with quartiles"
    } else {
        "mean ± 1 sd"
    };
    let mut body = format!(
        "<p>Scenario {} · {} in {}, {} ({spread})</p><div class=\"chart\">{}</div>",
        esc(&v.scenario),
        esc(&v.metric),
        esc(&v.unit),
        esc(v.kind.as_str()),
        svg::history(&series, &v.runs, &v.unit, &marks(&v))
    );
    body.push_str(&change_points(&v));
    let rows: Vec<(i64, Vec<String>)> = v
        .lines
        .iter()
        .flat_map(|l| {
            l.points.iter().map(move |p| {
                (
                    p.run,
                    vec![
                        html::link(&format!("/runs/{}", p.run), &p.run.to_string()),
                        esc(&l.name),
                        match (p.missing, p.failed) {
                            (0, 0) => p.n.to_string(),
                            (0, f) => format!("{} ({f} failed)", p.n),
                            (m, 0) => format!("{} ({m} missing: the lab's)", p.n),
                            (m, f) => format!("{} ({m} missing: the lab's; {f} failed)", p.n),
                        },
                        esc(&crate::report::fmt_value(p.centre)),
                        format!(
                            "{} … {}",
                            esc(&crate::report::fmt_value(p.low)),
                            esc(&crate::report::fmt_value(p.high))
                        ),
                        html::time(&p.created_at),
                    ],
                )
            })
        })
        .collect();
    // The newest runs in the open, the rest folded: a long history is a chart, not a list.
    const SHOWN: usize = 24;
    let headers = ["run", "kernel/variant", "n", "centre", "spread", "started"];
    let newest: std::collections::BTreeSet<i64> = v.runs.iter().rev().take(SHOWN).copied().collect();
    type Rows = Vec<(i64, Vec<String>)>;
    let (recent, older): (Rows, Rows) = rows.into_iter().partition(|(run, _)| newest.contains(run));
    let cells = |r: Vec<(i64, Vec<String>)>| r.into_iter().map(|(_, c)| c).collect::<Vec<_>>();
    body.push_str(&html::table("history", &headers, &cells(recent)));
    if !older.is_empty() {
        let _ = write!(
            body,
            "<details class=\"older\"><summary>{} older run(s)</summary>{}</details>",
            v.runs.len().saturating_sub(SHOWN),
            html::table("history", &headers, &cells(older))
        );
    }
    Ok(Html(html::layout(
        &format!("History of {} / {}", v.workload, v.metric),
        &body,
        &Live::No,
    )))
}

/// The change points of every line, for the chart: labelled with their alert's number when
/// one was raised.
fn marks(v: &HistoryView) -> Vec<Mark> {
    v.lines
        .iter()
        .flat_map(|l| {
            l.changes.iter().map(move |c| {
                let alert = alert_of(v, l, c.run);
                Mark {
                    before: c.previous_run,
                    after: c.run,
                    label: match alert {
                        Some(a) => format!("#{} {}", a.alert.id, pct(c.change)),
                        None => pct(c.change),
                    },
                    class: c.direction,
                }
            })
        })
        .collect()
}

fn alert_of<'a>(v: &'a HistoryView, l: &Line, run: i64) -> Option<&'a AlertView> {
    v.alerts
        .iter()
        .find(|a| a.alert.kernel == l.kernel && a.alert.variant == l.variant && a.alert.run_id == run)
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", 100.0 * x)
    } else {
        "n/a".into()
    }
}

fn run_link(id: i64) -> String {
    html::link(&format!("/runs/{id}"), &id.to_string())
}

/// The section on change points: each line's, with its alert (number and triage state) and
/// the command that bisects it; then alerts raised earlier on changes the series no longer
/// shows.
fn change_points(v: &HistoryView) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for l in &v.lines {
        for c in &l.changes {
            let alert = alert_of(v, l, c.run);
            rows.push(vec![
                esc(&l.name),
                format!("{} → {}", run_link(c.previous_run), run_link(c.run)),
                format!(
                    "<span class=\"v-{}\">{} {}</span>",
                    c.direction,
                    esc(c.direction),
                    esc(&format!(
                        "{} {}",
                        pct(c.change),
                        crate::stats::interval_text(c.interval)
                    ))
                ),
                esc(&format!(
                    "{} → {} ({} and {} runs)",
                    crate::report::fmt_value(c.centres[0]),
                    crate::report::fmt_value(c.centres[1]),
                    c.runs[0],
                    c.runs[1]
                )),
                format!("{:.4}", c.p),
                match alert {
                    Some(a) => alert_cell(a),
                    None => "not raised yet (<code>kreg alerts scan</code>)".into(),
                },
            ]);
        }
    }
    let mut out = String::from("<h2>Change points</h2>");
    if rows.is_empty() {
        out.push_str(
            "<p>No change point in the finished runs (E-Divisive means, permutation test at p ≤ 0.005, \
             three runs at least on each side).</p>",
        );
    } else {
        out.push_str(
            "<p>E-Divisive means over each line's finished runs, each change point tested by \
             permutation (p ≤ 0.005); the change is the level after against the level before, \
             with its 90% interval (the level every report draws).</p>",
        );
        out.push_str(&html::table(
            "changes",
            &["kernel/variant", "runs", "change", "level", "p", "alert"],
            &rows,
        ));
    }
    let stale: Vec<&AlertView> = v
        .alerts
        .iter()
        .filter(|a| {
            !v.lines.iter().any(|l| {
                l.kernel == a.alert.kernel
                    && l.variant == a.alert.variant
                    && l.changes.iter().any(|c| c.run == a.alert.run_id)
            })
        })
        .collect();
    if !stale.is_empty() {
        out.push_str("<h3>Alerts on changes the series no longer shows</h3><ul class=\"alerts\">");
        for a in stale {
            let _ = write!(
                out,
                "<li>{}/{} at run {}: {}</li>",
                esc(&a.alert.kernel),
                esc(&a.alert.variant),
                run_link(a.alert.run_id),
                alert_cell(a)
            );
        }
        out.push_str("</ul>");
    }
    out
}

/// An alert's number, state (and note), and its bisect command or why there is none.
fn alert_cell(a: &AlertView) -> String {
    let note = if a.alert.note.is_empty() {
        String::new()
    } else {
        format!(" — {}", esc(&a.alert.note))
    };
    let bisect = match &a.bisect {
        Ok(cmd) => format!("<pre class=\"cmd\">{}</pre>", esc(cmd)),
        Err(why) => format!("<small>{}</small>", esc(why)),
    };
    format!(
        "<span class=\"alert a-{}\">#{} {}</span>{note}{bisect}",
        esc(a.alert.state.as_str()),
        a.alert.id,
        esc(a.alert.state.as_str())
    )
}

async fn choices(st: &AppState) -> PageResult {
    let series = queries::series(&st.db).await?;
    let mut body = String::new();
    if series.is_empty() {
        body.push_str("<p>No samples stored yet.</p>");
    }
    let mut current = "";
    for s in &series {
        if s.scenario != current {
            if !current.is_empty() {
                body.push_str("</ul>");
            }
            let _ = write!(body, "<h2>{}</h2><ul class=\"series\">", esc(&s.scenario));
            current = &s.scenario;
        }
        let href = format!(
            "/history{}",
            query_string(&[
                ("scenario", &s.scenario),
                ("workload", &s.workload),
                ("metric", &s.metric)
            ])
        );
        let _ = write!(
            body,
            "<li>{} <small>({} runs)</small></li>",
            html::link(&href, &format!("{} / {}", s.workload, s.metric)),
            s.runs
        );
    }
    if !current.is_empty() {
        body.push_str("</ul>");
    }
    Ok(Html(html::layout("History", &body, &Live::No)))
}
