//! Where a bisection measurement's time goes, phase by phase, read off the engine's own
//! events as they happen: the checkout (and configuration) of the commit, its build (or
//! the cache's answer) with the image stored, the install and boot of the kernel, the
//! tools and settings made ready on the booted hosts, the workload's jobs with their
//! results stored, and the bisection's judging of the value (recorded, decided, the next
//! measurement asked).

use std::time::Instant;

use super::Event;

/// The phases of one measurement so far: each phase's start, and the seconds of those
/// that ended.
#[derive(Debug)]
pub struct PhaseClock {
    /// The phase under way and when it began.
    current: Option<(&'static str, Instant)>,
    done: Vec<(String, f64)>,
}

impl PhaseClock {
    pub fn new() -> PhaseClock {
        PhaseClock {
            current: None,
            done: Vec::new(),
        }
    }

    /// Ends the phase under way (its seconds added to any earlier time in it) and starts
    /// `next`, at `now`.
    fn enter(&mut self, next: Option<&'static str>, now: Instant) {
        if let Some((name, since)) = self.current.take() {
            let secs = now.duration_since(since).as_secs_f64();
            match self.done.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 += secs,
                None => self.done.push((name.to_string(), secs)),
            }
        }
        self.current = next.map(|n| (n, now));
    }

    /// An event of the measurement, seen at `now`.
    pub fn event(&mut self, e: &Event, now: Instant) {
        let under_way = self.current.map(|c| c.0);
        let next = match e {
            // The kernel is asked for: its commit is checked out (or its tarball read).
            Event::KernelBooting { .. } => Some("checkout"),
            // The first line after the checkout's own is the build's (or the cache's).
            Event::BuildOutput { line, .. } if under_way == Some("checkout") && !checking_out(line) => Some("build"),
            Event::KernelPrepared { .. } => Some("install and boot"),
            Event::KernelReady { .. } => Some("tools"),
            Event::JobStarted { .. } if under_way != Some("workload") => Some("workload"),
            _ => return,
        };
        self.enter(next, now);
    }

    /// The workload's results are stored: the bisection judges the value from `now`.
    pub fn judging(&mut self, now: Instant) {
        self.enter(Some("judging"), now);
    }

    /// The phases, each with its seconds, in the order they ran (the one under way ended at
    /// `now`).
    pub fn finish(mut self, now: Instant) -> Vec<(String, f64)> {
        self.enter(None, now);
        self.done
    }
}

impl Default for PhaseClock {
    fn default() -> PhaseClock {
        PhaseClock::new()
    }
}

/// Whether a build's line is the checkout's own (kreg's steps before the compiler runs).
fn checking_out(line: &str) -> bool {
    ["checking out", "extracting", "applying"]
        .iter()
        .any(|w| line.starts_with(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_phase_runs_from_its_event_to_the_next() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut c = PhaseClock::new();
        let k = || "k".to_string();
        c.event(&Event::KernelBooting { kernel: k() }, at(0));
        c.event(
            &Event::BuildOutput {
                kernel: k(),
                line: "checking out abc in /w".into(),
            },
            at(0),
        );
        c.event(
            &Event::BuildOutput {
                kernel: k(),
                line: "  CC fs/pipe.o".into(),
            },
            at(3),
        );
        c.event(
            &Event::BuildOutput {
                kernel: k(),
                line: "  LD vmlinux".into(),
            },
            at(50),
        );
        c.event(
            &Event::KernelPrepared {
                kernel: k(),
                release: None,
                secs: 100.0,
                compiled: true,
            },
            at(100),
        );
        c.event(
            &Event::KernelReady {
                kernel: k(),
                release: "6.1".into(),
                boot_id: "b".into(),
                method: "kexec",
                secs: 20.0,
            },
            at(120),
        );
        for (i, s) in [(1, 125), (2, 135)] {
            c.event(
                &Event::JobStarted {
                    ordinal: i,
                    total: 2,
                    kernel: k(),
                    variant: "v".into(),
                    workload: "w".into(),
                    iteration: i,
                },
                at(s),
            );
        }
        c.judging(at(145));
        let got = c.finish(at(146));
        let want: Vec<(String, f64)> = [
            ("checkout", 3.0),
            ("build", 97.0),
            ("install and boot", 20.0),
            ("tools", 5.0),
            ("workload", 20.0),
            ("judging", 1.0),
        ]
        .iter()
        .map(|(n, s)| (n.to_string(), *s))
        .collect();
        assert_eq!(got, want);
    }
}
