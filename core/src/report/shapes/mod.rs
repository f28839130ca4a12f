//! The report in the shapes kernel lists already read: the table of kernels and runtime
//! parameters with a "baseline" row (`kernel-table`), `base±sd%  head±sd%  change` lines
//! (`base-head`), mmtests' compare-kernels (`compare-kernels`) and the
//! `tip[pct imp](CV)  patch[pct imp](CV)` blocks (`tip-patch`). Each is plain text of at most
//! 80 columns and carries kreg's verdict and the 90 % interval beside the figures, so that a
//! table pasted into a thread says what the numbers support.

mod base_head;
mod compare_kernels;
mod kernel_table;
#[cfg(test)]
mod tests;
mod tip_patch;

use super::mail::{wrap, WIDTH};
use super::table::{Baseline, MetricTable, Row};
use super::Report;
use crate::stats::{Comparison, MetricKind, Verdict};

pub(super) use base_head::render as base_head;
pub(super) use compare_kernels::render as compare_kernels;
pub(super) use kernel_table::render as kernel_table;
pub(super) use tip_patch::render as tip_patch;

/// A metric under one variant (or on one kernel): one line per workload ("case"), one column
/// per kernel (or variant), the baseline's first.
pub(super) struct Section<'a> {
    /// "variant default", "kernel a"
    pub title: String,
    /// The metric's first table (its name, unit, kind and direction are the section's).
    pub table: &'a MetricTable,
    pub columns: Vec<String>,
    /// Per workload, the row in each column.
    pub cases: Vec<(&'a str, Vec<Option<&'a Row>>)>,
}

/// Sections in the order the report's tables come: by metric (name, unit, kind and
/// direction), then by variant (or kernel).
pub(super) fn sections<'a>(rep: &Report<'a>) -> Vec<Section<'a>> {
    let same = |a: &MetricTable, b: &MetricTable| {
        a.metric == b.metric && a.unit == b.unit && a.kind == b.kind && a.higher_is_better == b.higher_is_better
    };
    let mut out: Vec<Section<'a>> = Vec::new();
    for t in rep.tables {
        for r in &t.rows {
            let (title, col) = super::compact::label(rep.baseline, r);
            let at = out.iter().position(|s| s.title == title && same(s.table, t));
            let s = match at {
                Some(i) => &mut out[i],
                None => {
                    out.push(Section {
                        title,
                        table: t,
                        columns: Vec::new(),
                        cases: Vec::new(),
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            if !s.columns.contains(&col) {
                if rep.baseline.is_base(r) {
                    s.columns.insert(0, col);
                } else {
                    s.columns.push(col);
                }
            }
        }
    }
    // The baseline's column comes first even when it has no row (its jobs failed): the
    // others are then shown without a change, never against another column.
    let base = match rep.baseline {
        Baseline::Kernel(k) => Some(k),
        Baseline::Variant(v) => Some(v),
        Baseline::Run(_) => None,
    };
    for s in out.iter_mut() {
        if let Some(b) = base.filter(|b| s.columns.first() != Some(*b)) {
            s.columns.retain(|c| c != b);
            s.columns.insert(0, b.clone());
        }
        for t in rep.tables.iter().filter(|t| same(s.table, t)) {
            let cells: Vec<Option<&Row>> = s
                .columns
                .iter()
                .map(|c| {
                    t.rows
                        .iter()
                        .find(|r| super::compact::label(rep.baseline, r) == (s.title.clone(), c.clone()))
                })
                .collect();
            if cells.iter().any(|c| c.is_some()) {
                s.cases.push((&t.workload, cells));
            }
        }
    }
    out
}

/// The columns split into groups that fit: the baseline's first in each, then up to `per`
/// others.
pub(super) fn chunks(columns: usize, per: usize) -> Vec<Vec<usize>> {
    let per = per.max(1);
    if columns <= 1 {
        return vec![(0..columns).collect()];
    }
    (1..columns)
        .collect::<Vec<_>>()
        .chunks(per)
        .map(|c| std::iter::once(0).chain(c.iter().copied()).collect())
        .collect()
}

/// A case's figures in each column and kreg's interval and verdict under them ("" for the
/// baseline's column).
pub(super) type Cells = Vec<(String, String)>;

/// Widths for case lines: each column as wide as its widest cell (`min_col` at least); the
/// workload's column its longest name when the baseline and one other still fit beside it
/// (`min_case` at least); and how many columns besides the baseline's fit in a line that
/// starts with `lead` columns.
pub(super) fn layout<'a>(
    cases: impl Iterator<Item = (&'a str, &'a Cells)> + Clone,
    lead: usize,
    (min_col, min_case): (usize, usize),
) -> (usize, usize, usize) {
    let col_w = cases
        .clone()
        .flat_map(|(_, c)| c.iter().map(|(v, k)| v.chars().count().max(k.chars().count())))
        .fold(min_col, usize::max);
    let longest = cases.map(|(w, _)| w.chars().count() + 1).max().unwrap_or(0);
    let room = WIDTH.saturating_sub(lead);
    let case_w = longest.clamp(min_case, room.saturating_sub(2 * (col_w + 1)).max(min_case));
    let per = (room.saturating_sub(case_w) / (col_w + 1)).saturating_sub(1).max(1);
    (col_w, case_w, per)
}

/// A case's line (`line` holds its start) and, when a column has an interval, kreg's line
/// under it (`kreg` its start), the columns `cols` right-aligned in `col_w`.
pub(super) fn case_lines(
    out: &mut String,
    (mut line, mut kreg): (String, String),
    cells: &Cells,
    cols: &[usize],
    col_w: usize,
) {
    for i in cols {
        let (v, k) = &cells[*i];
        line.push_str(&format!(" {v:>col_w$}"));
        kreg.push_str(&format!(" {k:>col_w$}"));
    }
    out.push_str(line.trim_end());
    out.push('\n');
    if cols.iter().any(|i| !cells[*i].1.is_empty()) {
        out.push_str(kreg.trim_end());
        out.push('\n');
    }
}

/// The short form of a verdict the shapes print beside a change (the legend spells them).
pub(super) fn code(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "REGR",
        Verdict::Improvement => "IMPR",
        Verdict::UnconfirmedRegression => "regr?",
        Verdict::UnconfirmedImprovement => "impr?",
        Verdict::NoChange => "same",
        Verdict::Inconclusive => "incon",
    }
}

/// How much better `v` is than `base` in percent, as the threads write it: positive is
/// better whichever way the metric goes ((base − v)/base for a time).
pub(super) fn gain(t: &MetricTable, base: f64, v: f64) -> f64 {
    if base == 0.0 {
        return f64::NAN;
    }
    let change = (v - base) / base.abs();
    100.0 * if t.higher_is_better { change } else { -change } + 0.0
}

/// The gain of `row` over `base` as the threads compute it, from the figures the shapes
/// print (the mean of every run, or the median).
pub(super) fn row_gain(t: &MetricTable, base: Option<&Row>, row: &Row) -> f64 {
    base.map_or(f64::NAN, |b| gain(t, b.centre(t.kind), row.centre(t.kind)))
}

/// The interval of the change turned into one of the gain, in percent ("+" is better).
pub(super) fn gain_interval(t: &MetricTable, c: &Comparison) -> Option<(f64, f64)> {
    let (lo, hi) = c.ci?;
    Some(if t.higher_is_better {
        (100.0 * lo, 100.0 * hi)
    } else {
        (-100.0 * hi, -100.0 * lo)
    })
}

/// "[-5.1,+5.7]" (percent), or "[unbounded]".
pub(super) fn interval(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((l, h)) => format!("[{},{}]", pct1(l), pct1(h)),
        None => "[unbounded]".into(),
    }
}

/// A percentage with its sign and one decimal (none from 100 up); past ±999 only its sign
/// and size.
pub(super) fn pct1(x: f64) -> String {
    if !x.is_finite() {
        "n/a".into()
    } else if x.abs() >= 1000.0 {
        if x > 0.0 { ">+999" } else { "<-999" }.into()
    } else if x.abs() >= 99.95 {
        format!("{x:+.0}")
    } else {
        format!("{x:+.1}")
    }
}

/// A figure as the threads print them: thousands grouped ("83,567") from 1,000 up, two
/// decimals from 1 up, three significant digits below.
pub(super) fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "n/a".into()
    } else if a >= 1000.0 {
        let digits = format!("{:.0}", a);
        let mut grouped = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(ch);
        }
        if v < 0.0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.2}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{v:.decimals$}")
    }
}

/// The statistic a row's figure is: the mean, or the median for percentiles and counts.
pub(super) fn statistic(kind: MetricKind) -> &'static str {
    if kind.by_ranks() {
        "median"
    } else {
        "mean"
    }
}

/// "lower is better" / "higher is better"
pub(super) fn direction(t: &MetricTable) -> &'static str {
    if t.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// `s` cut to `w` columns, its end marked by "~" when cut.
pub(super) fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(w.saturating_sub(1)).collect();
        out.push('~');
        out
    }
}

/// Text wrapped into lines of at most [`WIDTH`] columns.
pub(super) fn push_wrapped(out: &mut String, text: &str, first: &str, rest: &str) {
    for l in wrap(text, first, rest, WIDTH) {
        out.push_str(l.trim_end());
        out.push('\n');
    }
}

/// What every shape starts with: the run, its baseline, and the warnings a reader must see
/// before any number. `None` when the shape cannot show this report (two runs compared).
pub(super) fn head(rep: &Report, shape: &str) -> Result<String, String> {
    let mut out = String::new();
    if let Baseline::Run(other) = rep.baseline {
        push_wrapped(
            &mut out,
            &format!(
                "kreg run {}: the {shape} shape compares kernels (or variants) within one run; against run {other} use --format text, mail or markdown",
                rep.run_id
            ),
            "",
            "  ",
        );
        return Err(out);
    }
    out.push_str(&super::mail::head(rep));
    Ok(out)
}

/// What every shape ends with: failed jobs, then what kreg's columns mean.
pub(super) fn tail(rep: &Report, out: &mut String, what: &str) {
    for (heading, lines) in super::failure_sections(&rep.failed) {
        out.push_str(&format!("\n{heading}:\n"));
        for l in lines {
            push_wrapped(out, &l, "  - ", "    ");
        }
    }
    out.push('\n');
    let s = rep.settings;
    push_wrapped(
        out,
        &format!(
            "{what} kreg's interval and verdict are those of the look that decided the row, which under an adaptive plan may have had fewer runs than the figures (`kreg report` gives each look); its verdicts: REGR/IMPR a regression/improvement (significant at alpha {} after Benjamini-Hochberg over the report's rows, and at least {:.1}%); regr?/impr? the same but unconfirmed: each side ran on boots of its own that are not the unit of the analysis (one boot per kernel), and two boots can differ as much; same: no change (the 90% interval inside ±{:.1}%); incon: inconclusive (`kreg report {}` says why).",
            s.alpha,
            100.0 * s.min_effect,
            100.0 * s.min_effect,
            rep.run_id
        ),
        "",
        "",
    );
}
