//! `compare-kernels`: mmtests' comparison, one column per kernel with the statistic and its
//! gain over the first column in parentheses ("+" is better); a change kreg calls is marked
//! `*x%*` (`?x%?` when unconfirmed). Under each line kreg's 90 % interval of the gain and its
//! verdict:
//!
//! ```text
//!                                     base                 head
//! Amean     hackbench-g8        8.06 (  0.00%)       7.88 *  2.23%*
//! kreg      90% CI                                [+1.1,+3.4] IMPR
//! ```
//!
//! Means are `Amean`; throughputs `Hmean` (the harmonic mean of the runs, as mmtests gives
//! rates); percentiles and counts `Median`, the figure kreg's rank test is about.

use super::{chunks, code, gain, gain_interval, interval, push_wrapped, sections, Section};
use crate::report::mail::WIDTH;
use crate::report::table::{MetricTable, Row};
use crate::report::Report;
use crate::stats::{MetricKind, Verdict};

const STAT_W: usize = 10;
const COL_W: usize = 19;
/// The fewest columns a workload's name gets.
const CASE_W: usize = 10;

/// The statistic's name and its value for a row.
fn statistic(t: &MetricTable, r: &Row) -> (&'static str, f64) {
    match t.kind {
        MetricKind::Throughput if r.side.values.iter().all(|v| *v > 0.0) && !r.side.values.is_empty() => {
            let n = r.side.values.len() as f64;
            ("Hmean", n / r.side.values.iter().map(|v| 1.0 / v).sum::<f64>())
        }
        k if k.by_ranks() => ("Median", r.summary.median),
        _ => ("Amean", r.summary.mean),
    }
}

/// "8.06 (  0.00%)", "7.88 *  2.23%*" in [`COL_W`] columns.
fn cell(value: f64, gain: f64, mark: char) -> String {
    let v = super::num(value);
    let g = if gain.is_finite() {
        format!("{gain:6.2}%")
    } else {
        "   n/a".into()
    };
    let (open, close) = if mark == ' ' { ('(', ')') } else { (mark, mark) };
    let v_w = COL_W.saturating_sub(g.len() + 3);
    format!("{v:>v_w$} {open}{g}{close}")
}

fn mark(v: Option<Verdict>) -> char {
    match v {
        Some(Verdict::Regression | Verdict::Improvement) => '*',
        Some(Verdict::UnconfirmedRegression | Verdict::UnconfirmedImprovement) => '?',
        _ => ' ',
    }
}

/// A case's cells in every column: the statistic with its gain, and kreg's interval and
/// verdict ("" for the baseline).
struct Case<'a> {
    workload: &'a str,
    statistic: &'static str,
    cells: super::Cells,
}

fn cases<'a>(s: &Section<'a>) -> Vec<Case<'a>> {
    let t = s.table;
    let mut out = Vec::new();
    for (workload, rows) in &s.cases {
        let base_stat = rows[0].map(|r| statistic(t, r).1);
        let name = rows
            .iter()
            .flatten()
            .next()
            .map(|r| statistic(t, r).0)
            .unwrap_or("Amean");
        let cells = rows
            .iter()
            .enumerate()
            .map(|(j, r)| {
                let Some(r) = r else {
                    return ("-".to_string(), String::new());
                };
                let (_, v) = statistic(t, r);
                let g = if j == 0 {
                    0.0
                } else {
                    base_stat.map_or(f64::NAN, |b| gain(t, b, v))
                };
                let c = r.comparison.as_ref().filter(|_| j > 0);
                let k = c
                    .map(|c| format!("{} {}", interval(gain_interval(t, c)), code(c.verdict)))
                    .unwrap_or_default();
                (cell(v, g, mark(c.map(|c| c.verdict))), k)
            })
            .collect();
        out.push(Case {
            workload,
            statistic: name,
            cells,
        });
    }
    out
}

fn section(out: &mut String, s: &Section, cases: &[Case], cols: &[usize], col_w: usize) {
    let t = s.table;
    let unit = if t.unit.is_empty() {
        String::new()
    } else {
        format!(", {}", t.unit)
    };
    out.push('\n');
    push_wrapped(
        out,
        &format!("{}{unit} ({}), {}", t.metric, super::direction(t), s.title),
        "",
        "  ",
    );
    let case_w = WIDTH.saturating_sub(STAT_W + cols.len() * (col_w + 1));
    let mut header = " ".repeat(STAT_W + case_w);
    for i in cols {
        header.push_str(&format!(" {:>col_w$}", super::fit(&s.columns[*i], col_w)));
    }
    out.push_str(header.trim_end());
    out.push('\n');
    for c in cases {
        let lead = (
            format!(
                "{:<STAT_W$}{:<case_w$}",
                c.statistic,
                super::fit(c.workload, case_w.saturating_sub(1))
            ),
            format!("{:<STAT_W$}{:<case_w$}", "kreg", "90% CI"),
        );
        super::case_lines(out, lead, &c.cells, cols, col_w);
    }
}

pub fn render(rep: &Report) -> String {
    let mut out = match super::head(rep, "compare-kernels") {
        Ok(h) => h,
        Err(e) => return e,
    };
    for s in sections(rep) {
        let cases = cases(&s);
        // Each column as wide as its widest cell (19 at least); beside the statistic and a
        // workload's name, as many as fit in 80 columns: the baseline and two others at 19.
        let (col_w, _, per) = super::layout(cases.iter().map(|c| (c.workload, &c.cells)), STAT_W, (COL_W, CASE_W));
        for cols in chunks(s.columns.len(), per) {
            section(&mut out, &s, &cases, &cols, col_w);
        }
    }
    super::tail(
        rep,
        &mut out,
        "(x.xx%): the gain over the first column, + is better (mmtests' sign); *x%*: a change kreg calls, ?x%?: one it calls unconfirmed; kreg: its 90% interval of the gain, in percent, and its verdict;",
    );
    out
}
