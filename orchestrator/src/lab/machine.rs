//! The lab *machine*: a qemu guest that behaves like a real SUT, for exercising what kreg
//! does to real machines. It boots from a disk (GRUB in the MBR, Debian with its own
//! initramfs-tools) that `scripts/lab-machine.sh` makes once; each machine runs on a qcow2
//! overlay of that golden image, so nothing it does reaches the image. kreg talks to it
//! over http like to any other host; its monitor socket gives a `reset` command, the
//! stand-in for a BMC's power cycle. Unlike the lab VM, it reboots like a machine does
//! (no `-no-reboot`): a guest reboot goes back through the firmware and GRUB.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::LabError;

fn err(s: impl Into<String>) -> LabError {
    LabError::Msg(s.into())
}

#[derive(Debug, Clone)]
pub struct MachineSpec {
    /// The golden disk image (raw) made by scripts/lab-machine.sh.
    pub golden: PathBuf,
    /// Holds the overlay, the agent disk, the console log and the monitor socket.
    pub dir: PathBuf,
    /// The agent the machine's init starts at every boot (with `token`), if any: without
    /// one, the machine runs only sshd and waits for kreg to install its agent over SSH.
    pub agent_bin: Option<PathBuf>,
    pub token: String,
    /// root's authorized_keys, for logins over SSH.
    pub authorized_keys: Option<String>,
    pub cpus: u32,
    pub memory_mib: u32,
    /// Threads per core: 2 gives the guest an SMT topology (`-smp N,threads=2`).
    pub threads_per_core: u32,
    /// A second NIC on a LAN to the other machines of a rehearsal, with addresses of its own.
    pub lan: Option<Lan>,
}

/// A machine's NIC on a point-to-point lab LAN: qemu's `dgram` netdev from a UDP port of
/// this host to its peer's, so that the two guests exchange Ethernet frames directly.
#[derive(Debug, Clone)]
pub struct Lan {
    pub local_port: u16,
    pub peer_port: u16,
    /// Its MAC address (each machine of a LAN a different one).
    pub mac: String,
    /// `ADDRESS/PREFIX`, put on the NIC at every boot by the machine's init.
    pub addresses: Vec<String>,
}

impl Lan {
    /// The two ends of a new LAN: (the first machine's, the second's), without addresses.
    pub fn pair() -> Result<(Lan, Lan), LabError> {
        let (a, b) = (free_udp_port()?, free_udp_port()?);
        let end = |local_port, peer_port, last: u8| Lan {
            local_port,
            peer_port,
            mac: format!("52:54:00:4b:52:{last:02x}"),
            addresses: Vec::new(),
        };
        Ok((end(a, b, 1), end(b, a, 2)))
    }
}

/// The MAC of a machine's NIC to the controller (qemu's user network), as its init finds it.
const USER_NIC_MAC: &str = "52:54:00:12:34:56";

fn free_udp_port() -> Result<u16, LabError> {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| err(format!("no free loopback UDP port: {e}")))?;
    Ok(s.local_addr().map_err(|e| err(e.to_string()))?.port())
}

/// A running lab machine. Dropping it kills qemu.
pub struct Machine {
    child: Child,
    pub port: u16,
    /// Forwarded to the machine's sshd (port 22).
    pub ssh_port: u16,
    pub console: PathBuf,
    pub monitor: PathBuf,
}

fn run(cmd: &mut Command, what: &str) -> Result<(), LabError> {
    let out = cmd.output().map_err(|e| err(format!("{what}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(err(crate::failure::CommandFailed::of_output(what, &out).to_string()))
    }
}

/// The machine's disks: a copy-on-write overlay of the golden image, and a small ext2
/// disk with kreg-agent and its token, and root's authorized_keys (the guest's init copies
/// them at each boot).
fn disks(spec: &MachineSpec) -> Result<(PathBuf, PathBuf), LabError> {
    let dir = &spec.dir;
    let overlay = dir.join("disk.qcow2");
    let _ = std::fs::remove_file(&overlay);
    run(
        Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2", "-F", "raw", "-b"])
            .arg(&spec.golden)
            .arg(&overlay),
        "qemu-img create (install qemu-utils)",
    )?;
    let agent_dir = dir.join("agent-disk");
    let _ = std::fs::remove_dir_all(&agent_dir);
    std::fs::create_dir_all(&agent_dir).map_err(|e| err(e.to_string()))?;
    if let Some(bin) = &spec.agent_bin {
        std::fs::copy(bin, agent_dir.join("kreg-agent")).map_err(|e| err(format!("{}: {e}", bin.display())))?;
        std::fs::write(agent_dir.join("token"), format!("{}\n", spec.token)).map_err(|e| err(e.to_string()))?;
    }
    if let Some(lan) = &spec.lan {
        let text = std::iter::once(lan.mac.as_str())
            .chain(lan.addresses.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(agent_dir.join("lan"), text + "\n").map_err(|e| err(e.to_string()))?;
    }
    if let Some(keys) = &spec.authorized_keys {
        std::fs::write(agent_dir.join("authorized_keys"), keys).map_err(|e| err(e.to_string()))?;
    }
    let agent_img = dir.join("agent.img");
    let _ = std::fs::remove_file(&agent_img);
    run(
        Command::new("mke2fs")
            .args(["-F", "-q", "-t", "ext2", "-d"])
            .arg(&agent_dir)
            .arg(&agent_img)
            .arg("64M"),
        "mke2fs of the agent disk",
    )?;
    let _ = std::fs::remove_dir_all(&agent_dir);
    Ok((overlay, agent_img))
}

/// qemu's `-smp`: the CPU count, and with SMT two threads per core.
fn smp(spec: &MachineSpec) -> String {
    match spec.threads_per_core {
        0 | 1 => spec.cpus.to_string(),
        t => format!("{},sockets=1,cores={},threads={t}", spec.cpus, spec.cpus.div_ceil(t)),
    }
}

impl Machine {
    pub fn start(spec: &MachineSpec) -> Result<Machine, LabError> {
        let dir = &spec.dir;
        std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        if !spec.golden.is_file() {
            return Err(err(format!(
                "{} does not exist: make it with `bash scripts/lab-machine.sh {}`",
                spec.golden.display(),
                spec.golden.parent().unwrap_or(Path::new(".")).display()
            )));
        }
        let (overlay, agent_img) = disks(spec)?;

        let port = super::free_port()?;
        let ssh_port = super::free_port()?;
        let console = dir.join("console.log");
        let monitor = dir.join("monitor.sock");
        let _ = std::fs::remove_file(&monitor);
        let mut cmd = Command::new("qemu-system-x86_64");
        // One host thread for all vCPUs: with a thread per vCPU, QEMU now and then runs
        // stale guest code while the kernel patches its own text, and a kexec'd kernel dies
        // of an int3 oops at boot (see `super::VmSpec::parallel`).
        cmd.args([
            "-accel",
            "tcg,thread=single",
            "-cpu",
            "max",
            "-nodefaults",
            "-display",
            "none",
        ])
        .args(["-smp", &smp(spec), "-m", &spec.memory_mib.to_string()])
        .arg("-drive")
        .arg(format!("file={},format=qcow2,if=virtio", overlay.display()))
        .arg("-drive")
        .arg(format!("file={},format=raw,if=virtio,readonly=on", agent_img.display()))
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-monitor")
        .arg(format!("unix:{},server=on,wait=off", monitor.display()))
        .args([
            "-netdev",
            &format!(
                "user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:{},hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
                super::initramfs::GUEST_AGENT_PORT
            ),
        ])
        .args(["-device", &format!("virtio-net-pci,netdev=n0,mac={USER_NIC_MAC}")]);
        if let Some(lan) = &spec.lan {
            cmd.args([
                "-netdev",
                &format!(
                    "dgram,id=lan,local.type=inet,local.host=127.0.0.1,local.port={},remote.type=inet,remote.host=127.0.0.1,remote.port={}",
                    lan.local_port, lan.peer_port
                ),
            ])
            .args(["-device", &format!("virtio-net-pci,netdev=lan,mac={}", lan.mac)]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::from(
            std::fs::File::create(dir.join("qemu.stderr")).map_err(|e| err(e.to_string()))?,
        ));
        let child = super::spawn_tied(&mut cmd).map_err(|e| err(format!("cannot start qemu-system-x86_64: {e}")))?;
        Ok(Machine {
            child,
            port,
            ssh_port,
            console,
            monitor,
        })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The known_hosts line of the machine's sshd, from the host key the image was made
    /// with (`ssh_host_ed25519_key.pub` beside the golden image).
    pub fn known_hosts_line(golden: &Path, ssh_port: u16) -> Result<String, LabError> {
        let pub_file = golden.with_file_name("ssh_host_ed25519_key.pub");
        let text = std::fs::read_to_string(&pub_file).map_err(|e| {
            err(format!(
                "{}: {e} (made by scripts/lab-machine.sh; run it again)",
                pub_file.display()
            ))
        })?;
        let mut words = text.split_whitespace();
        match (words.next(), words.next()) {
            (Some(kind), Some(key)) => Ok(format!("[127.0.0.1]:{ssh_port} {kind} {key}")),
            _ => Err(err(format!("{}: not a public key", pub_file.display()))),
        }
    }

    /// Presses the machine's reset button (qemu's `system_reset` on the monitor).
    pub fn reset(&self) -> Result<(), LabError> {
        reset(&self.monitor)
    }

    pub fn console_tail(&self, lines: usize) -> String {
        super::console_tail(&self.console, lines)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `system_reset` on a qemu monitor socket. The monitor takes a command only once it has
/// shown its prompt, and runs it before the next prompt: both are waited for, or a command
/// sent to a connection closed at once can be lost.
pub fn reset(monitor: &Path) -> Result<(), LabError> {
    use std::io::Write;
    let mut s = std::os::unix::net::UnixStream::connect(monitor)
        .map_err(|e| err(format!("monitor {}: {e}", monitor.display())))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).ok();
    read_until_prompt(&mut s, monitor)?;
    s.write_all(b"system_reset\n").map_err(|e| err(e.to_string()))?;
    read_until_prompt(&mut s, monitor)
}

fn read_until_prompt(s: &mut std::os::unix::net::UnixStream, monitor: &Path) -> Result<(), LabError> {
    use std::io::Read;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    while !seen.windows(7).any(|w| w == b"(qemu) ") {
        let n = s
            .read(&mut chunk)
            .map_err(|e| err(format!("monitor {}: no prompt: {e}", monitor.display())))?;
        if n == 0 {
            return Err(err(format!("monitor {} closed", monitor.display())));
        }
        seen.extend_from_slice(&chunk[..n]);
    }
    Ok(())
}
