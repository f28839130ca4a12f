//! The rehearsal's sheet: each step of the campaign (build, boot, tools, tuning, server,
//! workload, parse, collectors, restore, report) for what it concerns (a kernel, a tool, a
//! workload), done, failed (why, and the place in the scenario file that asked for it) or
//! not rehearsable (why). What a job's failure says decides its step: the engine's
//! failures each begin their own way ("boot failed: ", "tool T on H: ", …).

use crate::yaml::Node;

/// A step of the campaign, in the order a run meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// The kernel fetched, unpacked or built on the controller.
    Build,
    /// Installed on the SUT, booted by the scenario's method, the agent back with the
    /// release asked for.
    Boot,
    Tools,
    Tuning,
    /// A workload's server started and ready (netserver, mysqld).
    Server,
    Workload,
    /// The workload's output read into its metrics.
    Parse,
    Collectors,
    /// What kreg changed on the hosts put back.
    Restore,
    Report,
}

impl Step {
    pub fn label(self) -> &'static str {
        match self {
            Step::Build => "build",
            Step::Boot => "boot",
            Step::Tools => "tools",
            Step::Tuning => "tuning",
            Step::Server => "server",
            Step::Workload => "workload",
            Step::Parse => "parse",
            Step::Collectors => "collectors",
            Step::Restore => "restore",
            Step::Report => "report",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done(String),
    /// Why, and where in the scenario file (line, column) the failing part is declared.
    Failed {
        reason: String,
        at: Option<(usize, usize)>,
    },
    NotRehearsable {
        why: String,
        at: Option<(usize, usize)>,
    },
    /// Not reached: an earlier step failed (said on its own line).
    NotReached,
}

/// One line of the sheet: a step for one thing ("v6.9", "mysqld", "tpcc").
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub step: Step,
    pub subject: String,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Default)]
pub struct Sheet {
    pub lines: Vec<Line>,
}

impl Sheet {
    pub fn push(&mut self, step: Step, subject: impl Into<String>, outcome: Outcome) {
        let subject = subject.into();
        // A failure said once per thing: every job of a kernel that did not boot says so.
        if !self
            .lines
            .iter()
            .any(|l| l.step == step && l.subject == subject && l.outcome == outcome)
        {
            self.lines.push(Line { step, subject, outcome });
        }
    }

    pub fn failed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l.outcome, Outcome::Failed { .. }))
            .count()
    }

    /// The sheet as text, steps in run order, places as FILE:LINE:COL.
    pub fn render(&self, file: &str) -> String {
        let mut lines: Vec<&Line> = self.lines.iter().collect();
        lines.sort_by_key(|l| l.step);
        let width = lines.iter().map(|l| l.subject.chars().count()).max().unwrap_or(0);
        let mut out = String::new();
        for l in lines {
            let place = |at: &Option<(usize, usize)>| at.map(|(r, c)| format!("{file}:{r}:{c}: ")).unwrap_or_default();
            let (word, text) = match &l.outcome {
                Outcome::Done(what) => ("done", what.clone()),
                Outcome::Failed { reason, at } => ("FAILED", format!("{}{reason}", place(at))),
                Outcome::NotRehearsable { why, at } => ("not rehearsable", format!("{}{why}", place(at))),
                Outcome::NotReached => ("not reached", "an earlier step failed".to_string()),
            };
            out.push_str(&format!(
                "  {:<10} {:<width$}  {word}: {text}\n",
                l.step.label(),
                l.subject
            ));
        }
        out
    }
}

/// The job a failure belongs to.
pub struct JobCell<'a> {
    pub kernel: &'a str,
    pub variant: &'a str,
    pub workload: &'a str,
}

/// The step a job's failure belongs to, what it concerns, and the path in the scenario
/// file (as [`super::locate`] takes it) of the part that asked for it.
pub fn place(reason: &str, job: &JobCell) -> (Step, String, Vec<String>) {
    let item = |list: &str, name: &str| vec![list.to_string(), format!("name={name}")];
    if reason.starts_with("boot failed: ") {
        return (Step::Boot, job.kernel.into(), item("kernels", job.kernel));
    }
    if let Some(rest) = reason.strip_prefix("tool ") {
        let tool = rest.split(' ').next().unwrap_or_default().to_string();
        let path = match tool.as_str() {
            "perf" => vec!["perf".to_string()],
            t => item("tools", t),
        };
        return (Step::Tools, tool, path);
    }
    if let Some(rest) = reason.strip_prefix("tuning on ") {
        let host = rest.split(':').next().unwrap_or_default().to_string();
        return (Step::Tuning, host.clone(), vec!["hosts".into(), host, "tuning".into()]);
    }
    if reason.starts_with(&format!("workload {}, its server on ", job.workload)) {
        let mut path = item("workloads", job.workload);
        path.push("server".into());
        return (Step::Server, job.workload.into(), path);
    }
    if reason.starts_with("cgroup on ") {
        let mut path = item("workloads", job.workload);
        path.push("cgroup".into());
        return (Step::Workload, job.workload.into(), path);
    }
    if let Some(host) = reason
        .strip_prefix("host ")
        .and_then(|r| r.strip_suffix(" is not connected"))
    {
        return (Step::Boot, host.into(), vec!["hosts".into(), host.into()]);
    }
    // "metric M: …", or under the workload kind's name ("command: metric M: …").
    let metric = reason.strip_prefix("metric ").or_else(|| {
        let (kind, rest) = reason.split_once(": ")?;
        rest.strip_prefix("metric ").filter(|_| !kind.contains(' '))
    });
    if let Some(rest) = metric {
        let metric = rest.split(':').next().unwrap_or_default().to_string();
        let mut path = item("workloads", job.workload);
        path.extend(["metrics".to_string(), metric]);
        return (Step::Parse, job.workload.into(), path);
    }
    if reason.contains("sched_features") || reason.contains("variant") {
        return (Step::Tuning, job.variant.into(), item("variants", job.variant));
    }
    (Step::Workload, job.workload.into(), item("workloads", job.workload))
}

/// Where the node at `path` is, or the nearest part of the path that is written.
pub fn position(root: Option<&Node>, path: &[String]) -> Option<(usize, usize)> {
    let root = root?;
    (1..=path.len()).rev().find_map(|n| {
        let steps: Vec<&str> = path[..n].iter().map(String::as_str).collect();
        super::locate(root, &steps).map(|node| (node.line, node.col))
    })
}
