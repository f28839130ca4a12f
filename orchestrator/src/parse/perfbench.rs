//! `perf bench sched messaging` and `perf bench sched pipe` (default output format).

use super::{number, perr, unique, Metric, ParseError};

const TOOL: &str = "perf-bench";

pub fn perf_bench(text: &str) -> Result<Vec<Metric>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("Total time:") {
            let v = rest
                .trim()
                .strip_suffix("[sec]")
                .ok_or_else(|| perr(TOOL, format!("line {}: `Total time:` without `[sec]`", n + 1)))?;
            out.push(Metric::new(
                "total_time",
                number(TOOL, n + 1, "Total time", v)?,
                "s",
                false,
            ));
        } else if let Some(v) = l.strip_suffix("usecs/op") {
            out.push(Metric::new(
                "usecs_per_op",
                number(TOOL, n + 1, "usecs/op", v)?,
                "us",
                false,
            ));
        } else if let Some(v) = l.strip_suffix("ops/sec") {
            out.push(Metric::new(
                "ops_per_s",
                number(TOOL, n + 1, "ops/sec", v)?,
                "ops/s",
                true,
            ));
        }
    }
    if !out.iter().any(|m| m.name == "total_time") {
        return Err(perr(TOOL, "no `Total time:` line (truncated, or the benchmark failed)"));
    }
    unique(TOOL, out)
}
