//! `base-head`: per metric and variant, one line per workload with the baseline's and the
//! other kernel's value ±sd%, the change as the thread computed it ("+" is better), and beside
//! it kreg's 90 % interval of that change and its verdict:
//!
//! ```text
//! workload          base           head           change  90% CI        kreg
//! hackbench-g8      8.06±1.58%     7.88±5.82%     +2.23%  [-1.0,+5.5]   incon
//! ```

use super::{chunks, code, direction, fit, gain_interval, interval, num, push_wrapped, row_gain, sections, Section};
use crate::report::mail::WIDTH;
use crate::report::table::{MetricTable, Row};
use crate::report::Report;

/// "3.62±2.99%" (the median and IQR% for percentiles and counts).
fn value(t: &MetricTable, r: &Row) -> String {
    format!("{}±{:.2}%", num(r.centre(t.kind)), r.spread_pct(t.kind))
}

/// The line's cells after the workload's name: base, other, change, interval, verdict.
fn cells(t: &MetricTable, base: Option<&Row>, other: Option<&Row>) -> [String; 5] {
    let dash = || "-".to_string();
    let b = base.map(|r| value(t, r)).unwrap_or_else(dash);
    let o = other.map(|r| value(t, r)).unwrap_or_else(dash);
    match other.and_then(|r| r.comparison.as_ref()) {
        Some(c) => [
            b,
            o,
            // A change from nothing (a count of 0 on both sides) is no percentage.
            match row_gain(t, base, other.expect("compared")) {
                g if g.is_finite() => format!("{g:+.2}%"),
                _ => "n/a".into(),
            },
            interval(gain_interval(t, c)),
            code(c.verdict).to_string(),
        ],
        None => [b, o, dash(), dash(), dash()],
    }
}

/// The section's lines: its header, then each workload's name and cells.
fn lines(s: &Section, pair: &[usize]) -> Vec<(String, [String; 5])> {
    let mut lines: Vec<(String, [String; 5])> = Vec::new();
    for (workload, rows) in &s.cases {
        let other = pair.get(1).and_then(|i| rows[*i]);
        lines.push((workload.to_string(), cells(s.table, rows[pair[0]], other)));
    }
    // A kernel's name is cut to its values' width (its full name is in the heading).
    let value_w = |i: usize| {
        lines
            .iter()
            .map(|(_, c)| c[i].chars().count())
            .max()
            .unwrap_or(0)
            .max(8)
    };
    let names: Vec<String> = pair
        .iter()
        .enumerate()
        .map(|(j, i)| fit(&s.columns[*i], value_w(j)))
        .collect();
    let header = [
        names[0].clone(),
        names.get(1).cloned().unwrap_or_else(|| "-".into()),
        "change".into(),
        "90% CI".into(),
        "kreg".into(),
    ];
    lines.insert(0, ("workload".into(), header));
    lines
}

fn section(out: &mut String, s: &Section, pair: &[usize]) {
    let t = s.table;
    let unit = if t.unit.is_empty() {
        String::new()
    } else {
        format!("{}, ", t.unit)
    };
    let what = if t.kind.by_ranks() { "median±IQR%" } else { "mean±sd%" };
    out.push('\n');
    push_wrapped(
        out,
        &format!(
            "{} ({unit}{what}, {}), {}: {}",
            t.metric,
            direction(t),
            s.title,
            pair.iter()
                .map(|i| s.columns[*i].as_str())
                .collect::<Vec<_>>()
                .join(" against ")
        ),
        "",
        "  ",
    );
    out.push('\n');
    let lines = lines(s, pair);
    let w: Vec<usize> = (0..5)
        .map(|i| lines.iter().map(|(_, c)| c[i].chars().count()).max().unwrap_or(0))
        .collect();
    let rest: usize = w.iter().sum::<usize>() + 2 * 5;
    let name_w = lines
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .min(WIDTH.saturating_sub(rest).max(8));
    for (name, c) in lines {
        let line = format!(
            "{:<name_w$}  {:<w0$}  {:<w1$}  {:>w2$}  {:<w3$}  {}",
            fit(&name, name_w),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

pub fn render(rep: &Report) -> String {
    let mut out = match super::head(rep, "base-head") {
        Ok(h) => h,
        Err(e) => return e,
    };
    for s in sections(rep) {
        for pair in chunks(s.columns.len(), 1) {
            section(&mut out, &s, &pair);
        }
    }
    super::tail(
        rep,
        &mut out,
        "change: how much better the second column is than the first, in percent (+ is better, as the threads write it); 90% CI: kreg's interval of that change;",
    );
    out
}
