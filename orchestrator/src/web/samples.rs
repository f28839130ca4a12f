//! A report row's samples: each value with its job, kernel and boot, the command lines the
//! row's jobs ran, and how to reproduce the row.

use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::params::Params;
use super::{id_of, json, ApiResult, AppState, PageResult};
use crate::report;
use crate::view::{self, queries, ViewError};

type Q = Query<Vec<(String, String)>>;

#[derive(Serialize)]
struct SamplesView {
    run: i64,
    workload: String,
    metric: String,
    kernel: String,
    variant: String,
    samples: Vec<queries::SampleItem>,
    /// The scenario file the run was recorded from, and the commands that reproduce it.
    source_path: String,
    reproduce: Vec<String>,
}

async fn samples_view(st: &AppState, id: &str, q: Vec<(String, String)>) -> view::Result<SamplesView> {
    let run = id_of("run", id)?;
    let p = Params::new(q, &["workload", "metric", "kernel", "variant"])?;
    let need = |k: &str| {
        p.get(k)
            .map(String::from)
            .ok_or_else(|| ViewError::Invalid(format!("{k} is required")))
    };
    let (workload, metric, kernel, variant) = (need("workload")?, need("metric")?, need("kernel")?, need("variant")?);
    let (row, _) = queries::run_and_row(&st.db, run).await?;
    let samples = queries::row_samples(&st.db, run, &workload, &metric, &kernel, &variant).await?;
    if samples.is_empty() {
        return Err(ViewError::NotFound(format!(
            "run {run} has no samples of {workload} / {metric} for kernel {kernel}, variant {variant}"
        )));
    }
    let q = crate::ssh::session::quote;
    // The row's cell and the cell it is compared with (the scenario's baseline), and only
    // those: `kreg run --only`.
    let s = view::scenario_of(&row)?;
    let mut cells = vec![(kernel.clone(), variant.clone())];
    match report::default_baseline(&s) {
        report::Baseline::Kernel(k) if k != kernel => cells.push((k, variant.clone())),
        report::Baseline::Variant(v) if v != variant => cells.push((kernel.clone(), v)),
        _ => {}
    }
    let only: String = cells
        .iter()
        .map(|(k, v)| format!(" --only {}", q(&format!("{k}/{v}/{workload}"))))
        .collect();
    let reproduce = vec![
        format!("kreg run {}{only}", q(&row.source_path)),
        format!(
            "kreg report <NEW RUN> --format json   # row {}/{}, kernel {}, variant {}",
            workload, metric, kernel, variant
        ),
        format!("kreg compare {run} <NEW RUN>   # the same cells, run against run"),
    ];
    Ok(SamplesView {
        source_path: row.source_path,
        reproduce,
        run,
        workload,
        metric,
        kernel,
        variant,
        samples,
    })
}

pub async fn samples_api(State(st): State<AppState>, Path(id): Path<String>, Query(q): Q) -> ApiResult {
    json(&samples_view(&st, &id, q).await?)
}

pub async fn samples_page(State(st): State<AppState>, Path(id): Path<String>, Query(q): Q) -> PageResult {
    let v = samples_view(&st, &id, q).await?;
    let rows: Vec<Vec<String>> = v
        .samples
        .iter()
        .map(|s| {
            let iteration = if s.warmup {
                "<span class=\"warmup\">warm-up, not judged</span>".to_string()
            } else {
                s.iteration.to_string()
            };
            vec![
                iteration,
                s.boot.to_string(),
                format!("<code>{}</code>", esc(s.boot_id.as_deref().unwrap_or(""))),
                format!("{} {}", esc(&report::fmt_value(s.value)), esc(&s.unit)),
                html::link(&format!("/jobs/{}", s.job_id), &format!("job {}", s.job_id)),
            ]
        })
        .collect();
    let warmups = v.samples.iter().filter(|s| s.warmup).count();
    let note = match warmups {
        0 => String::new(),
        n => format!(
            "<p class=\"note\">{n} warm-up run{} (<code>warmup:</code>, at the start of a boot) listed and marked: no verdict uses {}.</p>",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    let body = format!(
        "<p>{} · kernel {} · variant {}</p>{note}{}{}",
        html::link(&format!("/runs/{}/report", v.run), &format!("run {} comparison", v.run)),
        esc(&v.kernel),
        esc(&v.variant),
        html::table("samples", &["iteration", "boot", "boot id", "value", "job"], &rows),
        commands_section(&v)
    );
    Ok(Html(html::layout(
        &format!("Samples of {} / {}, run {}", v.workload, v.metric, v.run),
        &body,
        &Live::No,
    )))
}

/// The command lines the row's jobs ran (identical ones together, with their jobs), on
/// which host, kernel and boot; then how to reproduce the row.
fn commands_section(v: &SamplesView) -> String {
    let mut groups: Vec<(&str, Vec<&queries::SampleItem>)> = Vec::new();
    for s in &v.samples {
        let text = s.commands.as_deref().unwrap_or("");
        match groups.iter_mut().find(|g| g.0 == text) {
            Some(g) => g.1.push(s),
            None => groups.push((text, vec![s])),
        }
    }
    let mut out = String::from("<h2 id=\"commands\">Command lines</h2>");
    for (text, jobs) in groups {
        let links: Vec<String> = jobs
            .iter()
            .map(|s| html::link(&format!("/jobs/{}", s.job_id), &s.job_id.to_string()))
            .collect();
        let mut boots: Vec<String> = jobs
            .iter()
            .map(|s| {
                format!(
                    "{} boot {}",
                    s.kernel_release.as_deref().unwrap_or("?"),
                    s.boot_id.as_deref().unwrap_or("?")
                )
            })
            .collect();
        boots.dedup();
        let _ = write!(
            out,
            "<p>job{} {} · {}</p>",
            if links.len() == 1 { "" } else { "s" },
            links.join(", "),
            esc(&boots.join("; "))
        );
        if text.is_empty() {
            out.push_str("<p class=\"note\">not recorded (runs stored before kreg kept command lines)</p>");
        } else {
            let _ = write!(out, "<pre class=\"cmd\">{}</pre>", esc(text.trim_end()));
        }
    }
    let _ = write!(
        out,
        "<h2 id=\"reproduce\">To reproduce</h2><p>The scenario file this run was recorded from: <code>{}</code> \
         (its text as recorded is on the {} page). Run it again, then read this row in the new run and \
         compare the runs:</p><pre class=\"cmd\">{}</pre>",
        esc(&v.source_path),
        html::link(&format!("/runs/{}", v.run), &format!("run {}", v.run)),
        esc(&v.reproduce.join("\n"))
    );
    out
}

/// The link to the samples of row `r` of table `t` in `run` (this page).
pub fn href(run: i64, t: &report::MetricTable, r: &report::Row) -> String {
    use super::params::enc;
    format!(
        "/runs/{run}/samples?workload={}&metric={}&kernel={}&variant={}",
        enc(&t.workload),
        enc(&t.metric),
        enc(&r.kernel),
        enc(&r.variant)
    )
}
