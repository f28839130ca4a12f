//! rt-tests hackbench: the `Time: SECONDS` line.

use super::{number, perr, Metric, ParseError};

pub fn hackbench(stdout: &str) -> Result<Vec<Metric>, ParseError> {
    let mut found = None;
    for (n, line) in stdout.lines().enumerate() {
        if let Some(rest) = line.trim().strip_prefix("Time:") {
            found = Some(number("hackbench", n + 1, "`Time:`", rest)?);
        }
    }
    let time = found.ok_or_else(|| {
        perr(
            "hackbench",
            "no `Time:` line in the output (truncated, or the run failed)",
        )
    })?;
    Ok(vec![Metric::new("time", time, "s", false)])
}
