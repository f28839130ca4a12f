//! `kernel-table`: per workload, a table of kernels and runtime parameters (the variant) with
//! the change of each metric against the baseline kernel with the same parameters, whose row
//! says "baseline", blocks of one variant apart by a line of "=". Each cell has two lines: the
//! change (the metric's own sign) with kreg's verdict, then its 90 % interval (the baseline:
//! its value ±sd%):
//!
//! ```text
//! Kernel    | Runtime    | nopm               | neword_p50
//!           | parameters | (larger is better) | (larger is worse)
//! ----------+------------+--------------------+-------------------
//! v6.5.13   | default    | baseline           | baseline
//!           |            | 31,234 ±1.2%       | 12.30 ±2.0%
//! ----------+------------+--------------------+-------------------
//! v6.12.25  | default    | -5.1% REGR         | +7.8% REGR
//!           |            | [-6.0,-4.2]        | [+5.0,+9.9]
//! ```

use super::{code, fit, interval, num, push_wrapped};
use crate::report::compact::{blocks, command_of, Block};
use crate::report::mail::WIDTH;
use crate::report::table::{Baseline, MetricTable, Row};
use crate::report::Report;

const MIN_METRIC_W: usize = 17;
const MAX_METRIC_W: usize = 24;

/// A cell's two lines.
fn cell(t: &MetricTable, r: Option<&Row>, is_base: bool, base: Option<&Row>) -> [String; 2] {
    let Some(r) = r else { return ["-".into(), String::new()] };
    if is_base {
        return [
            "baseline".into(),
            format!("{} ±{:.1}%", num(r.centre(t.kind)), r.spread_pct(t.kind)),
        ];
    }
    match (&r.comparison, base) {
        (Some(c), Some(base)) => [
            format!("{:+.1}% {}", change(t, base, r), code(c.verdict)),
            interval(c.ci.map(|(l, h)| (100.0 * l, 100.0 * h))),
        ],
        _ => [num(r.centre(t.kind)), String::new()],
    }
}

/// The change of `r` over `base` in percent, in the metric's own sign.
fn change(t: &MetricTable, base: &Row, r: &Row) -> f64 {
    let b = base.centre(t.kind);
    if b == 0.0 {
        f64::NAN
    } else {
        100.0 * (r.centre(t.kind) - b) / b.abs()
    }
}

/// The header's two lines for a metric: its name, then its unit and direction.
fn header(t: &MetricTable) -> [String; 2] {
    let dir = if t.higher_is_better {
        "larger is better"
    } else {
        "larger is worse"
    };
    let unit = if t.unit.is_empty() {
        String::new()
    } else {
        format!("{}, ", t.unit)
    };
    [t.metric.clone(), format!("({unit}{dir})")]
}

fn join(cells: &[String], widths: &[usize]) -> String {
    let parts: Vec<String> = cells
        .iter()
        .zip(widths)
        .map(|(c, w)| format!("{:<w$}", fit(c, *w)))
        .collect();
    parts.join(" | ").trim_end().to_string()
}

fn rule(widths: &[usize], ch: char) -> String {
    let parts: Vec<String> = widths.iter().map(|w| ch.to_string().repeat(*w)).collect();
    parts.join(&format!("{ch}+{ch}"))
}

/// One table: the block's lines for `metrics` (indices into its lines).
fn table(out: &mut String, rep: &Report, b: &Block, metrics: &[usize], widths: &[usize]) {
    let rows = || b.lines.iter().flat_map(|(_, cells)| cells.iter().flatten());
    if !rows().any(|r| rep.baseline.is_base(r)) {
        let what = match (rep.baseline, rows().next()) {
            (Baseline::Kernel(k), Some(r)) => format!("{k} with {}", r.variant),
            (Baseline::Variant(v), Some(r)) => format!("{v} on {}", r.kernel),
            _ => "the baseline".into(),
        };
        push_wrapped(
            out,
            &format!("no baseline row ({what} has no value: its jobs failed or are missing), so no change is given"),
            "",
            "  ",
        );
    }
    let mut first = [
        vec!["Kernel".to_string(), "Runtime".to_string()],
        vec![String::new(), "parameters".into()],
    ];
    for m in metrics {
        let [a, z] = header(b.lines[*m].0);
        first[0].push(a);
        first[1].push(z);
    }
    out.push_str(&join(&first[0], widths));
    out.push('\n');
    out.push_str(&join(&first[1], widths));
    out.push('\n');
    for (ci, _) in b.columns.iter().enumerate() {
        let rows: Vec<Option<&Row>> = metrics.iter().map(|m| b.lines[*m].1[ci]).collect();
        let Some(any) = rows.iter().flatten().next() else {
            continue;
        };
        let base_col = rep.baseline.is_base(any);
        let mut lines = [
            vec![any.kernel.clone(), any.variant.clone()],
            vec![String::new(), String::new()],
        ];
        for (m, r) in metrics.iter().zip(&rows) {
            // The baseline is the block's first column when it is one of them.
            let base = b.lines[*m].1[0].filter(|r0| rep.baseline.is_base(r0));
            let [a, z] = cell(b.lines[*m].0, *r, base_col, base);
            lines[0].push(a);
            lines[1].push(z);
        }
        out.push_str(&rule(widths, '-'));
        out.push('\n');
        out.push_str(&join(&lines[0], widths));
        out.push('\n');
        out.push_str(&join(&lines[1], widths));
        out.push('\n');
    }
}

/// The widths of the kernel and parameters columns, and how many metrics fit beside them.
fn layout(rep: &Report) -> (usize, usize, usize) {
    let rows = || rep.tables.iter().flat_map(|t| t.rows.iter());
    let kw = rows().map(|r| r.kernel.chars().count()).max().unwrap_or(0).clamp(6, 14);
    let pw = rows()
        .map(|r| r.variant.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(10, 14);
    let room = WIDTH - kw - pw - 3;
    let per = (room / (MIN_METRIC_W + 3)).max(1);
    (kw, pw, per)
}

pub fn render(rep: &Report) -> String {
    let mut out = match super::head(rep, "kernel-table") {
        Ok(h) => h,
        Err(e) => return e,
    };
    let (kw, pw, per) = layout(rep);
    let mut workload = "";
    for b in blocks(rep) {
        let all: Vec<usize> = (0..b.lines.len()).collect();
        for metrics in all.chunks(per) {
            let room = WIDTH - kw - pw - 3;
            let mw = (room / metrics.len()).saturating_sub(3).min(MAX_METRIC_W);
            let mut widths = vec![kw, pw];
            widths.extend(std::iter::repeat_n(mw, metrics.len()));
            if b.workload != workload {
                workload = b.workload;
                out.push('\n');
                push_wrapped(
                    &mut out,
                    &format!("{}: {}", b.workload, command_of(rep, b.workload)),
                    "",
                    "    ",
                );
            } else {
                out.push_str(&"=".repeat(widths.iter().sum::<usize>() + 3 * (widths.len() - 1)));
                out.push('\n');
                out.push('\n');
            }
            table(&mut out, rep, &b, metrics, &widths);
        }
    }
    super::tail(
        rep,
        &mut out,
        "Each kernel's change is against the baseline kernel with the same runtime parameters, in the metric's own sign (larger is better or worse as its header says), under it kreg's 90% interval of the change in percent; the baseline row gives its value ±sd% (median ±IQR% for percentiles and counts);",
    );
    out
}
