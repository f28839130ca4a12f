//! rt-tests hackbench: the `Time: SECONDS` line, once per run.

use super::{number, perr, Metric, ParseError};

pub fn hackbench(stdout: &str) -> Result<Vec<Metric>, ParseError> {
    let mut found = Vec::new();
    for (n, line) in stdout.lines().enumerate() {
        if let Some(rest) = line.trim().strip_prefix("Time:") {
            found.push((n + 1, number("hackbench", n + 1, "`Time:`", rest)?));
        }
    }
    if found.len() > 1 {
        let lines: Vec<String> = found.iter().map(|(n, _)| n.to_string()).collect();
        return Err(perr(
            "hackbench",
            format!(
                "{} `Time:` lines (lines {}): the output holds {} runs; give one run per file",
                found.len(),
                lines.join(", "),
                found.len()
            ),
        ));
    }
    let time = found.pop().map(|(_, t)| t).ok_or_else(|| {
        perr(
            "hackbench",
            "no `Time:` line in the output (truncated, or the run failed)",
        )
    })?;
    Ok(vec![Metric::new("time", time, "s", false)])
}
