//! `perf bench sched messaging` and `perf bench sched pipe` (default output format).

use super::common::{bool_flags, num_flags, push_flags, Flags, NumFlag};
use super::SingleHost;
use crate::parse::{number, perr, unique, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};

/// The keys of a perf-bench workload, besides the common ones.
pub const KEYS: &[&str] = &["bench", "groups", "loops", "pipe", "threads"];

const NUM: &[NumFlag] = &[("groups", "-g", 1, 10_000), ("loops", "-l", 1, 100_000_000)];
const BOOL: &[(&str, &str)] = &[("pipe", "-p"), ("threads", "-t")];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfBenchKind {
    Messaging,
    Pipe,
}

/// `perf bench sched messaging|pipe` with its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfBench {
    pub bench: PerfBenchKind,
    pub flags: Flags,
}

impl PerfBench {
    pub(crate) fn load(cx: &mut Cx, f: &Fields, what: &str) -> Option<PerfBench> {
        let node = cx.required(f, "bench", what)?;
        let bench = match cx.string(node, "bench")?.as_str() {
            "messaging" => PerfBenchKind::Messaging,
            "pipe" => PerfBenchKind::Pipe,
            other => {
                cx.error(
                    node,
                    format!("bench: `{other}` is not a perf sched benchmark; expected messaging or pipe"),
                );
                return None;
            }
        };
        let mut flags = Flags::new();
        let (num, bools): (&[NumFlag], &[(&str, &str)]) = match bench {
            PerfBenchKind::Messaging => (NUM, BOOL),
            // sched pipe takes -l (loops) and -T (threads).
            PerfBenchKind::Pipe => (&NUM[1..], &[("threads", "-T")]),
        };
        for key in ["groups", "pipe"] {
            if bench == PerfBenchKind::Pipe {
                if let Some(n) = f.get(key) {
                    cx.error(n, format!("`{key}` does not apply to perf bench sched pipe"));
                    return None;
                }
            }
        }
        let mut ok = num_flags(cx, f, num, &mut flags);
        ok &= bool_flags(cx, f, bools, &mut flags);
        ok.then_some(PerfBench { bench, flags })
    }
}

impl SingleHost for PerfBench {
    fn argv(&self) -> Vec<String> {
        let bench = match self.bench {
            PerfBenchKind::Messaging => "messaging",
            PerfBenchKind::Pipe => "pipe",
        };
        let mut v = vec!["perf".to_string(), "bench".into(), "sched".into(), bench.into()];
        push_flags(&mut v, &self.flags);
        v
    }

    fn parse(&self, stdout: &str, _stderr: &str) -> Result<Vec<Metric>, ParseError> {
        parse(stdout)
    }
}

const TOOL: &str = "perf-bench";

pub fn parse(text: &str) -> Result<Vec<Metric>, ParseError> {
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
                MetricKind::Mean,
            ));
        } else if let Some(v) = l.strip_suffix("usecs/op") {
            out.push(Metric::new(
                "usecs_per_op",
                number(TOOL, n + 1, "usecs/op", v)?,
                "us",
                false,
                MetricKind::Mean,
            ));
        } else if let Some(v) = l.strip_suffix("ops/sec") {
            out.push(Metric::new(
                "ops_per_s",
                number(TOOL, n + 1, "ops/sec", v)?,
                "ops/s",
                true,
                MetricKind::Throughput,
            ));
        }
    }
    if !out.iter().any(|m| m.name == "total_time") {
        return Err(perr(TOOL, "no `Total time:` line (truncated, or the benchmark failed)"));
    }
    unique(TOOL, out)
}
