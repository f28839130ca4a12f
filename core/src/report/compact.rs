//! The report as kernel mailing lists read them (mmtests' compare-kernels, LKP): one table
//! per workload (and variant, or kernel), metrics as rows, one group of columns per kernel
//! (or variant) with its value and its change against the baseline; under each table the
//! reasons behind every verdict that is not "no change". Plain ASCII unless asked for
//! box-drawing characters; markdown for mail clients that render it.

use comfy_table::{presets, Cell, CellAlignment, Table};

use super::table::{Baseline, MetricTable, Row};
use super::{fmt_value, Report};
use crate::stats::{interval_text, Comparison, Settings, Unit, Verdict};

/// One table: a workload with the rows of one variant (or kernel).
pub(super) struct Block<'a> {
    pub(super) workload: &'a str,
    /// "variant batch", "kernel a"
    pub(super) title: String,
    /// Column labels (kernels or variants), the baseline first when it is one of them.
    pub(super) columns: Vec<String>,
    /// Per metric, the row shown in each column.
    pub(super) lines: Vec<(&'a MetricTable, Vec<Option<&'a Row>>)>,
}

pub(super) fn label(baseline: &Baseline, r: &Row) -> (String, String) {
    match baseline {
        Baseline::Variant(_) => (format!("kernel {}", r.kernel), r.variant.clone()),
        _ => (format!("variant {}", r.variant), r.kernel.clone()),
    }
}

pub(super) fn blocks<'a>(rep: &Report<'a>) -> Vec<Block<'a>> {
    let mut out: Vec<Block<'a>> = Vec::new();
    for t in rep.tables {
        for r in &t.rows {
            let (title, col) = label(rep.baseline, r);
            let at = out.iter().position(|b| b.workload == t.workload && b.title == title);
            let b = match at {
                Some(i) => &mut out[i],
                None => {
                    out.push(Block {
                        workload: &t.workload,
                        title,
                        columns: Vec::new(),
                        lines: Vec::new(),
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            if !b.columns.contains(&col) {
                if rep.baseline.is_base(r) {
                    b.columns.insert(0, col);
                } else {
                    b.columns.push(col);
                }
            }
        }
    }
    for b in out.iter_mut() {
        for t in rep.tables.iter().filter(|t| t.workload == b.workload) {
            let cells: Vec<Option<&Row>> = b
                .columns
                .iter()
                .map(|c| {
                    t.rows
                        .iter()
                        .find(|r| label(rep.baseline, r) == (b.title.clone(), c.clone()))
                })
                .collect();
            if cells.iter().any(|c| c.is_some()) {
                b.lines.push((t, cells));
            }
        }
    }
    out
}

/// "1.234 ±0.5% (10)" for means, "1.234 iqr 3.1% (10)" for rank kinds; boots counted.
pub(super) fn value_cell(t: &MetricTable, r: &Row) -> String {
    let kind = t.kind;
    let spread = if kind.by_ranks() { "iqr " } else { "±" };
    let n = match r.boots() {
        b if b >= 2 => format!("{} in {b} boots", r.summary.n),
        _ => r.summary.n.to_string(),
    };
    format!("{} {spread}{:.1}% ({n})", fmt_value(r.centre(kind)), r.spread_pct(kind))
}

pub(super) fn change_cell(t: &MetricTable, c: &Comparison) -> String {
    if !c.change.is_finite() {
        return "n/a".into();
    }
    let pct = 100.0 * c.change;
    if pct.abs() < 0.005 {
        return "0.00%".into();
    }
    let better = (pct > 0.0) == t.higher_is_better;
    format!("{pct:+.2}% {}", if better { "better" } else { "worse" })
}

pub(super) fn verdict_cell(c: &Comparison) -> String {
    let v = match c.verdict {
        Verdict::Regression | Verdict::Improvement => c.verdict.as_str().to_uppercase(),
        v => v.as_str().to_string(),
    };
    if c.looks > 1 {
        format!("{v} (look {}/{})", c.look + 1, c.looks)
    } else {
        v
    }
}

/// What the verdicts rest on, for the top of every report.
pub(super) fn method_line(tables: &[MetricTable], s: &Settings, plan: &str) -> String {
    format!(
        "verdicts: means and throughputs by Welch's t-test, latencies (percentiles) and counts by an exact permutation test on midranks; \
         a regression or improvement is significant at alpha {} (Benjamini-Hochberg over {} comparisons) with a change of at least {:.1}%, \
         and unconfirmed when each side was measured on boots of its own that are not the unit (one boot per kernel): two boots can differ as much; \
         no change is the {:.0}% interval of the change inside ±{:.1}% (two one-sided tests); anything else is inconclusive, with its reason; {plan}",
        s.alpha,
        super::comparisons(tables),
        100.0 * s.min_effect,
        100.0 * (1.0 - 2.0 * s.equivalence_alpha),
        100.0 * s.min_effect,
    )
}

/// Whether boots were measured: the line every report carries.
pub(super) fn boots_line(tables: &[MetricTable]) -> String {
    let rows = || tables.iter().flat_map(|t| &t.rows);
    let by_boot = tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter_map(|r| r.comparison.as_ref())
        .any(|c| c.unit == Unit::Boot);
    if by_boot {
        "boots: where both sides ran in 2 boots or more, each boot is one observation (its runs' mean, or median); the share of the variance between boots is given per row".into()
    } else if rows().all(|r| r.boots() <= 1) {
        "boots: one boot per kernel, so boot-to-boot variation was not measured: a difference between kernels includes any difference between their boots, and a significant one is an unconfirmed regression or improvement, not a regression (`boots: N` measures it)".into()
    } else {
        "boots: some rows ran in several boots but their baseline did not: runs are the observations".into()
    }
}

pub(super) fn plan_text(rep: &Report) -> String {
    let looks = rep.scenario.looks();
    if looks.is_fixed() {
        "one look at the end of the run".into()
    } else {
        format!(
            "sequential: looks at {} {} per side, alpha spent over the looks (O'Brien-Fleming)",
            looks.list(),
            if rep.scenario.by_boot() { "boots" } else { "runs" }
        )
    }
}

/// The reasons under a table: every compared row that is not "no change", and flags.
pub(super) fn why_lines(b: &Block) -> Vec<String> {
    let mut out = Vec::new();
    for (t, cells) in &b.lines {
        for (col, r) in b.columns.iter().zip(cells) {
            let Some(r) = r else { continue };
            let mut bits = Vec::new();
            if let Some(c) = &r.comparison {
                if c.verdict != Verdict::NoChange {
                    bits.push(format!("{} ({}): {}", c.verdict.as_str(), change_cell(t, c), c.reason));
                }
            }
            if let Some(share) = r.boot_share {
                bits.push(format!("{:.0}% of its variance between boots", 100.0 * share));
            }
            let flags = r.flags();
            if !flags.is_empty() {
                bits.push(flags);
            }
            if !bits.is_empty() {
                out.push(format!("{col} {}: {}", t.metric, bits.join("; ")));
            }
        }
    }
    out
}

/// The interval column's name, with its level: one level for the whole block ("90% CI"), or
/// "CI" with the level in each row's reason when the looks of an adaptive plan differ.
fn ci_header(b: &Block) -> String {
    let mut levels: Vec<String> = b
        .lines
        .iter()
        .flat_map(|(_, rows)| rows.iter().flatten())
        .filter_map(|r| r.comparison.as_ref())
        .filter(|c| c.ci_level.is_finite())
        .map(|c| crate::stats::verdict::level_text(c.ci_level))
        .collect();
    levels.sort();
    levels.dedup();
    match levels.as_slice() {
        [one] => format!("{one}% CI"),
        _ => "CI (level in the reason)".into(),
    }
}

fn headers(b: &Block, baseline: &Baseline) -> Vec<String> {
    let ci = ci_header(b);
    let mut h = vec!["metric".to_string()];
    for (i, c) in b.columns.iter().enumerate() {
        if i == 0 && !matches!(baseline, Baseline::Run(_)) {
            h.push(format!("{c} (base)"));
            continue;
        }
        if let Baseline::Run(id) = baseline {
            h.push(format!("{c} run {id}"));
        }
        h.extend([
            c.clone(),
            format!("{c} change"),
            format!("{c} {ci}"),
            format!("{c} verdict"),
        ]);
    }
    h
}

pub(super) fn metric_label(t: &MetricTable) -> String {
    let dir = if t.higher_is_better { "higher" } else { "lower" };
    if t.unit.is_empty() {
        format!("{} ({}, {dir} better)", t.metric, t.kind)
    } else {
        format!("{} ({}, {}, {dir} better)", t.metric, t.unit, t.kind)
    }
}

/// The cells of one metric line.
fn line_cells(t: &MetricTable, cells: &[Option<&Row>], baseline: &Baseline) -> Vec<String> {
    let mut out = vec![metric_label(t)];
    for (i, r) in cells.iter().enumerate() {
        let base_col = i == 0 && !matches!(baseline, Baseline::Run(_));
        let compared = r.and_then(|r| r.comparison.as_ref());
        if let Baseline::Run(_) = baseline {
            out.push(match compared {
                Some(c) => format!("{} ({})", fmt_value(c.centre[0]), c.n[0]),
                None => "-".into(),
            });
        }
        out.push(r.map(|r| value_cell(t, r)).unwrap_or_else(|| "-".into()));
        if base_col {
            continue;
        }
        match compared {
            Some(c) => out.extend([change_cell(t, c), interval_text(c.ci), verdict_cell(c)]),
            None => out.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
        }
    }
    out
}

/// The text report: plain ASCII for mail, box-drawing on request.
pub(super) fn render_text(rep: &Report) -> String {
    let mut out = format!(
        "run {}: scenario {}, {}\n{}\n{}\n",
        rep.run_id,
        rep.scenario.name,
        rep.baseline.describe(),
        method_line(rep.tables, rep.settings, &plan_text(rep)),
        boots_line(rep.tables)
    );
    for line in rep.warning_lines().into_iter().chain(rep.info_lines()) {
        out.push_str(&line);
        out.push('\n');
    }
    if rep.tables.is_empty() {
        out.push_str("no results stored yet\n");
    }
    for b in blocks(rep) {
        out.push_str(&format!(
            "\n{} ({}): {}\n",
            b.workload,
            b.title,
            command_of(rep, b.workload)
        ));
        let mut table = Table::new();
        table.load_preset(if rep.boxes {
            presets::UTF8_FULL_CONDENSED
        } else {
            presets::ASCII_MARKDOWN
        });
        table.set_header(headers(&b, rep.baseline));
        for (t, cells) in &b.lines {
            let row: Vec<Cell> = line_cells(t, cells, rep.baseline)
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == 0 {
                        Cell::new(c)
                    } else {
                        Cell::new(c).set_alignment(CellAlignment::Right)
                    }
                })
                .collect();
            table.add_row(row);
        }
        out.push_str(&table.to_string());
        out.push('\n');
        for w in why_lines(&b) {
            out.push_str(&format!("  {w}\n"));
        }
    }
    if let Some(sec) = rep.sched_stats {
        out.push_str(&super::sched_stats::render_text(sec, rep.boxes));
    }
    for (heading, lines) in super::failure_sections(&rep.failed) {
        out.push_str(&format!("\n{heading}:\n"));
        for l in lines {
            out.push_str(&format!("  {l}\n"));
        }
    }
    out
}

pub(super) fn command_of(rep: &Report, workload: &str) -> String {
    rep.scenario
        .workload(workload)
        .map(|w| w.kind.command_line())
        .unwrap_or_default()
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown: the same tables, significant changes in bold, the reasons as a list.
pub(super) fn render_markdown(rep: &Report) -> String {
    let mut out = format!(
        "## kreg run {}: {}\n\nCompared with the {}. {}.\n\n{}.\n\n",
        rep.run_id,
        md_escape(&rep.scenario.name),
        rep.baseline.describe(),
        method_line(rep.tables, rep.settings, &plan_text(rep)),
        boots_line(rep.tables)
    );
    for line in rep.warning_lines().into_iter().chain(rep.info_lines()) {
        out.push_str(&format!("- {}\n", md_escape(&line)));
    }
    for b in blocks(rep) {
        out.push_str(&format!(
            "\n### {} ({})\n\n`{}`\n\n",
            md_escape(b.workload),
            md_escape(&b.title),
            command_of(rep, b.workload).replace('`', "'")
        ));
        let h = headers(&b, rep.baseline);
        out.push_str(&format!(
            "| {} |\n",
            h.iter().map(|x| md_escape(x)).collect::<Vec<_>>().join(" | ")
        ));
        out.push_str(&format!("|:--|{}\n", "--:|".repeat(h.len() - 1)));
        for (t, cells) in &b.lines {
            let bold: Vec<bool> = cells
                .iter()
                .map(|r| {
                    r.and_then(|r| r.comparison.as_ref())
                        .is_some_and(|c| c.verdict.is_change())
                })
                .collect();
            let mut cols = line_cells(t, cells, rep.baseline).into_iter().map(|c| md_escape(&c));
            let mut line = vec![cols.next().expect("the metric")];
            let run = matches!(rep.baseline, Baseline::Run(_));
            for (col, strong) in bold.iter().enumerate() {
                let width = if col == 0 && !run {
                    1
                } else if run {
                    5
                } else {
                    4
                };
                for j in 0..width {
                    let c = cols.next().unwrap_or_default();
                    // The change, its interval and the verdict of a significant change.
                    let emph = *strong && width > 1 && j + 3 >= width;
                    line.push(if emph { format!("**{c}**") } else { c });
                }
            }
            out.push_str(&format!("| {} |\n", line.join(" | ")));
        }
        let why = why_lines(&b);
        if !why.is_empty() {
            out.push('\n');
            for w in why {
                out.push_str(&format!("- {}\n", md_escape(&w)));
            }
        }
    }
    if let Some(sec) = rep.sched_stats {
        out.push_str(&super::sched_stats::render_markdown(sec));
    }
    for (heading, lines) in super::failure_sections(&rep.failed) {
        let mut h = heading.to_string();
        h[..1].make_ascii_uppercase();
        out.push_str(&format!("\n### {}\n\n", md_escape(&h)));
        for l in lines {
            out.push_str(&format!("- {}\n", md_escape(&l)));
        }
    }
    out
}
