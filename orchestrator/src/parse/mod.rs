//! Turns workload output into named metrics, each with a unit and a direction. Malformed
//! or truncated output is an error that names the tool and the line, never a zero.
//! One module per tool; [`parse`] picks by kind.

mod command;
mod hackbench;
mod hammerdb;
mod netperf;
mod perfbench;
mod schbench;
mod sysbench;

#[cfg(test)]
mod tests;

pub use command::command;
pub use hackbench::hackbench;
pub use hammerdb::hammerdb;
pub use netperf::{netperf, NETPERF_SELECTORS};
pub use perfbench::perf_bench;
pub use schbench::{schbench, schbench_json};
pub use sysbench::sysbench;

#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
}

impl Metric {
    pub fn new(name: impl Into<String>, value: f64, unit: &str, higher_is_better: bool) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
            higher_is_better,
        }
    }

    pub fn direction(&self) -> &'static str {
        if self.higher_is_better {
            "higher"
        } else {
            "lower"
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{tool}: {message}")]
pub struct ParseError {
    pub tool: String,
    pub message: String,
}

pub(crate) fn perr(tool: &str, message: impl Into<String>) -> ParseError {
    ParseError {
        tool: tool.into(),
        message: message.into(),
    }
}

/// The tools whose output `kreg parse` reads.
pub const KINDS: &[&str] = &[
    "hackbench",
    "schbench",
    "schbench-json",
    "sysbench",
    "netperf",
    "hammerdb",
    "perf-bench",
];

/// Parses `text` as the output of `kind` (one of [`KINDS`]).
pub fn parse(kind: &str, text: &str) -> Result<Vec<Metric>, ParseError> {
    match kind {
        "hackbench" => hackbench(text),
        "schbench" => schbench(text),
        "schbench-json" => schbench_json(text),
        "sysbench" => sysbench(text),
        "netperf" => netperf(text),
        "hammerdb" => hammerdb(text),
        "perf-bench" => perf_bench(text),
        other => Err(perr(
            other,
            format!("unknown kind; expected one of: {}", KINDS.join(", ")),
        )),
    }
}

/// A finite, non-negative number, or an error naming the tool and the 1-based line.
pub(crate) fn number(tool: &str, line: usize, what: &str, text: &str) -> Result<f64, ParseError> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| perr(tool, format!("line {line}: {what} is {:?}, not a number", text.trim())))?;
    if !v.is_finite() || v < 0.0 {
        return Err(perr(tool, format!("line {line}: {what} is {v}, which is impossible")));
    }
    Ok(v)
}

/// The schedstat `version N` line of /proc/schedstat.
pub fn schedstat_version(raw: &str) -> Option<u32> {
    raw.lines().next()?.strip_prefix("version ")?.trim().parse().ok()
}
