//! The boot seam: how a host got onto a boot, whether that boot runs the kernel asked for,
//! and waiting for a host's agent to answer from a new boot. Real machines and the lab's
//! VMs both go through here; neither depends on the other.

use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::Identity;

use crate::kernel::Prepared;
use crate::poll::{until, Look, Waited};
use crate::scenario::Kernel;

/// What a host is to boot: a kernel, prepared (or none, to stay on the running one), within
/// a time limit.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub kernel: &'a Kernel,
    pub prepared: Option<&'a Prepared>,
    pub timeout: Duration,
    /// A new boot even when the host runs this kernel already (the next of its `boots`).
    pub fresh: bool,
    /// A boot that crashes is tried once more before it fails (a lab guest that the
    /// emulator crashed now and then); false where the caller tries again itself and counts
    /// each failed boot (a bisection's measurement, under its `boot_tries`).
    pub retry_crash: bool,
}

/// What can be watched while a host boots: a VM that may die, with its console.
pub trait Watch: Send {
    /// How it died (e.g. "the VM stopped (exit status: 1)"), once it has.
    fn died(&mut self) -> Option<String>;
    /// The last lines it printed.
    fn console(&self) -> String;
}

/// Whether `id` is the boot of `p`: its release and, for kreg's builds, its build string.
/// What [`check_booted`] says of another kernel than the one asked for (a failure the
/// kernel is blamed for: it hung and the machine fell back, or it is another build).
pub const NOT_ASKED: [&str; 2] = ["booted ", ", expected "];
pub const NOT_THE_BUILD: &str = "not the build kreg made";

pub fn check_booted(p: &Prepared, id: &Identity) -> Result<(), BootError> {
    if id.kernel_release != p.release {
        return Err(BootError::NotAsked(format!(
            "booted {}, expected {}",
            id.kernel_release, p.release
        )));
    }
    if let Some(uts) = p.built.as_ref().and_then(|b| b.uts_version.as_ref()) {
        if !id.proc_version.contains(uts.as_str()) {
            return Err(BootError::NotAsked(format!(
                "/proc/version is {:?}, {NOT_THE_BUILD} ({uts})",
                id.proc_version
            )));
        }
    }
    Ok(())
}

/// How a host got onto the boot that runs a kernel's jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootMethod {
    /// It already ran the kernel asked for.
    None,
    /// The lab started a VM with the kernel.
    Start,
    Kexec,
    /// A one-shot GRUB entry and a reboot.
    GrubReboot,
}

impl BootMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            BootMethod::None => "none",
            BootMethod::Start => "start",
            BootMethod::Kexec => "kexec",
            BootMethod::GrubReboot => "grub-reboot",
        }
    }
}

/// How a boot went wrong: a wait for a new boot that ended without one, or a boot that is
/// not the one asked for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BootError {
    /// The agent answers from the old boot, started after the boot step was sent: it was
    /// killed (or restarted) before the machine rebooted, and nothing reboots it now.
    #[error("the agent answers again from the old boot, started {agent_uptime_secs:.1} s ago, after the boot step was sent: it was restarted before the machine rebooted")]
    AgentRestarted { agent_uptime_secs: f64 },
    /// It did not come back in time, or its VM died: why.
    #[error("{0}")]
    Failed(String),
    /// It came back on another kernel, or another build of it: what it runs.
    #[error("{0}")]
    NotAsked(String),
}

/// Waits until the agent answers with a boot id other than `old_boot_id` (when given), or
/// until `timeout`. A watched host (a VM) that dies meanwhile ends the wait at once.
pub async fn wait_for_agent(
    client: &AgentClient,
    old_boot_id: Option<&str>,
    timeout: Duration,
    watch: Option<&mut dyn Watch>,
) -> Result<Identity, BootError> {
    wait(client, old_boot_id, None, timeout, watch).await
}

/// [`wait_for_agent`] after a boot step sent at `sent` from the boot `old_boot_id`; it also
/// ends, with [`BootError::AgentRestarted`], as soon as the agent answers from the old boot
/// having started after the step was sent (killed mid-kexec, say): the step may then be
/// sent again, since that machine did not reboot.
pub async fn wait_for_reboot(
    client: &AgentClient,
    old_boot_id: &str,
    sent: std::time::Instant,
    timeout: Duration,
    watch: Option<&mut dyn Watch>,
) -> Result<Identity, BootError> {
    wait(client, Some(old_boot_id), Some(sent), timeout, watch).await
}

async fn wait(
    client: &AgentClient,
    old_boot_id: Option<&str>,
    sent: Option<std::time::Instant>,
    timeout: Duration,
    mut watch: Option<&mut dyn Watch>,
) -> Result<Identity, BootError> {
    let waited = until(timeout, Duration::from_millis(500), async || {
        if let Some(w) = watch.as_deref_mut() {
            if let Some(death) = w.died() {
                let console = w.console();
                return Look::Failed(BootError::Failed(if console.is_empty() {
                    format!("{death} before its agent answered")
                } else {
                    format!("{death} before its agent answered; console:\n{console}")
                }));
            }
        }
        match client.identity().await {
            Ok(id) if Some(id.boot_id.as_str()) != old_boot_id => Look::Ready(id),
            Ok(id) if sent.is_some_and(|t| restarted_since(id.agent_uptime_secs, t.elapsed())) => {
                Look::Failed(BootError::AgentRestarted {
                    agent_uptime_secs: id.agent_uptime_secs,
                })
            }
            Ok(_) => Look::NotYet("the agent still answers from the old boot".to_string()),
            Err(e) => Look::NotYet(e.to_string()),
        }
    })
    .await;
    match waited {
        Ok(id) => Ok(id),
        Err(Waited::Failed(e)) => Err(e),
        Err(Waited::TimedOut { limit, last }) => {
            let console = watch
                .map(|w| w.console())
                .filter(|c| !c.is_empty())
                .map(|c| format!("; console:\n{c}"))
                .unwrap_or_default();
            Err(BootError::Failed(format!(
                "not back within {}s (last: {last}){console}",
                limit.as_secs()
            )))
        }
    }
}

/// Whether an agent up for `agent_uptime_secs` started after a step sent `since_sent` ago
/// (an agent that answers with 0, from before agents told their uptime, never did).
fn restarted_since(agent_uptime_secs: f64, since_sent: Duration) -> bool {
    agent_uptime_secs > 0.0 && agent_uptime_secs < since_sent.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_younger_than_the_boot_step_was_restarted_after_it() {
        let s = Duration::from_secs_f64;
        // Killed 0.3 s after the step and started again: up 1.2 s, the step sent 1.5 s ago.
        assert!(restarted_since(1.2, s(1.5)));
        // The agent that took the step, still up (the reboot is 0.5 s away).
        assert!(!restarted_since(40.0, s(0.2)));
        // An agent that does not tell its uptime.
        assert!(!restarted_since(0.0, s(3.0)));
    }
}
