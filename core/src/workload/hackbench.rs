//! rt-tests hackbench: groups of senders and receivers over pipes or sockets; one `Time:`
//! line per run.

use super::SingleHost;
use crate::parse::{number, perr, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};
use crate::yaml::Kind;

/// The keys of a hackbench workload, besides the common ones.
pub const KEYS: &[&str] = &["groups", "loops", "pipe", "threads", "process", "fds", "datasize"];

/// rt-tests hackbench; each field is one of its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Hackbench {
    /// `-g`
    pub groups: u32,
    /// `-l`
    pub loops: u32,
    /// `-p`: pipes instead of sockets.
    pub pipe: bool,
    /// `-T`: threads instead of processes.
    pub threads: bool,
    /// `-f`: file descriptors (senders and receivers) per group.
    pub fds: Option<u32>,
    /// `-s`: bytes per message.
    pub datasize: Option<u32>,
}

impl Hackbench {
    pub(crate) fn load(cx: &mut Cx, f: &Fields) -> Option<Hackbench> {
        let groups = cx.uint_or(f, "groups", "groups (-g)", (1, 10_000), 10);
        let loops = cx.uint_or(f, "loops", "loops (-l)", (1, 100_000_000), 100);
        let pipe = cx.bool_or(f, "pipe", "pipe (-p)", false);
        let threads = cx.bool_or(f, "threads", "threads (-T)", false);
        if let (Some(t), Some(p)) = (f.get("threads"), f.get("process")) {
            if matches!((&t.kind, &p.kind), (Kind::Scalar(a, _), Kind::Scalar(b, _)) if a == "true" && b == "true") {
                cx.error(p, "process (-P) and threads (-T) exclude each other");
            }
        }
        let _process = f.get("process").map(|n| cx.boolean(n, "process (-P)"));
        let fds = match f.get("fds") {
            None => Some(None),
            Some(n) => cx.uint(n, "fds (-f)", 1, 1000).map(Some),
        };
        let datasize = match f.get("datasize") {
            None => Some(None),
            Some(n) => cx.uint(n, "datasize (-s)", 1, 1 << 20).map(Some),
        };
        Some(Hackbench {
            groups: groups?,
            loops: loops?,
            pipe: pipe?,
            threads: threads?,
            fds: fds?.map(|n| n as u32),
            datasize: datasize?.map(|n| n as u32),
        })
    }
}

impl SingleHost for Hackbench {
    fn argv(&self) -> Vec<String> {
        let mut v = vec!["hackbench".to_string()];
        if self.pipe {
            v.push("-p".into());
        }
        if self.threads {
            v.push("-T".into());
        }
        v.extend([
            "-g".into(),
            self.groups.to_string(),
            "-l".into(),
            self.loops.to_string(),
        ]);
        if let Some(f) = self.fds {
            v.extend(["-f".into(), f.to_string()]);
        }
        if let Some(s) = self.datasize {
            v.extend(["-s".into(), s.to_string()]);
        }
        v
    }

    fn parse(&self, stdout: &str, _stderr: &str) -> Result<Vec<Metric>, ParseError> {
        parse(stdout)
    }
}

/// The `Time:` line of one run.
pub fn parse(stdout: &str) -> Result<Vec<Metric>, ParseError> {
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
    Ok(vec![Metric::new("time", time, "s", false, MetricKind::Mean)])
}
