//! What caused a failure: the kernel's commit, the lab, the kernel once running, or the
//! workload. A failure the lab caused is a missing measurement, never a result; a build
//! that fails is the commit's and is never tried again.

use crate::states::state_names;

/// Who a failure is put down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// The kernel could not be fetched, configured, built or installed.
    Build,
    /// The lab: a boot that did not come up with nothing printed by the kernel, an agent
    /// that went silent, a connection lost, an upload or the database.
    Infrastructure,
    /// The kernel itself: a panic or an oops on the console, another release than the one
    /// asked for.
    Kernel,
    /// The workload on a kernel that ran: its tool exited or printed nothing readable.
    Workload,
}

state_names!(FailureClass {
    Build => "build",
    Infrastructure => "infrastructure",
    Kernel => "kernel",
    Workload => "workload",
});

impl FailureClass {
    /// Whether another boot may give what this one did not (everything but a build).
    pub fn boots_again(self) -> bool {
        self != FailureClass::Build
    }

    /// Whether the lab caused it: the kernel and the workload are not to blame.
    pub fn lab(self) -> bool {
        self == FailureClass::Infrastructure
    }
}

/// A failure with its class.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub class: FailureClass,
    pub reason: String,
}

impl Failed {
    pub fn new(class: FailureClass, reason: impl Into<String>) -> Failed {
        Failed {
            class,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// What a kernel printed that means it, not the lab, failed: a panic or an oops, with the
/// line that says so.
pub fn kernel_fault(text: &str) -> Option<&str> {
    const MARKS: [&str; 5] = [
        "Kernel panic - not syncing",
        "the kernel panicked",
        "Oops:",
        "BUG: unable to handle",
        "general protection fault",
    ];
    text.lines().find(|l| MARKS.iter().any(|m| l.contains(m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_builds_stay_failed() {
        for c in [
            FailureClass::Build,
            FailureClass::Infrastructure,
            FailureClass::Kernel,
            FailureClass::Workload,
        ] {
            assert_eq!(FailureClass::parse(c.as_str()), Some(c));
            assert_eq!(c.boots_again(), c != FailureClass::Build);
        }
        assert_eq!(FailureClass::parse("lab"), None);
        assert!(FailureClass::Infrastructure.lab() && !FailureClass::Kernel.lab());
    }

    #[test]
    fn a_panic_or_an_oops_is_the_kernels() {
        let console =
            "[    1.2] random: crng init done\n[    2.5] Kernel panic - not syncing: VFS: Unable to mount root\n";
        assert!(kernel_fault(console).unwrap().contains("VFS"));
        assert!(kernel_fault("[ 3.1] Oops: 0002 [#1] PREEMPT SMP").is_some());
        assert_eq!(kernel_fault("agent did not answer within 300 s"), None);
    }
}
