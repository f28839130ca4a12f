//! The report as a mail carries it: plain text, no line longer than 80 columns, so that it
//! pastes into a reply on a kernel list unwrapped and unmangled. Per workload and variant (or
//! kernel) its command, then per metric one line per kernel: the value with its spread and
//! count, and for the compared ones the change, its interval with the interval's level, and
//! the verdict; the reasons after, wrapped.

use super::compact::{
    blocks, boots_line, change_cell, command_of, method_line, metric_label, plan_text, value_cell, verdict_cell,
    why_lines,
};
use super::Report;
use crate::stats::{interval_text, verdict::level_text};

/// The widest line the text has.
pub const WIDTH: usize = 80;

/// `text` broken at spaces into lines of at most `width` columns, the first starting with
/// `first` and the others with `rest`; a word longer than a line is cut where it must be.
pub fn wrap(text: &str, first: &str, rest: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let used = line.chars().count();
            let len = word.chars().count();
            let gap = usize::from(!empty);
            if used + gap + len <= width {
                if !empty {
                    line.push(' ');
                }
                line.push_str(&word);
                empty = false;
                break;
            }
            if empty {
                // Alone on its line and still too long: cut it.
                let room = width.saturating_sub(used).max(1);
                let head: String = word.chars().take(room).collect();
                line.push_str(&head);
                word = word.chars().skip(room).collect();
            }
            out.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
            if word.is_empty() {
                break;
            }
        }
    }
    if !empty || out.is_empty() {
        out.push(line);
    }
    out
}

fn push(out: &mut String, text: &str, first: &str, rest: &str) {
    for l in wrap(text, first, rest, WIDTH) {
        out.push_str(l.trim_end());
        out.push('\n');
    }
}

/// What a plain-text report starts with: the run, its baseline, and the warnings a reader
/// must see before any number.
pub(super) fn head(rep: &Report) -> String {
    let mut out = String::new();
    push(
        &mut out,
        &format!(
            "kreg run {}: scenario {}, {}",
            rep.run_id,
            rep.scenario.name,
            rep.baseline.describe()
        ),
        "",
        "  ",
    );
    for line in rep.warning_lines() {
        push(&mut out, &line, "", "  ");
    }
    if rep.tables.is_empty() {
        out.push_str("no results stored yet\n");
    }
    out
}

/// The whole report, every line at most [`WIDTH`] columns.
pub(super) fn render_mail(rep: &Report) -> String {
    let mut out = head(rep);
    for b in blocks(rep) {
        out.push('\n');
        push(
            &mut out,
            &format!("{} ({}): {}", b.workload, b.title, command_of(rep, b.workload)),
            "",
            "    ",
        );
        let name_w = b.columns.iter().map(|c| c.chars().count()).max().unwrap_or(0).min(20) + 1;
        for (t, cells) in &b.lines {
            push(&mut out, &metric_label(t), "  ", "    ");
            for (i, (col, r)) in b.columns.iter().zip(cells).enumerate() {
                let Some(r) = r else { continue };
                let base = i == 0 && !matches!(rep.baseline, super::Baseline::Run(_));
                let name = if base { format!("{col} (base)") } else { col.clone() };
                let lead = format!("    {name:<w$} ", w = name_w + 7);
                let mut text = value_cell(t, r);
                if let Some(c) = &r.comparison {
                    text.push_str(&format!(
                        "  {}  {}% CI {}  {}",
                        change_cell(t, c),
                        level_text(c.ci_level),
                        interval_text(c.ci),
                        verdict_cell(c)
                    ));
                }
                push(&mut out, &text, &lead, &" ".repeat(lead.chars().count()));
            }
        }
        let why = why_lines(&b);
        if !why.is_empty() {
            out.push('\n');
        }
        for w in why {
            push(&mut out, &w, "  - ", "    ");
        }
    }
    for (heading, lines) in super::failure_sections(&rep.failed) {
        out.push_str(&format!("\n{heading}:\n"));
        for l in lines {
            push(&mut out, &l, "  - ", "    ");
        }
    }
    out.push('\n');
    push(
        &mut out,
        &method_line(rep.tables, rep.settings, &plan_text(rep)),
        "",
        "",
    );
    push(&mut out, &boots_line(rep.tables), "", "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_word_and_every_line_within_the_width() {
        let text = "a reason with a very-long-path/that/does/not/fit/anywhere/at/all/in/one/line/of/eighty/columns/whatever/happens and more words after it";
        let lines = wrap(text, "  - ", "    ", 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:#?}");
        let back: String = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        assert_eq!(
            back.replace("- ", "").split_whitespace().collect::<String>(),
            text.split_whitespace().collect::<String>()
        );
        assert!(lines[0].starts_with("  - a reason") && lines[1].starts_with("    "));
    }
}
