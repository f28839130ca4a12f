//! Scheduler statistics of a run: per kernel/variant the mean per-job /proc/schedstat
//! deltas (summed over CPUs) and the figures derived from them, each with its change
//! against the first side (`kreg schedstat compare`'s view); per CPU or per domain on
//! demand.

use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::params::Params;
use super::{id_of, json, ApiResult, AppState, PageResult};
use crate::report::sched_stats::{self as perf_section, SchedStats};
use crate::schedstat::{self, Diff, CPU_FIELDS};
use crate::view::{self, ViewError};

#[derive(Serialize)]
pub struct Side {
    /// "kernel/variant".
    pub name: String,
    pub jobs: usize,
    /// Mean per job, summed over CPUs, in `CPU_FIELDS` order.
    pub totals: Vec<f64>,
    /// (name, value, unit).
    pub derived: Vec<(String, f64, String)>,
    /// Per CPU, the mean per job of each counter.
    pub per_cpu: Vec<(u32, Vec<f64>)>,
    pub per_domain: Vec<DomainLevel>,
}

/// A domain level: (index, name, field names, mean per job of each, summed over CPUs).
pub type DomainLevel = (u32, Option<String>, Vec<String>, Vec<f64>);

#[derive(Serialize)]
pub struct SchedstatView {
    pub run: i64,
    pub fields: Vec<String>,
    pub sides: Vec<Side>,
    /// `perf sched stats` per compared pair (against the run's default baseline), when
    /// jobs recorded it.
    pub perf_sched_stats: Option<SchedStats>,
}

fn side(name: String, diffs: &[Diff]) -> Option<Side> {
    let (totals, derived) = schedstat::mean_totals(diffs)?;
    let n = diffs.len() as f64;
    let mut per_cpu: Vec<(u32, Vec<f64>)> = Vec::new();
    let mut per_domain: Vec<DomainLevel> = Vec::new();
    for d in diffs {
        for c in &d.cpus {
            let at = match per_cpu.iter().position(|(cpu, _)| *cpu == c.cpu) {
                Some(i) => i,
                None => {
                    per_cpu.push((c.cpu, vec![0.0; 9]));
                    per_cpu.len() - 1
                }
            };
            per_cpu[at]
                .1
                .iter_mut()
                .zip(c.values)
                .for_each(|(a, v)| *a += v as f64 / n);
        }
        let fields = schedstat::domain_fields(d.version);
        for (index, dname, values) in d.domain_totals() {
            let at = match per_domain.iter().position(|x| x.0 == index) {
                Some(i) => i,
                None => {
                    per_domain.push((index, dname, fields.clone(), vec![0.0; values.len()]));
                    per_domain.len() - 1
                }
            };
            per_domain[at]
                .3
                .iter_mut()
                .zip(values)
                .for_each(|(a, v)| *a += v as f64 / n);
        }
    }
    per_cpu.sort_by_key(|x| x.0);
    Some(Side {
        name,
        jobs: diffs.len(),
        totals: totals.to_vec(),
        derived: derived.into_iter().map(|(n, v, u)| (n, v, u.to_string())).collect(),
        per_cpu,
        per_domain,
    })
}

async fn schedstat_view(st: &AppState, id: &str) -> view::Result<SchedstatView> {
    let run = id_of("run", id)?;
    let (_, scenario) = view::scenario(&st.db, run).await?;
    let jobs = view::sched_stats_jobs(&st.db, run).await?;
    let perf_sched_stats = perf_section::section(
        &scenario,
        &jobs,
        &crate::report::default_baseline(&scenario),
        crate::stats::Settings::default().alpha,
    );
    let pairs = crate::store::schedstat_pairs(&st.db, run).await?;
    let mut groups: Vec<(String, Vec<Diff>)> = Vec::new();
    for p in &pairs {
        let name = format!("{}/{}", p.kernel, p.variant);
        let parse = |t: &str| schedstat::parse(t).map_err(|e| ViewError::Other(anyhow::anyhow!("{e}")));
        let d =
            schedstat::diff(&parse(&p.before)?, &parse(&p.after)?).map_err(|e| ViewError::Other(anyhow::anyhow!(e)))?;
        match groups.iter_mut().find(|g| g.0 == name) {
            Some(g) => g.1.push(d),
            None => groups.push((name, vec![d])),
        }
    }
    Ok(SchedstatView {
        run,
        fields: CPU_FIELDS.iter().map(|s| s.to_string()).collect(),
        sides: groups.into_iter().filter_map(|(n, d)| side(n, &d)).collect(),
        perf_sched_stats,
    })
}

pub async fn api(State(st): State<AppState>, Path(id): Path<String>) -> ApiResult {
    json(&schedstat_view(&st, &id).await?)
}

fn change(base: f64, v: f64) -> String {
    if base != 0.0 && base.is_finite() && v.is_finite() {
        format!(" <small>{:+.2}%</small>", 100.0 * (v - base) / base)
    } else {
        String::new()
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "—".into()
    }
}

/// A counter's value in its unit: nanoseconds as ns, µs, ms or s; counts whole.
fn in_unit(field: &str, v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    match schedstat::cpu_field_meaning(field).0 {
        "ns" => {
            let (scaled, unit) = match v.abs() {
                a if a >= 1e9 => (v / 1e9, "s"),
                a if a >= 1e6 => (v / 1e6, "ms"),
                a if a >= 1e3 => (v / 1e3, "µs"),
                _ => (v, "ns"),
            };
            format!("{scaled:.2} {unit}")
        }
        _ if v.fract() == 0.0 || v.abs() >= 100.0 => format!("{v:.0}"),
        _ => format!("{v:.2}"),
    }
}

/// A counter's name with its unit, its meaning on hover.
fn field_label(field: &str) -> String {
    let (unit, meaning) = schedstat::cpu_field_meaning(field);
    if unit.is_empty() {
        return esc(field);
    }
    format!(
        "<abbr title=\"{}\">{}</abbr> <small>({})</small>",
        esc(meaning),
        esc(field),
        esc(unit)
    )
}

pub async fn page(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
) -> PageResult {
    let p = Params::new(q, &["detail"])?;
    let detail = p.one_of("detail", &["cpu", "domain"])?;
    let v = schedstat_view(&st, &id).await?;
    let run = v.run;
    let mut body = format!(
        "<p>{} · detail: {} {} {} · {}</p>",
        html::link(&format!("/runs/{run}"), &format!("run {run}")),
        html::link(&format!("/runs/{run}/schedstat"), "totals"),
        html::link(&format!("/runs/{run}/schedstat?detail=cpu"), "per CPU"),
        html::link(&format!("/runs/{run}/schedstat?detail=domain"), "per domain"),
        html::link(&format!("/api/v1/runs/{run}/schedstat"), "JSON"),
    );
    let perf = v.perf_sched_stats.as_ref().map(perf_sched_stats).unwrap_or_default();
    if v.sides.is_empty() {
        body.push_str(&perf);
        body.push_str("<p>No done job of this run has schedstat snapshots (no /proc/schedstat on the SUT, or no job done yet).</p>");
        return Ok(Html(html::layout(
            &format!("Scheduler statistics, run {run}"),
            &body,
            &Live::No,
        )));
    }
    let mut head = vec!["counter".to_string()];
    head.extend(v.sides.iter().map(|s| format!("{} ({} jobs)", s.name, s.jobs)));
    let head_ref: Vec<&str> = head.iter().map(|s| s.as_str()).collect();
    let base = &v.sides[0];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, f) in v.fields.iter().enumerate().filter(|(_, f)| *f != "array_exp") {
        let mut r = vec![field_label(f)];
        r.extend(
            v.sides
                .iter()
                .map(|s| format!("{}{}", in_unit(f, s.totals[i]), change(base.totals[i], s.totals[i]))),
        );
        rows.push(r);
    }
    for (k, (name, _, unit)) in base.derived.iter().enumerate() {
        let mut r = vec![format!("{} ({})", esc(name), esc(unit))];
        r.extend(v.sides.iter().map(|s| match s.derived.get(k) {
            Some(d) => format!("{}{}", num(d.1), change(base.derived[k].1, d.1)),
            None => "—".into(),
        }));
        rows.push(r);
    }
    let _ = write!(
        body,
        "<h2>Mean per job, summed over CPUs (change against {})</h2>{}",
        esc(&base.name),
        html::table("schedstat", &head_ref, &rows)
    );
    body.push_str(&perf);
    match detail.as_deref() {
        Some("cpu") => body.push_str(&per_cpu(&v)),
        Some("domain") => body.push_str(&per_domain(&v)),
        _ => {}
    }
    Ok(Html(html::layout(
        &format!("Scheduler statistics, run {run}"),
        &body,
        &Live::No,
    )))
}

fn per_cpu(v: &SchedstatView) -> String {
    let mut out = String::new();
    let labels: Vec<String> = v
        .fields
        .iter()
        .map(|f| match schedstat::cpu_field_meaning(f).0 {
            "" => f.clone(),
            unit => format!("{f} ({unit})"),
        })
        .collect();
    let mut head = vec!["cpu"];
    head.extend(labels.iter().map(|s| s.as_str()));
    for s in &v.sides {
        let rows: Vec<Vec<String>> = s
            .per_cpu
            .iter()
            .map(|(cpu, vals)| {
                let mut r = vec![format!("cpu{cpu}")];
                r.extend(vals.iter().zip(&v.fields).map(|(x, f)| in_unit(f, *x)));
                r
            })
            .collect();
        let _ = write!(
            out,
            "<h2>{} per CPU</h2>{}",
            esc(&s.name),
            html::table("schedstat", &head, &rows)
        );
    }
    out
}

fn per_domain(v: &SchedstatView) -> String {
    let mut out = String::new();
    for s in &v.sides {
        for (index, name, fields, vals) in &s.per_domain {
            let label = name.clone().unwrap_or_else(|| format!("domain{index}"));
            let rows: Vec<Vec<String>> = fields.iter().zip(vals).map(|(f, x)| vec![esc(f), num(*x)]).collect();
            let _ = write!(
                out,
                "<details class=\"raw\"><summary>{} {}</summary>{}</details>",
                esc(&s.name),
                esc(&label),
                html::table("schedstat", &["field", "mean per job"], &rows)
            );
        }
    }
    out
}

/// What `perf sched stats` recorded, per compared pair: both means with their spreads and
/// the change with its interval per field, the fields that moved beyond noise marked.
fn perf_sched_stats(sec: &SchedStats) -> String {
    let mut out = format!(
        "<h2 id=\"perf-sched-stats\">perf sched stats</h2><p class=\"method\">{}</p>",
        esc(&sec.method())
    );
    for p in &sec.pairs {
        let head = perf_section::headers(p);
        let head: Vec<&str> = head.iter().map(|s| s.as_str()).collect();
        let rows: Vec<Vec<String>> = p
            .fields
            .iter()
            .map(|f| {
                let mut cells: Vec<String> = perf_section::cells(f).iter().map(|c| esc(c)).collect();
                if f.moved {
                    for c in &mut cells[6..] {
                        *c = format!("<strong>{c}</strong>");
                    }
                }
                cells
            })
            .collect();
        let zero = if p.zero > 0 {
            format!(" <small>({} fields zero in every job, not listed)</small>", p.zero)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<h3>{}: {} against {}{zero}</h3>{}",
            esc(&p.workload),
            esc(&p.new_label()),
            esc(&p.base_label()),
            html::table("schedstat perfstats", &head, &rows)
        );
    }
    for l in sec.cross_lines() {
        let class = if l.is_warning() { "warning" } else { "note" };
        let _ = write!(out, "<p class=\"{class}\">{}</p>", esc(&l.to_string()));
    }
    out
}
