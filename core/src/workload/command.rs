//! Any program with an argv the user gives, and metrics read from its output by regex: the
//! first capture group of each, searched in stdout, then in stderr.

use super::SingleHost;
use crate::parse::{perr, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};
use crate::yaml::{Kind, Node, Section};

/// One metric of a command workload.
pub const METRIC: Section = Section::new(
    "workloads[].metrics.NAME",
    "scenario",
    &["regex", "unit", "higher_is_better", "kind"],
);

/// The keys of a command workload, besides the common ones.
pub const KEYS: &[&str] = &["argv", "metrics"];

#[derive(Debug, Clone, PartialEq)]
pub struct CommandWorkload {
    pub argv: Vec<String>,
    pub metrics: Vec<MetricPattern>,
}

/// A metric read from a command's output: the first capture group of `regex`, searched in
/// stdout, then in stderr.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPattern {
    pub name: String,
    pub regex: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// What kind of figure it is (`kind:`, default `mean`): picks the test.
    pub kind: MetricKind,
}

impl CommandWorkload {
    pub(crate) fn load(cx: &mut Cx, f: &Fields, what: &str) -> Option<CommandWorkload> {
        let argv = cx
            .required(f, "argv", what)
            .and_then(|n| cx.argv(n, "argv", "give at least the program"));
        let metrics = cx.required(f, "metrics", what).and_then(|n| metrics(cx, n));
        Some(CommandWorkload {
            argv: argv?,
            metrics: metrics?,
        })
    }
}

impl SingleHost for CommandWorkload {
    fn argv(&self) -> Vec<String> {
        self.argv.clone()
    }

    fn parse(&self, stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError> {
        parse(&self.metrics, stdout, stderr)
    }
}

fn metrics(cx: &mut Cx, node: &Node) -> Option<Vec<MetricPattern>> {
    let Kind::Map(entries) = &node.kind else {
        cx.expected(
            node,
            "metrics",
            "a mapping of metric name to { regex, unit, higher_is_better }",
        );
        return None;
    };
    if entries.is_empty() {
        cx.error(node, "metrics: declare at least one metric");
        return None;
    }
    let mut out = Vec::new();
    for (k, v) in entries {
        let name = cx.name(k, "metric name");
        let what = format!("metric `{}`", name.as_deref().unwrap_or("?"));
        let Some(f) = cx.map(v, &what, &METRIC) else {
            continue;
        };
        let regex = cx.required(&f, "regex", &what).and_then(|n| {
            let r = cx.string(n, "regex")?;
            match regex::Regex::new(&r) {
                Ok(re) if re.captures_len() >= 2 => Some(r),
                Ok(_) => {
                    cx.error(
                        n,
                        "regex: needs one capture group around the number, e.g. `Time: ([0-9.]+)`",
                    );
                    None
                }
                Err(e) => {
                    cx.error(n, format!("regex: {e}"));
                    None
                }
            }
        });
        let unit = match f.get("unit") {
            Some(n) => cx.string(n, "unit"),
            None => Some(String::new()),
        };
        let hib = cx
            .required(&f, "higher_is_better", &what)
            .and_then(|n| cx.boolean(n, "higher_is_better"));
        let kind = match f.get("kind") {
            None => Some(MetricKind::Mean),
            Some(n) => cx.string(n, "kind").and_then(|k| {
                let kind = MetricKind::from_name(&k);
                if kind.is_none() {
                    cx.error(n, format!("kind: {k:?} is not one of mean, throughput, latency, count"));
                }
                kind
            }),
        };
        if let (Some(name), Some(regex), Some(unit), Some(higher_is_better), Some(kind)) =
            (name, regex, unit, hib, kind)
        {
            out.push(MetricPattern {
                name,
                regex,
                unit,
                higher_is_better,
                kind,
            });
        }
    }
    Some(out)
}

/// Each pattern's metric, from stdout or else stderr.
pub fn parse(patterns: &[MetricPattern], stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError> {
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
            kind: p.kind,
        });
    }
    Ok(out)
}
