//! `tip-patch`: the blocks AMD's scheduler developers post, a block per metric and variant,
//! each case (workload) a line, each kernel its value normalised to the baseline's, the
//! percent improvement ("+" is better) and the coefficient of variation; under each line
//! kreg's 90 % interval of the improvement and its verdict:
//!
//! ```text
//! Case:          base[pct imp](CV)     head[pct imp](CV)
//! hackbench-g8   1.00 [  0.00]( 1.58)  0.98 [  2.23]( 5.82)
//!                                      [+1.1,+3.4] IMPR
//! ```

use super::{
    case_lines, chunks, code, fit, gain_interval, interval, layout, push_wrapped, row_gain, sections, Cells, Section,
};
use crate::report::table::{MetricTable, Row};
use crate::report::Report;

const COL_W: usize = 21;
const CASE_W: usize = 14;
const RULE: usize = 66;

/// "0.98 [  2.23]( 5.82)": normalised value, improvement, CV.
fn cell(t: &MetricTable, r: &Row, base: Option<&Row>) -> String {
    let v = r.centre(t.kind);
    let b = base.map_or(f64::NAN, |b| b.centre(t.kind));
    let cv = r.summary.stddev_pct();
    if !(b.is_finite() && b != 0.0) {
        // No baseline to normalise to: the value itself, no improvement.
        return format!("{} [{:>6}]({cv:5.2})", super::num(v), "-");
    }
    let imp = row_gain(t, base, r);
    format!("{:4.2} [{imp:6.2}]({cv:5.2})", v / b)
}

/// Each case's cells in every column: the figures and kreg's interval and verdict.
fn cases<'a>(s: &Section<'a>) -> Vec<(&'a str, Cells)> {
    let t = s.table;
    s.cases
        .iter()
        .map(|(workload, rows)| {
            let cells = rows
                .iter()
                .enumerate()
                .map(|(j, r)| {
                    let c = r.and_then(|r| r.comparison.as_ref()).filter(|_| j > 0);
                    (
                        r.map(|r| cell(t, r, rows[0])).unwrap_or_else(|| "-".into()),
                        c.map(|c| format!("{} {}", interval(gain_interval(t, c)), code(c.verdict)))
                            .unwrap_or_default(),
                    )
                })
                .collect();
            (*workload, cells)
        })
        .collect()
}

fn block(out: &mut String, s: &Section, cases: &[(&str, Cells)], cols: &[usize], widths: (usize, usize)) {
    let (case_w, col_w) = widths;
    let t = s.table;
    out.push('\n');
    out.push_str(&"=".repeat(RULE));
    out.push('\n');
    let unit = if t.unit.is_empty() {
        "no unit".to_string()
    } else {
        t.unit.clone()
    };
    let stat = if t.kind.by_ranks() { "Median" } else { "AMean" };
    let name_w = col_w - 13;
    let mut lines = vec![
        ("Test", format!("{}, {}", t.metric, s.title)),
        (
            "Units",
            format!("Normalized {unit} ({} to the first column's)", super::statistic(t.kind)),
        ),
        (
            "Interpretation",
            if t.higher_is_better {
                "Higher is better"
            } else {
                "Lower is better"
            }
            .into(),
        ),
        ("Statistic", stat.to_string()),
    ];
    if cols.iter().any(|i| s.columns[*i].chars().count() > name_w) {
        let names: Vec<&str> = cols.iter().map(|i| s.columns[*i].as_str()).collect();
        lines.push(("Columns", names.join(", ")));
    }
    for (k, v) in lines {
        push_wrapped(out, &v, &format!("{k:<14}: "), &" ".repeat(16));
    }
    out.push_str(&"=".repeat(RULE));
    out.push('\n');
    let mut header = format!("{:<case_w$}", "Case:");
    for i in cols {
        let name = fit(&s.columns[*i], name_w);
        header.push_str(&format!(" {:>col_w$}", format!("{name}[pct imp](CV)")));
    }
    out.push_str(header.trim_end());
    out.push('\n');
    for (workload, cells) in cases {
        let lead = (format!("{:<case_w$}", fit(workload, case_w - 1)), " ".repeat(case_w));
        case_lines(out, lead, cells, cols, col_w);
    }
}

pub fn render(rep: &Report) -> String {
    let mut out = match super::head(rep, "tip-patch") {
        Ok(h) => h,
        Err(e) => return e,
    };
    for s in sections(rep) {
        let cases = cases(&s);
        let (col_w, case_w, per) = layout(cases.iter().map(|(w, c)| (*w, c)), 0, (COL_W, CASE_W));
        for cols in chunks(s.columns.len(), per) {
            block(&mut out, &s, &cases, &cols, (case_w, col_w));
        }
    }
    super::tail(
        rep,
        &mut out,
        "Each value is normalised to the first column's; pct imp: the improvement over it in percent (+ is better); CV: the coefficient of variation of the runs in percent; under each case kreg's 90% interval of the improvement and its verdict;",
    );
    out
}
