//! A job's page: where it ran, its metrics, the policy seen, tool versions, and every raw
//! output it left (workload output, schedstat before and after, sched features, server
//! threads), with the end of its kernel's build log when kreg built the kernel.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use super::html::{self, esc, Live};
use super::{id_of, json, ApiResult, AppState, PageError, PageResult};
use crate::view::{self, queries};

/// Raw outputs shown inline up to this many characters; the whole text is one click away.
const INLINE_CHARS: usize = 64 * 1024;
const BUILD_LOG_LINES: usize = 40;

#[derive(Serialize)]
pub struct JobPage {
    pub job: queries::JobItem,
    pub results: Vec<queries::ResultItem>,
    pub raw: Vec<queries::RawItem>,
    /// The build kreg made for this job's kernel in its run.
    pub build: Option<String>,
    pub build_log_tail: Option<String>,
}

async fn job_view(st: &AppState, id: &str) -> view::Result<JobPage> {
    let id = id_of("job", id)?;
    let job = queries::job(&st.db, id).await?;
    let build = queries::build_of(&st.db, job.run_id, &job.job.kernel).await?;
    let build_log_tail = match &build {
        Some(key) => queries::build(&st.db, key)
            .await?
            .build_log
            .map(|l| html::tail(&l, BUILD_LOG_LINES)),
        None => None,
    };
    Ok(JobPage {
        results: queries::results_of(&st.db, id).await?,
        raw: queries::raw_list(&st.db, id, INLINE_CHARS as i32).await?,
        job,
        build,
        build_log_tail,
    })
}

pub async fn api(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult {
    json(&job_view(&st, &id).await?)
}

/// `/jobs/{id}/raw/{kind}`: one raw output as plain text.
pub async fn raw(State(st): State<AppState>, Path((id, kind)): Path<(String, String)>) -> Result<Response, PageError> {
    let id = id_of("job", &id)?;
    let text = queries::raw(&st.db, id, &kind).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// Every raw output inline (up to `INLINE_CHARS`), each with a link to its whole text.
fn raw_outputs(v: &JobPage) -> String {
    let j = &v.job;
    let mut body = String::from("<h2>Raw outputs</h2>");
    if v.raw.is_empty() {
        body.push_str("<p>None stored.</p>");
    }
    for r in &v.raw {
        let shown = if r.head.len() < r.bytes as usize {
            format!("{}\n… ({} bytes in all)", r.head, r.bytes)
        } else {
            r.head.clone()
        };
        let open = if crate::record::RawKind::parse(&r.kind).is_some_and(|k| k.shown_open()) {
            " open"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<details class=\"raw\"{open}><summary>{} <small>({} bytes, {})</small></summary>{}</details>",
            esc(&r.kind),
            r.bytes,
            html::link(
                &format!("/jobs/{}/raw/{}", j.job.id, super::params::enc(&r.kind)),
                "plain text"
            ),
            html::pre(&shown)
        );
    }
    body
}

pub async fn page(State(st): State<AppState>, Path(id): Path<String>) -> PageResult {
    let v = job_view(&st, &id).await?;
    let j = &v.job;
    let opt = |s: &Option<String>| esc(s.as_deref().unwrap_or("—"));
    let when = |t: &Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map(html::time).unwrap_or_else(|| "—".into());
    let mut body = html::facts(&[
        (
            "run",
            html::link(&format!("/runs/{}", j.run_id), &format!("run {}", j.run_id)),
        ),
        ("kernel", esc(&j.job.kernel)),
        ("variant", esc(&j.job.variant)),
        ("workload", esc(&j.job.workload)),
        ("iteration", j.job.iteration.to_string()),
        ("boot", j.job.boot.to_string()),
        ("state", format!("<span class=\"state s-{0}\">{0}</span>", j.job.state)),
        ("attempts", j.job.attempts.to_string()),
        ("release", opt(&j.kernel_release)),
        ("boot id", format!("<code>{}</code>", opt(&j.boot_id))),
        ("observed policy", opt(&j.observed_policy)),
        ("started", when(&j.started_at)),
        ("finished", when(&j.finished_at)),
    ]);
    if let Some(e) = &j.job.error {
        let _ = write!(body, "<h2>Why it failed</h2>{}", html::pre(e));
    }
    let rows: Vec<Vec<String>> = v
        .results
        .iter()
        .map(|r| {
            vec![
                esc(&r.metric),
                esc(&crate::report::fmt_value(r.value)),
                esc(&r.unit),
                esc(&r.kind),
                if r.higher_is_better { "higher" } else { "lower" }.into(),
            ]
        })
        .collect();
    let _ = write!(
        body,
        "<h2>Metrics</h2>{}",
        if rows.is_empty() {
            "<p>None stored.</p>".to_string()
        } else {
            html::table("metrics", &["metric", "value", "unit", "kind", "better"], &rows)
        }
    );
    let tools: Vec<Vec<String>> = j
        .tool_versions
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| vec![esc(k), esc(v.as_str().unwrap_or(""))])
                .collect()
        })
        .unwrap_or_default();
    if !tools.is_empty() {
        let _ = write!(
            body,
            "<h2>Tool versions</h2>{}",
            html::table("tools", &["tool@host", "version"], &tools)
        );
    }
    body.push_str(&raw_outputs(&v));
    if let (Some(key), Some(log)) = (&v.build, &v.build_log_tail) {
        let _ = write!(
            body,
            "<h2>Build log (last {BUILD_LOG_LINES} lines)</h2><p>{}</p>{}",
            html::link(&format!("/kernels/{key}"), key),
            html::pre(log)
        );
    }
    Ok(Html(html::layout(&format!("Job {}", j.job.id), &body, &Live::No)))
}
