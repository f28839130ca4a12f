//! schbench: its text report (written to stderr) and its `-j FILE` JSON. With `-i`, the
//! text holds a report per interval; the last complete one is the run's result.
//!
//! Text sections: `Wakeup Latencies percentiles (usec) …`, `Request Latencies percentiles
//! (usec) …`, `RPS percentiles (requests) …`, each followed by `[*] NN.Nth: VALUE (N samples)`
//! lines and `min=A, max=B`; then `average rps: X`.

use super::common::{bool_flags, is_cpu_list, num_flags, push_flags, Flags, NumFlag};
use super::SingleHost;
use crate::parse::{clip, number, pct_label, perr, plausible, unique, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};

const NUM: &[NumFlag] = &[
    ("message_threads", "-m", 1, 4096),
    ("threads", "-t", 1, 65536),
    ("runtime", "-r", 1, 86400),
    ("operations", "-n", 0, 1_000_000),
    ("cache_footprint_kb", "-F", 0, 1 << 30),
    ("requests_per_sec", "-R", 1, 100_000_000),
    ("auto_rps", "-A", 1, 100),
    ("pipe", "-p", 1, 1 << 20),
    ("intervaltime", "-i", 1, 86400),
    ("warmuptime", "-w", 0, 86400),
    ("sleep_usec", "-s", 0, 100_000_000),
    ("zerotime", "-z", 1, 86400),
];
const BOOL: &[(&str, &str)] = &[("no_locking", "-L"), ("calibrate", "-C")];
const CPUS: &[(&str, &str)] = &[("message_cpus", "-M"), ("worker_cpus", "-W")];

/// The keys of a schbench workload, besides the common ones.
pub const KEYS: &[&str] = &[
    "message_threads",
    "threads",
    "runtime",
    "operations",
    "cache_footprint_kb",
    "requests_per_sec",
    "auto_rps",
    "pipe",
    "intervaltime",
    "warmuptime",
    "sleep_usec",
    "zerotime",
    "no_locking",
    "calibrate",
    "message_cpus",
    "worker_cpus",
    "json",
];

/// schbench with any of its flags (-m -t -r -M -W -L -n -F -R -A -p -i -w -s -z -C).
#[derive(Debug, Clone, PartialEq)]
pub struct Schbench {
    pub flags: Flags,
    /// Also ask for `-j -` (JSON on stdout) and read it; the text report stays on stderr.
    pub json: bool,
}

impl Schbench {
    pub(crate) fn load(cx: &mut Cx, f: &Fields) -> Option<Schbench> {
        let mut flags = Flags::new();
        let mut ok = num_flags(cx, f, NUM, &mut flags);
        ok &= bool_flags(cx, f, BOOL, &mut flags);
        for (key, flag) in CPUS {
            if let Some(n) = f.get(key) {
                match cx.string(n, key) {
                    Some(s) if is_cpu_list(&s) => flags.push((flag.to_string(), Some(s))),
                    Some(s) => {
                        cx.error(
                            n,
                            format!("{key} ({flag}): {s:?} is not a CPU list like 0-3,8 or `auto`"),
                        );
                        ok = false;
                    }
                    None => ok = false,
                }
            }
        }
        let json = cx.bool_or(f, "json", "json (-j)", false);
        ok.then_some(Schbench { flags, json: json? })
    }
}

impl SingleHost for Schbench {
    fn argv(&self) -> Vec<String> {
        let mut v = vec!["schbench".to_string()];
        push_flags(&mut v, &self.flags);
        if self.json {
            v.extend(["-j".into(), "-".into()]);
        }
        v
    }

    /// The text report is on stderr; with `-j -` the JSON is on stdout, and the average
    /// RPS (which only the text has) is taken from the text.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError> {
        if self.json {
            let mut m = parse_json(stdout)?;
            let text = parse_text(stderr)?;
            m.extend(text.into_iter().filter(|t| t.name == "avg_rps"));
            Ok(m)
        } else {
            parse_text(&format!("{stdout}\n{stderr}"))
        }
    }
}

const TOOL: &str = "schbench";

struct Section {
    prefix: &'static str,
    /// Metric name stem.
    stem: &'static str,
    unit: &'static str,
    higher_is_better: bool,
}

const SECTIONS: &[Section] = &[
    Section {
        prefix: "Wakeup Latencies percentiles",
        stem: "wakeup_lat",
        unit: "us",
        higher_is_better: false,
    },
    Section {
        prefix: "Request Latencies percentiles",
        stem: "request_lat",
        unit: "us",
        higher_is_better: false,
    },
    Section {
        prefix: "RPS percentiles",
        stem: "rps",
        unit: "req/s",
        higher_is_better: true,
    },
];

/// A section's closing `min=A, max=B` line (`rest` is what follows `min=`).
fn min_max(section: &Section, line: usize, l: &str, rest: &str) -> Result<[Metric; 2], ParseError> {
    let (min, max) = rest.split_once(", max=").ok_or_else(|| {
        perr(
            TOOL,
            format!("line {line}: expected `min=A, max=B`, found {:?}", clip(l)),
        )
    })?;
    let metric = |suffix: &str, value: &str| -> Result<Metric, ParseError> {
        Ok(Metric::new(
            format!("{}_{suffix}", section.stem),
            number(TOOL, line, suffix, value)?,
            section.unit,
            section.higher_is_better,
            MetricKind::Latency,
        ))
    };
    Ok([metric("min", min)?, metric("max", max)?])
}

pub fn parse_text(text: &str) -> Result<Vec<Metric>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Metric> = Vec::new();
    let mut seen_any = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        let Some(section) = SECTIONS.iter().find(|s| line.starts_with(s.prefix)) else {
            if let Some(rest) = line.strip_prefix("average rps:") {
                let v = number(TOOL, i + 1, "average rps", rest)?;
                out.retain(|m| m.name != "avg_rps");
                out.push(Metric::new("avg_rps", v, "req/s", true, MetricKind::Throughput));
            }
            i += 1;
            continue;
        };
        seen_any = true;
        let header = i + 1;
        i += 1;
        let mut block = Vec::new();
        let mut closed = false;
        while i < lines.len() {
            let l = lines[i].trim().trim_start_matches('*').trim();
            if let Some((label, rest)) = l.split_once("th:") {
                let value = rest.split_whitespace().next().unwrap_or("");
                let v = number(TOOL, i + 1, &format!("the {label}th percentile"), value)?;
                let name = format!(
                    "{}_{}",
                    section.stem,
                    pct_label(TOOL, &format!("line {}", i + 1), label)?
                );
                block.push(Metric::new(
                    name,
                    v,
                    section.unit,
                    section.higher_is_better,
                    MetricKind::Latency,
                ));
            } else if let Some(rest) = l.strip_prefix("min=") {
                block.extend(min_max(section, i + 1, l, rest)?);
                closed = true;
                i += 1;
                break;
            } else {
                return Err(perr(
                    TOOL,
                    format!(
                        "line {}: expected a percentile or `min=…, max=…` line in the {} section, found {:?}",
                        i + 1,
                        section.prefix,
                        clip(l)
                    ),
                ));
            }
            i += 1;
        }
        if !closed {
            return Err(perr(
                TOOL,
                format!(
                    "line {header}: the {} section ends before its `min=…, max=…` line (truncated output)",
                    section.prefix
                ),
            ));
        }
        // A later report (one per interval) replaces an earlier one.
        out.retain(|m| !block.iter().any(|b| b.name == m.name));
        out.extend(block);
    }
    if !seen_any {
        return Err(perr(
            TOOL,
            "no `Wakeup Latencies percentiles` report in the output (truncated, or the run failed)",
        ));
    }
    unique(TOOL, out)
}

/// The JSON schbench writes with `-j FILE`: `{"normal": {...}, "int": {"wakeup_latency_pct50.0": N, …}}`.
pub fn parse_json(text: &str) -> Result<Vec<Metric>, ParseError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        perr(
            "schbench-json",
            format!("line {}, column {}: {e}", e.line(), e.column()),
        )
    })?;
    let ints = v
        .get("int")
        .and_then(|i| i.as_object())
        .ok_or_else(|| perr("schbench-json", "no `int` object: not schbench's JSON output"))?;
    let mut out = Vec::new();
    for (label, stem, unit, hib) in [
        ("wakeup_latency", "wakeup_lat", "us", false),
        ("request_latency", "request_lat", "us", false),
        ("rps", "rps", "req/s", true),
    ] {
        for (key, value) in ints {
            let Some(rest) = key.strip_prefix(label).and_then(|r| r.strip_prefix('_')) else {
                continue;
            };
            let suffix = if let Some(p) = rest.strip_prefix("pct") {
                pct_label("schbench-json", &format!("`{}`", clip(key)), p)?
            } else if rest == "min" || rest == "max" {
                rest.to_string()
            } else {
                continue;
            };
            let n = value.as_f64().ok_or_else(|| {
                perr(
                    "schbench-json",
                    format!("`{key}` is {}, not a number", clip(&value.to_string())),
                )
            })?;
            if !plausible(n) {
                return Err(perr("schbench-json", format!("`{key}` is {n}, which is impossible")));
            }
            out.push(Metric::new(
                format!("{stem}_{suffix}"),
                n,
                unit,
                hib,
                MetricKind::Latency,
            ));
        }
    }
    if !out.iter().any(|m| m.name.starts_with("wakeup_lat_p")) {
        return Err(perr(
            "schbench-json",
            "no wakeup_latency percentiles in the JSON (truncated, or the run failed)",
        ));
    }
    unique("schbench-json", out)
}
