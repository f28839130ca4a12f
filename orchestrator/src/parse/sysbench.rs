//! sysbench (1.0) OLTP and other Lua tests: transactions and queries per second, latency
//! min/avg/max and the requested percentile (`--percentile`, 95 by default), errors.

use super::{number, perr, unique, Metric, ParseError};

const TOOL: &str = "sysbench";

/// "822    (273.44 per sec.)" → 273.44
fn per_sec(line_no: usize, what: &str, rest: &str) -> Result<f64, ParseError> {
    let inner = rest
        .split_once('(')
        .and_then(|(_, r)| r.split_once("per sec."))
        .map(|(n, _)| n)
        .ok_or_else(|| perr(TOOL, format!("line {line_no}: {what} has no `(N per sec.)`")))?;
    number(TOOL, line_no, what, inner)
}

pub fn sysbench(text: &str) -> Result<Vec<Metric>, ParseError> {
    if let Some((n, l)) = text.lines().enumerate().find(|(_, l)| l.starts_with("FATAL:")) {
        return Err(perr(TOOL, format!("line {}: the run failed: {}", n + 1, l.trim())));
    }
    let mut out = Vec::new();
    let mut in_latency = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let no = n + 1;
        if line.starts_with("Latency (ms):") {
            in_latency = true;
            continue;
        }
        if line.is_empty() {
            in_latency = false;
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        match (in_latency, key) {
            (false, "transactions") => out.push(Metric::new("tps", per_sec(no, "transactions", rest)?, "tx/s", true)),
            (false, "queries") => out.push(Metric::new("qps", per_sec(no, "queries", rest)?, "queries/s", true)),
            (false, "ignored errors") => out.push(Metric::new(
                "errors_per_s",
                per_sec(no, "ignored errors", rest)?,
                "errors/s",
                false,
            )),
            (false, "events/s (eps)") => out.push(Metric::new(
                "eps",
                number(TOOL, no, "events/s", rest)?,
                "events/s",
                true,
            )),
            (true, "min" | "avg" | "max") => out.push(Metric::new(
                format!("lat_{key}_ms"),
                number(TOOL, no, key, rest)?,
                "ms",
                false,
            )),
            (true, k) if k.ends_with("th percentile") => {
                let p = super::pct_name(k.trim_end_matches("th percentile"));
                out.push(Metric::new(
                    format!("lat_{p}_ms"),
                    number(TOOL, no, k, rest)?,
                    "ms",
                    false,
                ))
            }
            _ => {}
        }
    }
    let has_rate = out.iter().any(|m| m.name == "tps" || m.name == "eps");
    let has_latency = out.iter().any(|m| m.name == "lat_avg_ms");
    if !has_rate || !has_latency {
        return Err(perr(
            TOOL,
            "no throughput or no `Latency (ms):` section in the output (truncated, or the run failed)",
        ));
    }
    unique(TOOL, out)
}
