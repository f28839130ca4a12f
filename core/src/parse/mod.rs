//! What every parser of workload output shares: a metric with its unit and direction, the
//! error that names the tool and the line, and the rules for reading a figure. Malformed or
//! truncated output is an error, never a zero. The parsers live with their kinds in
//! `workload`.

#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
    /// What kind of figure it is: the test that compares it follows from this.
    pub kind: MetricKind,
}

pub use crate::stats::MetricKind;

impl Metric {
    pub fn new(name: impl Into<String>, value: f64, unit: &str, higher_is_better: bool, kind: MetricKind) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
            higher_is_better,
            kind,
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

/// The largest figure any of these tools can report (seconds, microseconds, requests per
/// second, transactions per minute): anything above is a garbled line, not a measurement.
pub const MAX_FIGURE: f64 = 1e15;

/// Whether `v` can be a measured figure: finite, not negative (nor `-0`), not absurd.
pub(crate) fn plausible(v: f64) -> bool {
    v.is_finite() && v >= 0.0 && !v.is_sign_negative() && v <= MAX_FIGURE
}

/// A finite, non-negative number written plainly (digits, a point, an exponent; no sign,
/// no `NaN` or `inf`), or an error naming the tool and the 1-based line.
pub(crate) fn number(tool: &str, line: usize, what: &str, text: &str) -> Result<f64, ParseError> {
    let t = text.trim();
    let plain = t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    let v: f64 = t
        .parse()
        .map_err(|_| perr(tool, format!("line {line}: {what} is {:?}, not a number", clip(t))))?;
    if !plain || !plausible(v) {
        return Err(perr(
            tool,
            format!("line {line}: {what} is {}, which is impossible", clip(t)),
        ));
    }
    Ok(v)
}

/// Text quoted in an error, cut to 80 characters: a garbled 10 MB line is not echoed whole.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(80) {
        None => text.to_string(),
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
    }
}

/// A percentile label as the tools print it ("99.9000", "50.0", "50") to a metric suffix
/// ("p99.9", "p50", "p50"): zeros are trimmed only after a decimal point.
pub(crate) fn pct_name(label: &str) -> String {
    let label = label.trim();
    let trimmed = if label.contains('.') {
        label.trim_end_matches('0').trim_end_matches('.')
    } else {
        label
    };
    format!("p{trimmed}")
}

/// A percentile's label as a tool printed it (`99`, `99.9000`), checked before it names a
/// metric: digits with at most one decimal point, at most 12 characters, above 0 and at
/// most 100. `what` says where it was (`line 7`, a JSON key).
pub(crate) fn pct_label(tool: &str, what: &str, label: &str) -> Result<String, ParseError> {
    let t = label.trim();
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let shape = t.len() <= 12
        && match t.split_once('.') {
            Some((whole, frac)) => digits(whole) && digits(frac),
            None => digits(t),
        };
    let value: f64 = if shape { t.parse().unwrap_or(f64::NAN) } else { f64::NAN };
    if !(value > 0.0 && value <= 100.0) {
        return Err(perr(
            tool,
            format!("{what}: {:?} is no percentile (a number above 0, at most 100)", clip(t)),
        ));
    }
    Ok(pct_name(t))
}

/// The one rule for every parser: a metric is reported once. The same name twice means
/// the output holds more than one run (or a garbled copy), and no run is picked silently.
/// One pass, whatever the count: the first name seen twice is the one named.
pub(crate) fn unique(tool: &str, metrics: Vec<Metric>) -> Result<Vec<Metric>, ParseError> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(metrics.len());
    for m in &metrics {
        *seen.entry(m.name.as_str()).or_default() += 1;
    }
    if let Some(m) = metrics.iter().find(|m| seen[m.name.as_str()] > 1) {
        return Err(perr(
            tool,
            format!(
                "`{}` is reported {} times: the output holds more than one run; give one run per file",
                clip(&m.name),
                seen[m.name.as_str()]
            ),
        ));
    }
    Ok(metrics)
}

/// The schedstat `version N` line of /proc/schedstat.
pub fn schedstat_version(raw: &str) -> Option<u32> {
    raw.lines().next()?.strip_prefix("version ")?.trim().parse().ok()
}
