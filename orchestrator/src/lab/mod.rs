//! The local lab: qemu VMs on this machine standing in for a SUT. A VM boots a kernel with
//! an initramfs that kreg builds (see [`initramfs`]); its agent is reached through a
//! loopback port that qemu forwards to the guest. The controller always connects to the
//! agent, never the guest out.

pub mod cpio;
pub mod initramfs;
pub mod machine;

use crate::boot::{wait_for_agent, Watch};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::Identity;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("{0}")]
    Msg(String),
}

/// What a VM needs to start.
#[derive(Debug, Clone)]
pub struct VmSpec {
    pub vmlinuz: PathBuf,
    pub initrd: PathBuf,
    pub cpus: u32,
    pub memory_mib: u32,
    /// Under TCG, a host thread per vCPU (true: real parallelism) or one for all (false).
    /// With a thread per vCPU, QEMU 7.2 now and then runs stale guest code while the kernel
    /// patches its own text (`text_poke_bp`): guests died of an `int3` oops in
    /// `sched_clock_cpu` at boot (6.1 and 6.12) and on a write to sched_features.
    pub parallel: bool,
    /// "tcg", "kvm", or "auto": KVM where /dev/kvm opens, falling back to TCG when the VM
    /// dies under KVM before its agent answers.
    pub accel: String,
    /// Holds the console log and the pid file.
    pub dir: PathBuf,
    /// The kernel command line ([`CMDLINE`] and any extra arguments).
    pub cmdline: String,
}

/// Kernel command line used for the first boot and for every kexec.
pub const CMDLINE: &str = "console=ttyS0 panic=-1 quiet";

/// A running VM. Dropping it kills qemu.
pub struct Vm {
    child: Child,
    pub port: u16,
    pub console: PathBuf,
    /// qemu's own messages.
    stderr: PathBuf,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm")
            .field("port", &self.port)
            .field("pid", &self.child.id())
            .finish()
    }
}

fn free_port() -> Result<u16, LabError> {
    let l =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| LabError::Msg(format!("no free loopback port: {e}")))?;
    Ok(l.local_addr().map_err(|e| LabError::Msg(e.to_string()))?.port())
}

/// Starts `cmd` so that it is killed when the process that started it dies
/// (PR_SET_PDEATHSIG): a killed controller leaves no VM behind.
pub(crate) fn spawn_tied(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn()
}

impl Vm {
    /// Starts qemu. It dies with the process that started it (PR_SET_PDEATHSIG), so a
    /// killed controller leaves no VM behind.
    pub fn start(spec: &VmSpec) -> Result<Vm, LabError> {
        std::fs::create_dir_all(&spec.dir).map_err(|e| LabError::Msg(format!("{}: {e}", spec.dir.display())))?;
        let port = free_port()?;
        let console = spec.dir.join("console.log");
        // With a host thread per vCPU (QEMU's default), a guest CPU now and then runs stale
        // code while another patches kernel text (text_poke_bp): Debian's 6.12 died of an
        // int3 oops at boot and on a write to sched_features that way. One thread for all
        // vCPUs avoids it, at the cost of parallelism.
        let accel = match (spec.accel.as_str(), spec.parallel) {
            ("kvm", _) => "kvm",
            (_, true) => "tcg",
            (_, false) => "tcg,thread=single",
        };
        let cpu = if spec.accel == "kvm" { "host" } else { "max" };
        let mut cmd = Command::new("qemu-system-x86_64");
        cmd.args([
            "-accel",
            accel,
            "-cpu",
            cpu,
            "-nodefaults",
            "-no-reboot",
            "-display",
            "none",
        ])
        .args(["-smp", &spec.cpus.to_string(), "-m", &spec.memory_mib.to_string()])
        .arg("-kernel")
        .arg(&spec.vmlinuz)
        .arg("-initrd")
        .arg(&spec.initrd)
        .arg("-append")
        .arg(&spec.cmdline)
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .args([
            "-netdev",
            &format!(
                "user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:{}",
                initramfs::GUEST_AGENT_PORT
            ),
        ])
        .args(["-device", "virtio-net-pci,netdev=n0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(spec.dir.join("qemu.stderr")).map_err(|e| LabError::Msg(e.to_string()))?,
        ));
        let child = spawn_tied(&mut cmd).map_err(|e| {
            LabError::Msg(format!(
                "cannot start qemu-system-x86_64 (install qemu-system-x86): {e}"
            ))
        })?;
        Ok(Vm {
            child,
            port,
            console,
            stderr: spec.dir.join("qemu.stderr"),
        })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whether qemu still runs; when it has ended, its exit status. A guest that KVM could
    /// not run (qemu says "KVM internal error" and pauses it for good, as a nested KVM does
    /// on some hosts) counts as ended: qemu is killed.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => {
                let said = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                let line = said.lines().find(|l| l.starts_with("KVM internal error"))?;
                let _ = self.child.kill();
                let _ = self.child.wait();
                Some(format!("qemu paused the guest: {line}"))
            }
            Err(e) => Some(e.to_string()),
        }
    }

    /// The last lines the guest printed on its serial console.
    pub fn console_tail(&self, lines: usize) -> String {
        console_tail(&self.console, lines)
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn console_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Watch for Vm {
    fn died(&mut self) -> Option<String> {
        self.exited().map(|status| format!("the VM stopped ({status})"))
    }

    fn console(&self) -> String {
        self.console_tail(25)
    }
}

/// Set once KVM has failed in this process, so later boots go straight to TCG.
static KVM_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How long a guest under KVM has to answer: it boots in seconds where KVM works. Some
/// nested KVMs run a guest without error and without progress.
const KVM_GRACE: Duration = Duration::from_secs(90);

/// A file that says KVM failed a guest since this machine booted: later kreg processes
/// skip it too (the machine's boot id in its name).
fn kvm_failed_marker() -> Option<PathBuf> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(crate::config::temp_dir().join(format!("kreg-kvm-failed.{}", boot.trim())))
}

fn mark_kvm_failed() {
    KVM_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(m) = kvm_failed_marker() {
        let _ = std::fs::write(m, "KVM failed a lab guest on this boot of the machine; kreg uses TCG\n");
    }
}

fn kvm_usable() -> bool {
    !KVM_FAILED.load(std::sync::atomic::Ordering::Relaxed)
        && !kvm_failed_marker().is_some_and(|m| m.exists())
        && std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok()
}

/// Starts a VM and waits for its agent. With accel "auto", tries KVM first where it can
/// and falls back to TCG if the VM dies under KVM before answering. A VM that dies under
/// TCG before answering is started once more: the emulator crashes a guest now and then
/// (text patching at boot), as it does a kexec; the error says so when the retry fails too.
pub async fn boot(spec: &VmSpec, token: &str, timeout: Duration) -> Result<(Vm, AgentClient, Identity), LabError> {
    let accels: Vec<&str> = match spec.accel.as_str() {
        "auto" if kvm_usable() => vec!["kvm", "tcg", "tcg"],
        "auto" | "tcg" => vec!["tcg", "tcg"],
        other => vec![other],
    };
    let mut last_error = String::new();
    for (n, accel) in accels.iter().enumerate() {
        let attempt = VmSpec {
            accel: accel.to_string(),
            ..spec.clone()
        };
        let mut vm = Vm::start(&attempt)?;
        let client = AgentClient::new(&vm.url(), token);
        let retry_left = n + 1 < accels.len();
        let falls_back = *accel == "kvm" && spec.accel == "auto";
        let wait = if falls_back { timeout.min(KVM_GRACE) } else { timeout };
        match wait_for_agent(&client, None, wait, Some(&mut vm as &mut dyn Watch)).await {
            Ok(id) => return Ok((vm, client, id)),
            Err(e) if falls_back => {
                drop(vm);
                mark_kvm_failed();
                eprintln!("kreg: {}", kvm_unusable(&e.to_string()));
                last_error = e.to_string();
            }
            Err(e) if retry_left && vm.exited().is_some() => {
                if *accel == "kvm" {
                    mark_kvm_failed();
                    eprintln!("kreg: {}", kvm_unusable(&e.to_string()));
                    last_error = e.to_string();
                } else {
                    eprintln!("kreg: the lab VM died before its agent answered; starting it once more");
                    last_error = format!("{e}\nstarted once more: ");
                }
            }
            Err(e) if last_error.ends_with("started once more: ") => {
                return Err(LabError::Msg(format!("{last_error}{e}")))
            }
            Err(e) => return Err(LabError::Msg(e.to_string())),
        }
    }
    Err(LabError::Msg(last_error))
}

/// What the user is told when KVM does not run the guest: information, not a failure.
fn kvm_unusable(why: &str) -> String {
    let why = why.lines().next().unwrap_or("no answer");
    format!(
        "note: KVM unusable here ({why}); using TCG, about 50x slower, for this and later boots \
         until the machine reboots (KREG_LAB_ACCEL=tcg skips the KVM attempt)"
    )
}
