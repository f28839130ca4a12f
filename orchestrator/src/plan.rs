//! The job matrix: kernel × variant × workload × iteration, in the order it runs. Jobs are
//! grouped by kernel so each kernel boots once; within a kernel, by variant, so sched
//! features change as rarely as possible.

use crate::scenario::Scenario;

/// One point of the matrix. `ordinal` is its place in the run order, from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub ordinal: u32,
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    /// From 1.
    pub iteration: u32,
}

pub fn expand(s: &Scenario) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut push = |k: &str, v: &str, w: &str, i: u32| {
        jobs.push(Job {
            ordinal: jobs.len() as u32,
            kernel: k.into(),
            variant: v.into(),
            workload: w.into(),
            iteration: i,
        })
    };
    for k in &s.kernels {
        match s.order {
            // Each variant's iterations together: sched features and servers change least.
            crate::scenario::Order::Blocked => {
                for v in &s.variants {
                    for w in &s.workloads {
                        for i in 1..=s.iterations {
                            push(&k.name, &v.name, &w.name, i);
                        }
                    }
                }
            }
            // Iteration by iteration across variants: drift over time hits every variant
            // alike, at the cost of switching variants (and restarting servers) each job.
            crate::scenario::Order::Interleaved => {
                for i in 1..=s.iterations {
                    for v in &s.variants {
                        for w in &s.workloads {
                            push(&k.name, &v.name, &w.name, i);
                        }
                    }
                }
            }
        }
    }
    jobs
}

/// Where a job stands. `Running` jobs found by `resume` were interrupted and run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    Done,
    Failed,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Running,
    /// Stopped before its end (a signal, a lost database, a crash): `kreg resume` goes on.
    Interrupted,
    /// Every job done.
    Done,
    /// Ended with failed jobs.
    Failed,
}

/// The text of a state in the database, and back: an unknown one is an error, never a
/// default.
macro_rules! state_names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }

            pub fn parse(s: &str) -> Option<$ty> {
                match s {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl TryFrom<String> for $ty {
            type Error = String;

            fn try_from(s: String) -> Result<$ty, String> {
                $ty::parse(&s).ok_or_else(|| format!("unknown {} state {s:?}", stringify!($ty)))
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

state_names!(JobState { Pending => "pending", Running => "running", Done => "done", Failed => "failed" });
state_names!(RunState { Running => "running", Interrupted => "interrupted", Done => "done", Failed => "failed" });

impl JobState {
    /// Whether `resume` runs a job in this state again.
    pub fn needs_run(self) -> bool {
        matches!(self, JobState::Pending | JobState::Running)
    }

    /// Whether a drive of the run takes this job (again): all but the done ones.
    pub fn to_drive(self) -> bool {
        self != JobState::Done
    }
}

/// Renders the plan as `kreg plan` prints it.
pub fn render(s: &Scenario, jobs: &[Job]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {}: {} kernels × {} variants × {} workloads × {} iterations = {} jobs",
        s.name,
        s.kernels.len(),
        s.variants.len(),
        s.workloads.len(),
        s.iterations,
        jobs.len()
    );
    let mut kernel = None;
    for j in jobs {
        if kernel != Some(&j.kernel) {
            kernel = Some(&j.kernel);
            let k = s.kernel(&j.kernel).expect("validated");
            let baseline = if k.name == s.baseline { " (baseline)" } else { "" };
            let _ = writeln!(out, "boot kernel {}{baseline}: {}", k.name, describe_source(&k.source));
        }
        let _ = writeln!(
            out,
            "  #{:<4} variant={} workload={} iteration={}",
            j.ordinal, j.variant, j.workload, j.iteration
        );
    }
    out
}

fn describe_source(src: &crate::scenario::KernelSource) -> String {
    use crate::scenario::KernelSource::*;
    match src {
        Deb { package } => format!("Debian package {package}"),
        Path { vmlinuz } => format!("image {}", vmlinuz.display()),
        Running => "the running kernel".into(),
        Build(b) => {
            let tree = match &b.tree {
                crate::scenario::TreeSource::Git { url, git_ref } => format!("{url} at {git_ref}"),
                crate::scenario::TreeSource::Tarball { path } => path.display().to_string(),
            };
            format!(
                "built from {tree}, {} option(s) set, {} patch(es)",
                b.config.set.len(),
                b.patches.len()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_by_kernel_then_variant() {
        let text = "name: p\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running}, {name: b, source: running} ]\nvariants: [ {name: default}, {name: batch, policy: batch} ]\nworkloads: [ {name: w, kind: hackbench} ]\niterations: 2\n";
        let s = crate::scenario::from_str(text, std::path::Path::new("/")).unwrap();
        let jobs = expand(&s);
        assert_eq!(jobs.len(), 8);
        let keys: Vec<_> = jobs
            .iter()
            .map(|j| format!("{}/{}/{}", j.kernel, j.variant, j.iteration))
            .collect();
        assert_eq!(
            keys,
            [
                "a/default/1",
                "a/default/2",
                "a/batch/1",
                "a/batch/2",
                "b/default/1",
                "b/default/2",
                "b/batch/1",
                "b/batch/2"
            ]
        );
        assert!(jobs.iter().enumerate().all(|(i, j)| j.ordinal == i as u32));
        let text = render(&s, &jobs);
        assert_eq!(text.matches("boot kernel").count(), 2, "{text}");
    }
}

#[cfg(test)]
mod state_tests {
    use super::*;

    #[test]
    fn states_round_trip_and_an_unknown_one_is_an_error() {
        for s in [JobState::Pending, JobState::Running, JobState::Done, JobState::Failed] {
            assert_eq!(JobState::try_from(s.as_str().to_string()), Ok(s));
        }
        for s in [
            RunState::Running,
            RunState::Interrupted,
            RunState::Done,
            RunState::Failed,
        ] {
            assert_eq!(RunState::try_from(s.to_string()), Ok(s));
        }
        assert!(JobState::try_from("finished".to_string()).is_err());
        assert!(RunState::try_from("pending".to_string()).is_err());
        assert_eq!(format!("{:<8}|", RunState::Done), "done    |");
    }
}
