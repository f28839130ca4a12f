//! History: one metric of one workload across the runs of a scenario, per kernel and
//! variant: the centre the reports use (mean, or median for rank kinds) with its spread
//! (±1 sd, or the quartiles), as a chart and a table.

use std::fmt::Write;

use axum::extract::{Query, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::params::{query_string, Params};
use super::svg::{self, Series};
use super::{json, ApiResult, AppState, PageResult};
use crate::stats::MetricKind;
use crate::view::{self, queries, ViewError};

#[derive(Serialize)]
pub struct Point {
    pub run: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub n: usize,
    pub centre: f64,
    pub low: f64,
    pub high: f64,
}

#[derive(Serialize)]
pub struct Line {
    /// "kernel/variant".
    pub name: String,
    pub points: Vec<Point>,
}

#[derive(Serialize)]
pub struct HistoryView {
    pub scenario: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub kind: String,
    pub runs: Vec<i64>,
    pub lines: Vec<Line>,
}

/// Centre and spread of one run's samples, as a report states them for the kind.
fn summarise(values: &mut [f64], kind: MetricKind) -> (f64, f64, f64) {
    if kind.by_ranks() {
        let (q1, q3) = crate::stats::quartiles(values);
        (crate::stats::median(values), q1, q3)
    } else {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        (mean, mean - sd, mean + sd)
    }
}

pub fn lines(points: Vec<queries::HistoryPoint>, kind: MetricKind) -> (Vec<i64>, Vec<Line>) {
    let mut runs: Vec<i64> = Vec::new();
    // Per kernel/variant, per run: (run, its start, the values).
    type PerRun = Vec<(i64, chrono::DateTime<chrono::Utc>, Vec<f64>)>;
    let mut groups: Vec<(String, PerRun)> = Vec::new();
    for p in points {
        if !runs.contains(&p.run_id) {
            runs.push(p.run_id);
        }
        let name = format!("{}/{}", p.kernel, p.variant);
        let at = match groups.iter().position(|g| g.0 == name) {
            Some(i) => i,
            None => {
                groups.push((name, Vec::new()));
                groups.len() - 1
            }
        };
        let g = &mut groups[at].1;
        match g.last_mut() {
            Some(last) if last.0 == p.run_id => last.2.push(p.value),
            _ => g.push((p.run_id, p.created_at, vec![p.value])),
        }
    }
    let lines = groups
        .into_iter()
        .map(|(name, per_run)| Line {
            name,
            points: per_run
                .into_iter()
                .map(|(run, created_at, mut v)| {
                    let (centre, low, high) = summarise(&mut v, kind);
                    Point {
                        run,
                        created_at,
                        n: v.len(),
                        centre,
                        low,
                        high,
                    }
                })
                .collect(),
        })
        .collect();
    (runs, lines)
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
    let (unit, kind_name) = (first.unit.clone(), first.kind.clone());
    let kind = MetricKind::try_from(kind_name.clone()).map_err(|e| ViewError::Other(anyhow::anyhow!("{e}")))?;
    let (runs, lines) = lines(points, kind);
    Ok(Some(HistoryView {
        scenario: scenario.into(),
        workload: workload.into(),
        metric: metric.into(),
        unit,
        kind: kind_name,
        runs,
        lines,
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
    let spread = if v.kind == "latency" || v.kind == "count" {
        "median with quartiles"
    } else {
        "mean ± 1 sd"
    };
    let mut body = format!(
        "<p>Scenario {} · {} in {}, {} ({spread})</p><div class=\"chart\">{}</div>",
        esc(&v.scenario),
        esc(&v.metric),
        esc(&v.unit),
        esc(&v.kind),
        svg::history(&series, &v.runs, &v.unit)
    );
    let rows: Vec<Vec<String>> = v
        .lines
        .iter()
        .flat_map(|l| {
            l.points.iter().map(move |p| {
                vec![
                    html::link(&format!("/runs/{}", p.run), &p.run.to_string()),
                    esc(&l.name),
                    p.n.to_string(),
                    esc(&crate::report::fmt_value(p.centre)),
                    format!(
                        "{} … {}",
                        esc(&crate::report::fmt_value(p.low)),
                        esc(&crate::report::fmt_value(p.high))
                    ),
                    html::time(&p.created_at),
                ]
            })
        })
        .collect();
    body.push_str(&html::table(
        "history",
        &["run", "kernel/variant", "n", "centre", "spread", "started"],
        &rows,
    ));
    Ok(Html(html::layout(
        &format!("History of {} / {}", v.workload, v.metric),
        &body,
        &Live::No,
    )))
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
