//! A `command` workload: each metric's regex is searched in stdout, then stderr.

use super::{perr, Metric, ParseError};
use crate::scenario::MetricPattern;

pub fn command(patterns: &[MetricPattern], stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError> {
    let mut out = Vec::new();
    for p in patterns {
        let re = regex::Regex::new(&p.regex).map_err(|e| perr("command", format!("metric {}: {e}", p.name)))?;
        let caps = re.captures(stdout).or_else(|| re.captures(stderr)).ok_or_else(|| {
            perr(
                "command",
                format!("metric {}: /{}/ matched nothing in the output", p.name, p.regex),
            )
        })?;
        let text = caps.get(1).map(|m| m.as_str()).unwrap_or("");
        let value: f64 = text.trim().parse().map_err(|_| {
            perr(
                "command",
                format!("metric {}: captured {text:?}, which is not a number", p.name),
            )
        })?;
        if !value.is_finite() {
            return Err(perr(
                "command",
                format!("metric {}: captured {text:?}, which is not finite", p.name),
            ));
        }
        out.push(Metric {
            name: p.name.clone(),
            value,
            unit: p.unit.clone(),
            higher_is_better: p.higher_is_better,
        });
    }
    Ok(out)
}
