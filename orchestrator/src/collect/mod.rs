//! Collectors: what a job reads around its measured phase besides the workload's own
//! output, each kept raw and turned into metrics that go through the same reports and
//! verdicts as the workload's.

pub mod interrupts;

/// The collectors a scenario (and each workload, on top) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Collect {
    /// /proc/interrupts before and after: per-CPU deltas, rescheduling and function-call
    /// IPIs named.
    pub interrupts: bool,
}

impl Collect {
    /// Either's collectors.
    pub fn or(self, other: Collect) -> Collect {
        Collect {
            interrupts: self.interrupts || other.interrupts,
        }
    }

    pub fn names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.interrupts {
            out.push("interrupts");
        }
        out
    }
}

/// Every collector a scenario may name.
pub const NAMES: &[&str] = &["interrupts"];
