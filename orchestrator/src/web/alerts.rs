//! Every alert across the histories, newest first, grouped by triage state (new first), as a
//! performance team reads them in the morning: where (scenario, workload/metric,
//! kernel/variant), the change with its 90% interval, the runs on each side, the history it
//! sits on, the command that bisects it, and how to triage it (`kreg alerts set`: the
//! dashboard only reads). `?state=` keeps one state, `?scenario=` one scenario.

use std::fmt::Write;

use axum::extract::{Query, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::params::Params;
use super::{json, ApiResult, AppState, PageResult};
use crate::store::alerts::{self, Alert, AlertState};
use crate::view::{self, ViewError};

#[derive(Serialize)]
struct AlertsView {
    /// The state asked for, or every state.
    state: Option<String>,
    scenario: Option<String>,
    /// How many alerts there are in each state (of the scenario asked for).
    counts: Vec<(String, usize)>,
    alerts: Vec<super::history::AlertView>,
}

const PARAMS: [&str; 2] = ["state", "scenario"];

async fn alerts_view(st: &AppState, p: &Params) -> view::Result<AlertsView> {
    let state = match p.get("state").filter(|s| *s != "all") {
        Some(s) => Some(
            AlertState::parse(s)
                .ok_or_else(|| ViewError::Invalid(format!("state {s:?}: one of {} or all", AlertState::names())))?,
        ),
        None => None,
    };
    let scenario = p.get("scenario");
    let every = alerts::list(&st.db, None, scenario).await?;
    let counts = AlertState::ALL
        .iter()
        .map(|s| (s.to_string(), every.iter().filter(|a| a.state == *s).count()))
        .collect();
    let mut shown: Vec<Alert> = every
        .into_iter()
        .filter(|a| state.is_none_or(|s| a.state == s))
        .collect();
    // New first, then by the order of triage states; newest first within each.
    shown.sort_by_key(|a| (a.state, std::cmp::Reverse(a.id)));
    let mut out = Vec::new();
    for alert in shown {
        let bisect = view::history::bisect_command(&st.db, &alert).await?;
        out.push(super::history::AlertView { alert, bisect });
    }
    Ok(AlertsView {
        state: state.map(|s| s.to_string()),
        scenario: scenario.map(String::from),
        counts,
        alerts: out,
    })
}

pub async fn api(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> ApiResult {
    let p = Params::new(q, &PARAMS)?;
    json(&alerts_view(&st, &p).await?)
}

pub async fn page(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> PageResult {
    let p = Params::new(q, &PARAMS)?;
    let v = alerts_view(&st, &p).await?;
    let mut body = String::from("<p class=\"links\">");
    let keep = |s: &str| match &v.scenario {
        Some(sc) => format!("/alerts?state={s}&scenario={}", super::params::enc(sc)),
        None => format!("/alerts?state={s}"),
    };
    for (s, n) in &v.counts {
        let _ = write!(body, "{} ", html::link(&keep(s), &format!("{s} ({n})")));
    }
    let _ = write!(body, "{}</p>", html::link(&keep("all"), "all"));
    if v.alerts.is_empty() {
        body.push_str("<p>No alerts here. An alert is raised when a history's change point is at least the minimum effect (`kreg alerts scan`, and after every run).</p>");
    }
    let rows: Vec<Vec<String>> = v.alerts.iter().map(row).collect();
    body.push_str(&html::table(
        "alerts",
        &[
            "alert",
            "state",
            "where",
            "change (90% interval)",
            "runs",
            "raised",
            "bisect",
        ],
        &rows,
    ));
    body.push_str(
        "<p class=\"reading\">Triage from the command line (the dashboard only reads): \
<code>kreg alerts set ID acknowledged|invalid|fixed --note TEXT</code>; \
<code>kreg alerts show ID</code> prints one whole.</p>",
    );
    Ok(Html(html::layout("Alerts", &body, &Live::No)))
}

fn row(a: &super::history::AlertView) -> Vec<String> {
    let x = &a.alert;
    let history = format!(
        "/history?scenario={}&workload={}&metric={}",
        super::params::enc(&x.scenario),
        super::params::enc(&x.workload),
        super::params::enc(&x.metric)
    );
    let change = match (x.change, x.change_low, x.change_high) {
        (Some(c), l, h) => format!(
            "<span class=\"v-{}\">{} {:+.1}%</span> {}",
            esc(&x.direction),
            esc(&x.direction),
            100.0 * c,
            esc(&crate::stats::interval_text(l.zip(h)))
        ),
        _ => esc(&x.direction),
    };
    vec![
        format!("#{}", x.id),
        format!(
            "<span class=\"alert-state s-{0}\">{0}</span>{1}",
            esc(x.state.as_str()),
            if x.note.is_empty() {
                String::new()
            } else {
                format!("<br><small>{}</small>", esc(&x.note))
            }
        ),
        format!(
            "{} · {} · {}",
            esc(&x.scenario),
            html::link(&history, &format!("{}/{}", x.workload, x.metric)),
            esc(&format!("{}/{}", x.kernel, x.variant))
        ),
        change,
        format!(
            "{} → {} ({} / {} runs)",
            html::link(&format!("/runs/{}", x.previous_run_id), &x.previous_run_id.to_string()),
            html::link(&format!("/runs/{}", x.run_id), &x.run_id.to_string()),
            x.before_runs,
            x.after_runs
        ),
        html::time(&x.created_at),
        match &a.bisect {
            Ok(cmd) => format!("<code>{}</code>", esc(cmd)),
            Err(why) => format!("<small>{}</small>", esc(why)),
        },
    ]
}
