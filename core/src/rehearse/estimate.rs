//! What the real run will cost, from the scenario as written: its jobs and boots at the
//! first look and at the plan's most, and the time its workloads declare (a rampup and a
//! duration, a runtime, a test length) against what their timeouts allow.

use crate::scenario::Scenario;
use crate::workload::WorkloadKind;

/// The real run's size.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Jobs at the first look and at the plan's most (warm-ups included).
    pub jobs: (usize, usize),
    /// Boots of the SUT at the first look and at the most.
    pub boots: (usize, usize),
    /// Seconds of workload the jobs declare (the first look, the most); `None` when a
    /// workload declares no length (hackbench, perf bench, a command).
    pub declared_secs: Option<(u64, u64)>,
    /// Seconds with every job at its timeout and every boot at the boot timeout (the most).
    pub bound_secs: u64,
}

/// How long one run of `kind` declares it lasts, in seconds.
fn declared(kind: &WorkloadKind) -> Option<u64> {
    let flag = |flags: &[(String, Option<String>)], f: &str| {
        flags
            .iter()
            .find(|(k, _)| k == f)
            .and_then(|(_, v)| v.as_ref()?.parse::<u64>().ok())
    };
    match kind {
        WorkloadKind::Hammerdb(h) => Some(60 * u64::from(h.rampup_min + h.duration_min)),
        WorkloadKind::Sysbench(s) => Some(u64::from(s.time_secs)),
        WorkloadKind::Netperf(n) => Some(u64::from(n.duration_secs)),
        // schbench runs 30 s unless told, after its warm-up (none unless told).
        WorkloadKind::Schbench(s) => Some(flag(&s.flags, "-r").unwrap_or(30) + flag(&s.flags, "-w").unwrap_or(0)),
        WorkloadKind::Hackbench(_) | WorkloadKind::PerfBench(_) | WorkloadKind::Command(_) => None,
    }
}

/// `s` with its plan at its most: every cell at `max_iterations`, the boots that takes.
fn at_most(s: &Scenario) -> Scenario {
    let mut m = s.clone();
    if s.by_boot() {
        m.boots = s.max_iterations.div_ceil(s.runs_per_boot());
    }
    m.iterations = s.max_iterations;
    m
}

pub fn estimate(s: &Scenario) -> Estimate {
    let most = at_most(s);
    let (first, last) = (crate::plan::expand(s), crate::plan::expand(&most));
    let boots = |jobs: &[crate::plan::Job]| {
        let mut seen: Vec<(&str, u32)> = jobs.iter().map(|j| (j.kernel.as_str(), j.boot)).collect();
        seen.sort();
        seen.dedup();
        seen.len()
    };
    let secs = |jobs: &[crate::plan::Job]| -> Option<u64> {
        jobs.iter()
            .map(|j| s.workload(&j.workload).and_then(|w| declared(&w.kind)))
            .sum::<Option<u64>>()
    };
    let bound = last
        .iter()
        .map(|j| s.workload(&j.workload).map_or(0, |w| w.timeout_secs))
        .sum::<u64>()
        + boots(&last) as u64 * s.boot.timeout_secs;
    Estimate {
        jobs: (first.len(), last.len()),
        boots: (boots(&first), boots(&last)),
        declared_secs: secs(&first).zip(secs(&last)),
        bound_secs: bound,
    }
}

impl Estimate {
    /// "36 to 72 jobs on 12 to 24 boots; the workloads declare 4 h 12 min to 8 h 24 min,
    /// plus the boots; at most 40 h with every job and boot at its timeout"
    pub fn text(&self) -> String {
        let range = |(a, b): (usize, usize)| if a == b { a.to_string() } else { format!("{a} to {b}") };
        let span = |(a, b): (u64, u64)| {
            if a == b {
                crate::text::duration(a as f64)
            } else {
                format!(
                    "{} to {}",
                    crate::text::duration(a as f64),
                    crate::text::duration(b as f64)
                )
            }
        };
        let declared = match self.declared_secs {
            Some(d) => format!("the workloads declare {} of measuring, plus the boots", span(d)),
            None => "some workloads declare no length (hackbench, perf bench, a command): the rehearsal's own times are no guide to a real machine's".into(),
        };
        format!(
            "{} jobs on {} boots; {declared}; at most {} with every job and boot at its timeout",
            range(self.jobs),
            range(self.boots),
            crate::text::duration(self.bound_secs as f64)
        )
    }
}
