//! One way to say a command failed: what ran, how it ended, and the last lines of its
//! output, whether it ran on the controller or through an agent.

use kreg_protocol::wire::ExecResult;

pub use kreg_core::failure::{kernel_fault, Failed, FailureClass};

/// A command that did not succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what} {how}: {tail}")]
pub struct CommandFailed {
    /// The command as the message names it (e.g. "hackbench", "make bzImage").
    pub what: String,
    /// "exited with status 2", "was killed by signal 9", "timed out after 60s".
    pub how: String,
    /// Its output's last lines, joined by " | ".
    pub tail: String,
}

/// How many lines of output a failure keeps.
pub const TAIL_LINES: usize = 8;

/// The last `n` non-blank lines of `text`, in order, joined by " | ".
pub fn tail(text: &str, n: usize) -> String {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).rev().take(n).collect();
    lines.reverse();
    lines.join(" | ")
}

impl CommandFailed {
    /// A step's exec that did not succeed (stderr's tail); `timeout_secs` is the limit it had.
    pub fn of_exec(what: impl Into<String>, res: &ExecResult, timeout_secs: u64) -> CommandFailed {
        let how = if res.timed_out {
            format!("timed out after {timeout_secs}s")
        } else if let Some(sig) = res.signal {
            format!("was killed by signal {sig}")
        } else {
            format!("exited with status {}", res.exit_code.unwrap_or(-1))
        };
        CommandFailed {
            what: what.into(),
            how,
            tail: tail(&res.stderr, TAIL_LINES),
        }
    }

    /// A process of the controller's that did not succeed (the tail of stdout and stderr).
    pub fn of_output(what: impl Into<String>, out: &std::process::Output) -> CommandFailed {
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        CommandFailed {
            what: what.into(),
            how: match (
                out.status.code(),
                std::os::unix::process::ExitStatusExt::signal(&out.status),
            ) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                (None, None) => format!("ended with {}", out.status),
            },
            tail: tail(&text, TAIL_LINES),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(exit_code: Option<i32>, signal: Option<i32>, stderr: &str) -> ExecResult {
        ExecResult {
            pid: 1,
            exit_code,
            signal,
            timed_out: false,
            duration_ms: 1,
            stdout: String::new(),
            stderr: stderr.into(),
            stdout_dropped: 0,
            stderr_dropped: 0,
            observed_policies: Vec::new(),
            observed_cgroups: Default::default(),
            task_stats: None,
        }
    }

    #[test]
    fn tails_and_endings() {
        assert_eq!(tail("a\n\nb\nc\n  \nd\n", 3), "b | c | d");
        assert_eq!(tail("", 3), "");
        let res = ended(Some(7), None, "x\nbroken\n");
        assert_eq!(
            CommandFailed::of_exec("hackbench", &res, 60).to_string(),
            "hackbench exited with status 7: x | broken"
        );
        let killed = ended(None, Some(9), "");
        assert_eq!(CommandFailed::of_exec("t", &killed, 60).how, "was killed by signal 9");
        let out = std::process::Command::new("sh")
            .args(["-c", "echo out; echo err >&2; exit 3"])
            .output()
            .unwrap();
        assert_eq!(
            CommandFailed::of_output("sh", &out).to_string(),
            "sh exited with status 3: out | err"
        );
    }
}
