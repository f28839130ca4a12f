//! A bisection's page: where it ended (or stands), the range drawn with each tested
//! commit's position on the good→bad scale and its interval, the numbers at good, bad, the
//! culprit's parent, the culprit and the revert, the steps, every measurement in the order
//! asked, and the commands that reproduce it.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::{id_of, AppState, PageResult};
use crate::bisect::report::{self, short, Report, Side};
use crate::bisect::Mark;
use crate::store::bisect as sb;
use crate::view::ViewError;

#[derive(Serialize)]
pub struct BisectView {
    pub report: Report,
    pub measurements: Vec<sb::Measurement>,
}

pub async fn bisect_view(db: &sqlx::PgPool, id: i64) -> Result<BisectView, ViewError> {
    crate::store::run(db, id).await?;
    let kinds = sb::bisection_kinds(db).await.map_err(|e| ViewError::Other(e.into()))?;
    if !kinds.iter().any(|k| k.0 == id) {
        return Err(ViewError::NotFound(format!("run {id} is not a bisection")));
    }
    let report = crate::view::bisect::load_report(db, id).await?;
    let measurements = sb::measurements(db, id).await.map_err(|e| ViewError::Other(e.into()))?;
    Ok(BisectView { report, measurements })
}

/// Made once per state of a bisection that is not running (its range, up to 16,384
/// commits, is read from the store once, not on every view); made on each request while it
/// runs.
async fn once(
    st: &AppState,
    id: i64,
    what: &str,
    make: impl std::future::Future<Output = Result<String, ViewError>>,
) -> Result<std::sync::Arc<String>, ViewError> {
    match crate::store::pages::run_version(&st.db, id).await? {
        None => Err(ViewError::NotFound(format!("run {id} does not exist"))),
        Some(v) if !v.starts_with("running") => st.pages.page(format!("{id} {what}"), v, make).await,
        Some(_) => Ok(std::sync::Arc::new(make.await?)),
    }
}

pub async fn api(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<axum::response::Response, super::ApiError> {
    use axum::response::IntoResponse;
    let id = id_of("run", &id)?;
    let made = async {
        let v = bisect_view(&st.db, id).await?;
        serde_json::to_string(&v).map_err(|e| ViewError::Other(e.into()))
    };
    let body = once(&st, id, "bisect api", made).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.as_str().to_string(),
    )
        .into_response())
}

pub async fn page(State(st): State<AppState>, Path(id): Path<String>) -> PageResult {
    let id = id_of("run", &id)?;
    let page = once(&st, id, "bisect page", page_html(&st.db, id)).await?;
    Ok(Html(page.as_str().to_string()))
}

async fn page_html(db: &sqlx::PgPool, id: i64) -> Result<String, ViewError> {
    let v = bisect_view(db, id).await?;
    let r = &v.report;
    let a = &r.about;
    let mut body = html::facts(&[
        ("result", esc(&report::verdict(r))),
        (
            "metric",
            esc(&format!("{}/{} under variant {}", a.workload, a.metric, a.variant)),
        ),
        ("machine", esc(&a.machine)),
        ("range", esc(&report::range_text(r))),
        ("cost", esc(&report::cost_text(r))),
    ]);
    let _ = write!(
        body,
        "<p class=\"links\">{} {}</p><h2>The range</h2>{}",
        html::link(&format!("/runs/{id}"), "The run's jobs"),
        html::link(&format!("/api/v1/runs/{id}/bisect"), "JSON"),
        range_svg(r)
    );
    body.push_str(&numbers(r));
    body.push_str(&steps(r));
    body.push_str(&log(&v));
    let _ = write!(body, "<h2>To reproduce</h2>{}", html::pre(&r.reproduce.join("\n")));
    Ok(html::layout(&format!("Bisection (run {id})"), &body, &Live::Run(id)))
}

fn mark_class(m: Mark) -> &'static str {
    match m {
        Mark::Good => "good",
        Mark::Bad => "bad",
        Mark::Skip => "skip",
        Mark::Ambiguous => "ambiguous",
        Mark::Middle => "middle",
    }
}

const W: f64 = 720.0;
const H: f64 = 230.0;

/// The range as a chart: commits left to right (good at the left end, bad at the right),
/// each tested commit at its position (0 = like good at the bottom, 1 = like bad at the
/// top) with its interval; a skip is a cross on the middle line, the culprit a red line.
fn range_svg(r: &Report) -> String {
    let last = (r.commits - 1).max(1) as f64;
    let x = |i: usize| 60.0 + i as f64 * (W - 90.0) / last;
    let y = |p: f64| 190.0 - (p.clamp(-0.4, 1.4) + 0.4) / 1.8 * 170.0;
    let mut o = format!(
        "<svg class=\"bisect-range\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"each tested commit's position between good (0) and bad (1)\">"
    );
    for (p, label) in [(0.0, "0 good"), (0.5, "\u{bd}"), (1.0, "1 bad")] {
        let dash = if p == 0.5 { " stroke-dasharray=\"4 3\"" } else { "" };
        let _ = write!(
            o,
            "<line x1=\"50\" x2=\"{:.0}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"axis\"{dash}/><text x=\"44\" y=\"{:.1}\" text-anchor=\"end\" class=\"label\">{label}</text>",
            W - 20.0,
            y(p) + 4.0,
            y = y(p)
        );
    }
    if let Some(c) = &r.culprit {
        if let Some(i) = r.steps.iter().find(|s| s.hash == c.hash).map(|s| s.index) {
            let _ = write!(
                o,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"12\" y2=\"198\" class=\"culprit\"><title>first bad commit {1}</title></line>",
                x(i),
                esc(&c.subject)
            );
        }
    }
    for (i, p, name) in [(0, 0.0, "good"), (r.commits - 1, 1.0, "bad")] {
        let _ = write!(
            o,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" class=\"endpoint\"><title>{name}</title></rect><text x=\"{:.1}\" y=\"214\" text-anchor=\"middle\" class=\"label\">{i}</text>",
            x(i) - 4.0,
            y(p) - 4.0,
            x(i)
        );
    }
    for s in &r.steps {
        let cls = mark_class(s.decision);
        let tip = esc(&format!("{} {} — {cls}", short(&s.hash), s.subject));
        match &s.position {
            Some(p) => {
                let (cx, lo, hi, at) = (x(s.index), y(p.lo), y(p.hi), y(p.estimate));
                let _ = write!(
                    o,
                    "<g class=\"step {cls}\"><title>{tip}: {:.2} [{:.2}, {:.2}], {} boots</title><line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{lo:.1}\" y2=\"{hi:.1}\" class=\"ci\"/><circle cx=\"{cx:.1}\" cy=\"{at:.1}\" r=\"4\"/></g>",
                    p.estimate,
                    p.lo,
                    p.hi,
                    s.boots
                );
            }
            None => {
                let (cx, cy) = (x(s.index), y(0.5));
                let _ = write!(
                    o,
                    "<g class=\"step {cls}\"><title>{tip}</title><path d=\"M{:.1} {:.1}l8 8m0 -8l-8 8\"/></g>",
                    cx - 4.0,
                    cy - 4.0
                );
            }
        }
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"214\" text-anchor=\"middle\" class=\"label\">{}</text>",
            x(s.index),
            s.index
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.0}\" y=\"228\" text-anchor=\"end\" class=\"label\">commit (0 = good, {} = bad)</text></svg>",
        W - 20.0,
        r.commits - 1
    );
    o
}

fn side_cells(s: &Option<Side>) -> Vec<String> {
    match s {
        Some(s) => vec![
            format!("{:.6}", s.mean),
            format!("[{:.6}, {:.6}]", s.lo, s.hi),
            s.boots.to_string(),
        ],
        None => vec!["–".into(), "".into(), "0".into()],
    }
}

fn numbers(r: &Report) -> String {
    let mut rows = Vec::new();
    for (name, s) in [
        ("good", &r.at_good),
        ("bad", &r.at_bad),
        ("the culprit's parent", &r.at_parent),
        ("the culprit", &r.at_culprit),
        ("bad with the culprit reverted", &r.at_revert),
    ] {
        let mut row = vec![esc(name)];
        row.extend(side_cells(s));
        rows.push(row);
    }
    let mut out = format!(
        "<h2>Numbers</h2><p>{} per boot (the mean of its iterations); intervals {:.0} % (the level every report uses), from the boot-to-boot variance pooled over every commit measured.</p>",
        esc(&r.about.metric),
        100.0 * report::LEVEL
    );
    out.push_str(&html::table("numbers", &["", "mean", "interval", "boots"], &rows));
    let mut changes = Vec::new();
    for (name, c) in [
        ("good → bad", &r.endpoints_change),
        ("parent → culprit", &r.culprit_change),
        ("bad → reverted", &r.revert_change),
    ] {
        if let Some(c) = c {
            changes.push(vec![
                esc(name),
                format!("{:+.2}%", c.change * 100.0),
                format!("[{:+.2}%, {:+.2}%]", c.lo * 100.0, c.hi * 100.0),
            ]);
        }
    }
    out.push_str(&html::table("changes", &["change", "", "interval"], &changes));
    out
}

fn steps(r: &Report) -> String {
    let rows: Vec<Vec<String>> = r
        .steps
        .iter()
        .map(|s| {
            let pos = match (&s.position, &s.reason) {
                (Some(p), _) => format!("{:.2} [{:.2}, {:.2}]", p.estimate, p.lo, p.hi),
                (None, Some(reason)) => esc(reason.lines().next().unwrap_or("")),
                (None, None) => String::new(),
            };
            let cls = mark_class(s.decision);
            vec![
                s.index.to_string(),
                format!("<code>{}</code>", esc(short(&s.hash))),
                esc(&s.subject),
                format!("<span class=\"mark m-{cls}\">{cls}</span>"),
                pos,
                s.boots.to_string(),
            ]
        })
        .collect();
    format!(
        "<h2>Steps</h2>{}",
        html::table(
            "steps",
            &["#", "commit", "subject", "decision", "position", "boots"],
            &rows
        )
    )
}

fn log(v: &BisectView) -> String {
    let rows: Vec<Vec<String>> = v
        .measurements
        .iter()
        .map(|m| {
            let got = match (&m.value, &m.error) {
                (Some(x), _) => format!("{x:.6}"),
                (None, Some(e)) => esc(&format!("no value: {}", e.lines().next().unwrap_or(""))),
                (None, None) => "being measured".into(),
            };
            vec![
                m.seq.to_string(),
                esc(m.role.name()),
                esc(&m.kernel),
                m.boot.to_string(),
                got,
                if m.compiled { "built".into() } else { String::new() },
            ]
        })
        .collect();
    format!(
        "<h2>Measurements</h2><div id=\"bisect-log\" data-live>{}</div>",
        html::table("log", &["#", "role", "kernel", "boot", "value", "build"], &rows)
    )
}
