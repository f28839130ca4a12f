//! Collectors: what a job reads around its measured phase besides the workload's own
//! output, each kept raw and turned into metrics that go through the same reports and
//! verdicts as the workload's.

pub mod interrupts;
pub mod perf_sched_stats;
pub mod perf_stat;
pub mod task_schedstat;

/// The collectors a scenario (and each workload, on top) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Collect {
    /// /proc/interrupts before and after: per-CPU deltas, rescheduling and function-call
    /// IPIs named.
    pub interrupts: bool,
    /// `perf stat -a` over the measured phase on the SUT ([`perf_stat::EVENTS`]).
    pub perf_stat: bool,
    /// Each of the workload's tasks' /proc/PID/schedstat figures at its exit.
    pub task_schedstat: bool,
    /// `perf sched stats record` system-wide over the measured phase on the SUT: its file
    /// kept, its report's all-CPUs summary as metrics ([`perf_sched_stats`]).
    pub perf_sched_stats: bool,
}

impl Collect {
    /// Either's collectors.
    pub fn or(self, other: Collect) -> Collect {
        Collect {
            interrupts: self.interrupts || other.interrupts,
            perf_stat: self.perf_stat || other.perf_stat,
            task_schedstat: self.task_schedstat || other.task_schedstat,
            perf_sched_stats: self.perf_sched_stats || other.perf_sched_stats,
        }
    }

    pub fn names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.interrupts {
            out.push("interrupts");
        }
        if self.perf_stat {
            out.push("perf_stat");
        }
        if self.task_schedstat {
            out.push("task_schedstat");
        }
        if self.perf_sched_stats {
            out.push("perf_sched_stats");
        }
        out
    }
}

/// Every collector a scenario may name.
pub const NAMES: &[&str] = &["interrupts", "perf_stat", "task_schedstat", "perf_sched_stats"];
