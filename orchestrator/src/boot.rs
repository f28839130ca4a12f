//! The boot seam: how a host got onto a boot, whether that boot runs the kernel asked for,
//! and waiting for a host's agent to answer from a new boot. Real machines and the lab's
//! VMs both go through here; neither depends on the other.

use std::time::Duration;

use kreg_agent::client::AgentClient;
use kreg_agent::wire::Identity;

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
}

/// What can be watched while a host boots: a VM that may die, with its console.
pub trait Watch: Send {
    /// How it died (e.g. "the VM stopped (exit status: 1)"), once it has.
    fn died(&mut self) -> Option<String>;
    /// The last lines it printed.
    fn console(&self) -> String;
}

/// Whether `id` is the boot of `p`: its release and, for kreg's builds, its build string.
pub fn check_booted(p: &Prepared, id: &Identity) -> Result<(), String> {
    if id.kernel_release != p.release {
        return Err(format!("booted {}, expected {}", id.kernel_release, p.release));
    }
    if let Some(uts) = p.built.as_ref().and_then(|b| b.uts_version.as_ref()) {
        if !id.proc_version.contains(uts.as_str()) {
            return Err(format!(
                "/proc/version is {:?}, not the build kreg made ({uts})",
                id.proc_version
            ));
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

/// Waits until the agent answers with a boot id other than `old_boot_id` (when given), or
/// until `timeout`. A watched host (a VM) that dies meanwhile ends the wait at once.
pub async fn wait_for_agent(
    client: &AgentClient,
    old_boot_id: Option<&str>,
    timeout: Duration,
    mut watch: Option<&mut dyn Watch>,
) -> Result<Identity, String> {
    let waited = until(timeout, Duration::from_millis(500), async || {
        if let Some(w) = watch.as_deref_mut() {
            if let Some(death) = w.died() {
                let console = w.console();
                return Look::Failed(if console.is_empty() {
                    format!("{death} before its agent answered")
                } else {
                    format!("{death} before its agent answered; console:\n{console}")
                });
            }
        }
        match client.identity().await {
            Ok(id) if Some(id.boot_id.as_str()) != old_boot_id => Look::Ready(id),
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
            Err(format!("not back within {}s (last: {last}){console}", limit.as_secs()))
        }
    }
}
