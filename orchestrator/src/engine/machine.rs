//! A machine kreg boots kernels on, reached over http or ssh (one `MachineConn` for both): the kernel is installed through the
//! agent (/boot/kreg, /lib/modules, the distribution's initramfs), booted by kexec or a
//! one-shot GRUB entry and verified; a kernel that is wrong or not back in time is followed
//! by a return to the machine's known-good kernel, by a reboot into its default entry or
//! its `reset:` command.

use std::path::PathBuf;
use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::{Identity, InstallRequest, Step};

use super::console::{console_lines, controller_command};
use super::error::HostError;
use super::reach::Agent;
use crate::boot::{check_booted, wait_for_agent, wait_for_reboot, BootError, BootMethod, Target};
use crate::kernel::Prepared;
use crate::scenario::{BootVia, Kernel};

/// A machine reached over http. Kernels are installed on it and booted by kexec or a
/// one-shot GRUB entry. The boot it was on when the run reached it is its known-good
/// kernel: after a kernel that is wrong or not back in time, kreg brings the machine back
/// there (a reboot into the default entry, or the `reset` command when it does not answer)
/// and the run goes on with the next kernel.
pub struct MachineConn {
    name: String,
    /// The machine's agent, how it is reached, and how the scenario says to boot, reset and
    /// watch it.
    agent: Agent,
    known_good: Option<Identity>,
    /// The last boot kreg made on this machine: (boot id, image, command line).
    booted: Option<(String, PathBuf, String)>,
    /// Why the machine is lost to this run, once it is: later kernels fail at once.
    down: Option<String>,
    /// How it is reached (`http URL`, `ssh USER@HOST:PORT …`).
    reached: String,
}

impl MachineConn {
    pub fn new(name: &str, agent: Agent) -> MachineConn {
        MachineConn {
            name: name.to_string(),
            reached: agent.reach.describe(),
            agent,
            known_good: None,
            booted: None,
            down: None,
        }
    }

    pub fn reached(&self) -> &str {
        &self.reached
    }

    /// The agent, unless the machine is lost to the run.
    pub fn client(&self) -> Option<&AgentClient> {
        self.down.is_none().then_some(&self.agent.client)
    }

    pub(super) async fn boot(&mut self, target: Target<'_>) -> Result<(Identity, BootMethod), HostError> {
        let Target {
            kernel,
            prepared,
            timeout,
            fresh,
            // A real machine's boot is not retried here: the run or the bisection decides.
            retry_crash: _,
        } = target;
        if let Some(reason) = &self.down {
            return Err(format!("host {} is lost to this run: {reason}", self.name).into());
        }
        let id = self
            .agent
            .client
            .identity()
            .await
            .map_err(|e| format!("host {}: {e}", self.name))?;
        let good = self.known_good.get_or_insert_with(|| id.clone()).clone();
        let Some(p) = prepared else {
            return Ok((id, BootMethod::None));
        };
        if self.runs_already(kernel, p, &id, timeout).await? {
            if !fresh {
                return Ok((id, BootMethod::None));
            }
            // The next boot of the kernel it runs: booted again as it was, not reinstalled.
            return self.switch(kernel, p, &good.cmdline, timeout, false).await;
        }
        self.switch(kernel, p, &good.cmdline, timeout, true).await
    }

    /// Whether the machine runs `p` with the kernel's command line already. When it runs
    /// another kernel of that release that kreg booted, it goes back to the known-good
    /// kernel first (and this says no); kreg never installs over the machine's own.
    async fn runs_already(
        &mut self,
        kernel: &Kernel,
        p: &Prepared,
        id: &Identity,
        timeout: Duration,
    ) -> Result<bool, HostError> {
        if id.kernel_release != p.release {
            return Ok(false);
        }
        let extra = kernel.cmdline.as_deref().unwrap_or("");
        let cmdline_ok = extra
            .split_whitespace()
            .all(|w| id.cmdline.split_whitespace().any(|c| c == w));
        match &self.booted {
            // kreg booted this boot: it is the same kernel if it is the same image.
            Some((boot_id, image, _)) if *boot_id == id.boot_id => {
                if *image == p.vmlinuz && cmdline_ok {
                    return Ok(true);
                }
                // Another kernel of the same release: back to the known-good one first.
                self.recover(timeout)
                    .await
                    .map_err(|e| format!("kernel {}: {e}", kernel.name))?;
                Ok(false)
            }
            // The machine's own kernel.
            _ if check_booted(p, id).is_ok() && cmdline_ok => Ok(true),
            _ => Err(format!(
                "kernel {}: the host runs release {} already, but not this build or command line, and kreg does not install over the running kernel; boot another kernel first",
                kernel.name, p.release
            ).into()),
        }
    }

    /// Sends the step that boots `release` (kexec or grub-reboot, as the host says). A
    /// step refused leaves the machine where it is (an error); an answer lost with the
    /// connection is not a refusal: the machine may be rebooting, and a reboot step is never
    /// sent twice, so the new boot id decides. Returns why the answer was lost, if it was.
    async fn boot_step(&self, release: &str, cmdline: &str, what: &str) -> Result<Option<String>, HostError> {
        let (release, cmdline) = (release.to_string(), cmdline.to_string());
        let step = match self.agent.machine.boot {
            BootVia::Kexec => Step::KexecInstalled { release, cmdline },
            BootVia::GrubReboot => Step::GrubReboot { release, cmdline },
        };
        match self.agent.client.boot_installed(step).await {
            Ok(()) => Ok(None),
            Err(e) if e.is_unreachable() => {
                tracing::warn!(host = %self.name, "{what}: the answer was lost ({e}); waiting for a new boot id");
                Ok(Some(e.to_string()))
            }
            Err(e) => Err(format!("{what}: {e}").into()),
        }
    }

    /// Installs `p`, boots it once (kexec or grub-reboot) with the known-good command line
    /// and the kernel's extra arguments, and checks the new boot. A boot that fails puts the
    /// machine back on its known-good kernel, and the error says what the console showed.
    async fn switch(
        &mut self,
        kernel: &Kernel,
        p: &Prepared,
        good_cmdline: &str,
        timeout: Duration,
        install: bool,
    ) -> Result<(Identity, BootMethod), HostError> {
        let before = self
            .agent
            .client
            .identity()
            .await
            .map_err(|e| format!("host {}: {e}", self.name))?;
        if install {
            self.install(p)
                .await
                .map_err(|e| format!("kernel {}: install on {}: {e}", kernel.name, self.name))?;
        }
        let cmdline = kexec_cmdline(good_cmdline, kernel.cmdline.as_deref().unwrap_or(""));
        let method = match self.agent.machine.boot {
            BootVia::Kexec => BootMethod::Kexec,
            BootVia::GrubReboot => BootMethod::GrubReboot,
        };
        let what = format!(
            "kernel {}: {} into {} on {}",
            kernel.name,
            method.as_str(),
            p.release,
            self.name
        );
        let mut watch = match &self.agent.machine.console {
            Some(argv) => Some(super::console::ConsoleWatch::start(argv.clone()).await),
            None => None,
        };
        let mut again = false;
        let waited = loop {
            let sent = std::time::Instant::now();
            let lost_answer = self.boot_step(&p.release, &cmdline, &what).await?;
            let watching = watch.as_mut().map(|w| w as &mut dyn crate::boot::Watch);
            match wait_for_reboot(&self.agent.client, &before.boot_id, sent, timeout, watching).await {
                // Killed before the machine rebooted: it did not, so the step is sent again.
                Err(e @ BootError::AgentRestarted { .. }) if !again => {
                    again = true;
                    tracing::warn!(host = %self.name, "{what}: {e}; sending the boot step again");
                }
                waited => {
                    break waited.map_err(|e| match &lost_answer {
                        Some(lost) => format!("{e} (the answer to the boot step was lost: {lost})"),
                        None => e.to_string(),
                    })
                }
            }
        };
        let detail = match waited {
            Ok(new) => match check_booted(p, &new) {
                Ok(()) => {
                    self.booted = Some((new.boot_id.clone(), p.vmlinuz.clone(), cmdline));
                    return Ok((new, method));
                }
                Err(wrong) => wrong.to_string(),
            },
            Err(e) => e,
        };
        // What the failed boot printed, read before the recovery adds its own.
        let console = self.console_tail().await;
        let next = match self.recover(timeout).await {
            Ok(back) => back,
            Err(lost) => lost.to_string(),
        };
        Err(match console {
            Some(c) => format!("{what}: {detail}; {next}; console:\n{c}").into(),
            None => format!("{what}: {detail}; {next}").into(),
        })
    }

    /// The last lines of the machine's console, from its `console:` command.
    async fn console_tail(&self) -> Option<String> {
        let argv = self.agent.machine.console.as_ref()?;
        Some(
            match controller_command(argv, "console", Duration::from_secs(30)).await {
                Ok(text) => console_lines(&text, 25),
                Err(e) => format!("({e})"),
            },
        )
    }

    /// Makes room for `release`: removes kreg's oldest kernels on the machine until, with
    /// this one, no more than `keep_kernels` are installed (a running one is never removed
    /// nor counted). Returns the releases removed.
    async fn prune(&self, release: &str) -> Result<Vec<String>, HostError> {
        let (running, kernels) = self.agent.client.installed_kernels().await?;
        let others: Vec<&str> = kernels
            .iter()
            .map(|k| k.release.as_str())
            .filter(|r| *r != release && *r != running)
            .collect();
        let excess = (others.len() + 1).saturating_sub(self.agent.machine.keep_kernels.max(1) as usize);
        let mut removed = Vec::new();
        // Oldest first, as the agent lists them.
        for old in others.into_iter().take(excess) {
            self.agent
                .client
                .step(
                    Step::RemoveKernel {
                        release: old.to_string(),
                    },
                    Duration::from_secs(120),
                )
                .await
                .map_err(|e| format!("removing kernel {old}: {e}"))?;
            removed.push(old.to_string());
        }
        if !removed.is_empty() {
            tracing::info!(host = %self.name, removed = ?removed, keep = self.agent.machine.keep_kernels, "removed kreg's oldest kernels");
        }
        Ok(removed)
    }

    /// Uploads the kernel's files and has the agent install them.
    async fn install(&self, p: &Prepared) -> Result<(), HostError> {
        let tag = &p.release;
        self.prune(tag).await?;
        let upload = |name: String, path: PathBuf| async move {
            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?;
            self.agent
                .client
                .upload(&name, bytes)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<String, String>(name)
        };
        let image = upload(format!("vmlinuz-{tag}"), p.vmlinuz.clone()).await?;
        // kreg's build folder, or the boot/ folder of an unpacked package (the initramfs
        // tool reads the config to learn which compressions the kernel takes).
        let (map, config) = match (&p.built, &p.modules_dir) {
            (Some(b), _) => (b.dir.join("System.map"), b.config_path()),
            (None, Some(m)) => {
                let root = m.ancestors().nth(3).unwrap_or(m);
                (
                    root.join(format!("boot/System.map-{tag}")),
                    root.join(format!("boot/config-{tag}")),
                )
            }
            (None, None) => (PathBuf::new(), PathBuf::new()),
        };
        let system_map = match map.is_file() {
            true => Some(upload(format!("System.map-{tag}"), map).await?),
            false => None,
        };
        let config = match config.is_file() {
            true => Some(upload(format!("config-{tag}"), config).await?),
            false => None,
        };
        let modules = match &p.modules_dir {
            Some(dir) => {
                let tar = tar_modules(dir, tag).await?;
                self.agent
                    .client
                    .upload(&format!("modules-{tag}.tar.gz"), tar)
                    .await
                    .map_err(|e| e.to_string())?;
                Some(format!("modules-{tag}.tar.gz"))
            }
            None => None,
        };
        let inst = self
            .agent
            .client
            .install_kernel(InstallRequest {
                release: p.release.clone(),
                image,
                system_map,
                config,
                modules,
            })
            .await?;
        tracing::info!(
            host = %self.name,
            kernel = %inst.kernel,
            initrd = ?inst.initrd,
            tool = ?inst.initramfs_tool,
            "kernel installed"
        );
        Ok(())
    }

    /// Brings the machine back to its known-good kernel. Ok with what happened, or Err when
    /// the machine is lost to the run (it then stays marked down).
    async fn recover(&mut self, timeout: Duration) -> Result<String, HostError> {
        let good = self.known_good.clone().expect("set before any boot");
        // A reboot or reset goes through the firmware (and, after a hang, often a journal
        // replay): it gets twice the boot timeout.
        let timeout = timeout * 2;
        let back = match self.agent.client.identity().await {
            Ok(id) if id.kernel_release == good.kernel_release => {
                self.known_good = Some(id);
                return Ok(format!("the machine is back on {}", good.kernel_release));
            }
            Ok(id) => {
                // It answers on another kernel: reboot into the default entry.
                match self.agent.client.step(Step::Reboot, Duration::from_secs(60)).await {
                    Ok(_) => wait_for_agent(&self.agent.client, Some(&id.boot_id), timeout, None)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("reboot refused: {e}")),
                }
            }
            Err(_) => match &self.agent.machine.reset {
                Some(argv) => match run_reset(argv).await {
                    Ok(()) => wait_for_agent(&self.agent.client, Some(&good.boot_id), timeout, None)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                None => Err(
                    "it does not answer and has no `reset:` command; bring it back by hand (power cycle: its default boot entry is untouched), then `kreg resume`"
                        .to_string(),
                ),
            },
        };
        match back {
            Ok(id) => {
                let note = if id.kernel_release == good.kernel_release {
                    format!("the machine is back on {} (known good)", id.kernel_release)
                } else {
                    format!(
                        "the machine is back on {}, its default entry (the run started on {})",
                        id.kernel_release, good.kernel_release
                    )
                };
                self.known_good = Some(id);
                Ok(note)
            }
            Err(e) => {
                let reason = format!("host {} could not be brought back: {e}", self.name);
                self.down = Some(reason.clone());
                Err(reason.into())
            }
        }
    }
}

/// The command line for a kreg kernel: the known-good kernel's, without what the
/// bootloader added for itself, plus the kernel entry's extra arguments.
pub fn kexec_cmdline(good: &str, extra: &str) -> String {
    let mut words: Vec<&str> = good
        .split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect();
    words.extend(extra.split_whitespace());
    words.join(" ")
}

/// `lib/modules/RELEASE` as a gzip'd tar whose members sit under `RELEASE/` (gzip -1:
/// modules shrink to a third at little cost; the agent's tar detects the compression).
async fn tar_modules(dir: &std::path::Path, release: &str) -> Result<Vec<u8>, HostError> {
    let parent = dir.parent().ok_or("modules folder has no parent")?;
    let name = dir.file_name().and_then(|n| n.to_str()).ok_or("bad modules folder")?;
    let mut cmd = tokio::process::Command::new("tar");
    cmd.arg("-C")
        .arg(parent)
        .args(["-cf", "-", "--owner=0", "--group=0", "--use-compress-program=gzip -1"]);
    if name != release {
        cmd.arg(format!("--transform=s,^{name},{release},"));
    }
    let out = cmd.arg(name).output().await.map_err(|e| format!("tar: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tar of {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(out.stdout)
}

/// Runs a host's reset command on the controller (argv, no shell), bounded to two minutes.
async fn run_reset(argv: &[String]) -> Result<(), HostError> {
    controller_command(argv, "reset", Duration::from_secs(120))
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    #[test]
    fn kexec_cmdline_drops_bootloader_words_and_appends_extras() {
        assert_eq!(
            super::kexec_cmdline(
                "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=ab ro console=ttyS0 panic=5",
                "sched_verbose nohz_full=1"
            ),
            "root=UUID=ab ro console=ttyS0 panic=5 sched_verbose nohz_full=1"
        );
    }
}
