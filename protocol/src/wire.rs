//! Wire types: everything that crosses the controller ↔ agent boundary. Every response
//! carries [`PROTOCOL_VERSION`]; a client that sees another version refuses to go on.

use serde::{Deserialize, Serialize};

/// Bumped on any incompatible change of the types in this module. 2: kernels installed,
/// listed and removed; process output polled from byte offsets. 3: files placed by the
/// agent (`place_file`), output caps, request limits with their own error kinds.
pub const PROTOCOL_VERSION: u32 = 3;

/// The header a request's lease epoch comes in (see `AgentClient::fence`): an agent
/// refuses a request of an older epoch than the highest it has seen.
pub const EPOCH_HEADER: &str = "x-kreg-epoch";

/// Answer of the unauthenticated version probe `GET /v1/version`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VersionInfo {
    pub protocol: u32,
    pub agent_version: String,
}

/// Scheduling policy applied to a child before it execs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    Other,
    Batch,
    Idle,
}

impl Policy {
    /// The kernel's number for the policy (`SCHED_OTHER` = 0, `SCHED_BATCH` = 3, `SCHED_IDLE` = 5).
    pub fn as_raw(self) -> i32 {
        match self {
            Policy::Other => 0,
            Policy::Batch => 3,
            Policy::Idle => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
        }
    }
}

/// Names a raw kernel policy number as stored in results ("other", "batch", "fifo", …).
pub fn policy_name(raw: i32) -> String {
    match raw {
        0 => "other".into(),
        1 => "fifo".into(),
        2 => "rr".into(),
        3 => "batch".into(),
        5 => "idle".into(),
        6 => "deadline".into(),
        n => format!("unknown({n})"),
    }
}

/// One typed step. The agent never builds a shell string from any of these fields.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    Identity,
    Exec(ExecRequest),
    ReadKnob {
        path: String,
    },
    WriteKnob {
        path: String,
        value: String,
    },
    Schedstat,
    /// A raw snapshot of /proc/interrupts.
    Interrupts,
    Kexec(KexecRequest),
    /// Starts a long-running process (a server) and returns at once with its id.
    Spawn(ExecRequest),
    /// Where a spawned process stands, with all its output so far.
    Poll {
        id: u64,
        /// Only the output past these absolute offsets (stdout, stderr), as the last
        /// answer's `stdout_end` and `stderr_end` gave them: long outputs are read once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<[u64; 2]>,
    },
    /// SIGTERM (SIGINT with `interrupt`) to the process group, SIGKILL after
    /// `grace_secs`; forgets the process.
    Stop {
        id: u64,
        grace_secs: u64,
        /// SIGINT instead of SIGTERM: what a program counting until interrupted (`perf
        /// stat`) reports on.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupt: bool,
    },
    /// Every thread of a process with its scheduling policy.
    Threads {
        pid: u32,
    },
    /// The TCP sockets listening on `port` in the agent's network namespace, each with the
    /// processes holding it.
    Listeners {
        port: u16,
    },
    /// Puts a kernel's files where the machine boots from: image, System.map and config in
    /// the boot directory, modules under the modules directory (depmod), and an initramfs
    /// made by the distribution's tool where there is one.
    InstallKernel(InstallRequest),
    /// `kexec` into a kernel installed by [`Step::InstallKernel`] (or by the distribution),
    /// with its initramfs; the agent reboots into it right after answering.
    KexecInstalled {
        release: String,
        cmdline: String,
    },
    /// Regenerates the GRUB menu, makes the entry of `release` the next boot only
    /// (`grub-reboot`), and reboots after answering. GRUB_DEFAULT is left alone, so the boot
    /// after that one is the machine's default again.
    GrubReboot {
        release: String,
        /// The entry's kernel command line.
        cmdline: String,
    },
    /// Reboots into the machine's default boot entry after answering.
    Reboot,
    /// kreg's kernels installed on this machine (under the boot directory's `kreg/`),
    /// oldest install first.
    InstalledKernels,
    /// Removes a kernel kreg installed, with the config, System.map and modules it owns
    /// (not those it shares with a distribution kernel of the same release). The running
    /// kernel is refused.
    RemoveKernel {
        release: String,
    },
    /// Copies a file into place with a mode: an upload (by name) or a file on the host,
    /// to an absolute destination whose folder is created when missing. Done by the agent
    /// itself, so the host needs no `install`, `cp` or `chmod`.
    PlaceFile(PlaceRequest),
    /// Kills every process started for `owner` (exec steps and their descendants, daemons
    /// included), except, with `keep_spawned`, the servers of spawn steps still in the
    /// agent's table; those without it are stopped and forgotten too. Run before a job so
    /// that nothing of an earlier attempt overlaps it.
    Sweep {
        owner: String,
        keep_spawned: bool,
        /// Also kill what this agent started for any other owner (a fleet slot taking a
        /// machine over: whatever its previous holder left). An agent older than this field
        /// ignores it.
        #[serde(default)]
        others: bool,
    },
    /// Makes a tree of cgroups v2 under `MOUNT/kreg/NAME` (see [`CgroupTree`]).
    MakeCgroups(CgroupTree),
    /// Removes `MOUNT/kreg/NAME` and everything under it.
    RemoveCgroups {
        name: String,
    },
}

/// A tree of cgroups for a job: the top `MOUNT/kreg/NAME`, then `fanout[i]` children per
/// group at level `i + 1` (`g0`, `g1`, …). The limits are written in each group of the
/// first level, or in the top when `fanout` is empty.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CgroupTree {
    pub name: String,
    #[serde(default)]
    pub fanout: Vec<u32>,
    /// Interface files and their values, e.g. `("cpu.max", "50000 100000")`.
    #[serde(default)]
    pub limits: Vec<(String, String)>,
}

/// What [`Step::MakeCgroups`] made: absolute paths.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CgroupsMade {
    pub mount: String,
    pub top: String,
    /// The groups holding the limits.
    pub limited: Vec<String>,
    /// The groups a workload's processes go into.
    pub leaves: Vec<String>,
}

/// What [`Step::PlaceFile`] copies.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum FileSource {
    /// A file uploaded to the agent, by name.
    Upload(String),
    /// An absolute path on the host (e.g. a binary built there).
    Path(String),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlaceRequest {
    pub from: FileSource,
    /// Absolute path of the file to write; replaced atomically when it exists.
    pub to: String,
    /// Permission bits, e.g. 0o755.
    pub mode: u32,
}

/// A file [`Step::PlaceFile`] wrote.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Placed {
    pub path: String,
    pub bytes: u64,
}

impl Step {
    pub fn name(&self) -> &'static str {
        match self {
            Step::Identity => "identity",
            Step::Exec(_) => "exec",
            Step::ReadKnob { .. } => "read_knob",
            Step::WriteKnob { .. } => "write_knob",
            Step::Schedstat => "schedstat",
            Step::Interrupts => "interrupts",
            Step::Kexec(_) => "kexec",
            Step::Spawn(_) => "spawn",
            Step::Poll { .. } => "poll",
            Step::Stop { .. } => "stop",
            Step::Threads { .. } => "threads",
            Step::Listeners { .. } => "listeners",
            Step::InstallKernel(_) => "install_kernel",
            Step::KexecInstalled { .. } => "kexec_installed",
            Step::GrubReboot { .. } => "grub_reboot",
            Step::Reboot => "reboot",
            Step::InstalledKernels => "installed_kernels",
            Step::RemoveKernel { .. } => "remove_kernel",
            Step::PlaceFile(_) => "place_file",
            Step::Sweep { .. } => "sweep",
            Step::MakeCgroups(_) => "make_cgroups",
            Step::RemoveCgroups { .. } => "remove_cgroups",
        }
    }

    /// Whether the step only reads: sending it twice does what sending it once does, so a
    /// request lost with its connection (a kept-alive connection to a machine that has
    /// rebooted since) can be sent again.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            Step::Identity
                | Step::ReadKnob { .. }
                | Step::Schedstat
                | Step::Interrupts
                | Step::Poll { .. }
                | Step::Threads { .. }
                | Step::Listeners { .. }
                | Step::InstalledKernels
        )
    }

    /// Whether the agent reboots after a successful answer to this step.
    pub fn reboots(&self) -> bool {
        matches!(
            self,
            Step::Kexec(_) | Step::KexecInstalled { .. } | Step::GrubReboot { .. } | Step::Reboot
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InstallRequest {
    /// The release the kernel reports (`uname -r`); names its files.
    pub release: String,
    /// Uploaded files, by name.
    pub image: String,
    pub system_map: Option<String>,
    pub config: Option<String>,
    /// An uploaded tar whose members all sit under `RELEASE/` (a `lib/modules/RELEASE` tree).
    pub modules: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Installed {
    pub release: String,
    /// Where the image now is: /boot/kreg/RELEASE/vmlinuz.
    pub kernel: String,
    pub initrd: Option<String>,
    /// The program that made the initramfs (update-initramfs, dracut), if any.
    pub initramfs_tool: Option<String>,
    /// What depmod and the initramfs tool printed.
    pub log: String,
}

/// A kernel kreg installed on a machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InstalledKernel {
    pub release: String,
    /// When its image was installed (seconds since the epoch).
    pub installed_unix: u64,
    /// Bytes it takes: its /boot/kreg folder and the files it owns.
    pub bytes: u64,
    /// A distribution kernel of the same release is installed too: the config, System.map
    /// and modules are the distribution's.
    pub shares_with_distribution: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ExecRequest {
    /// Program and arguments; `argv[0]` is looked up in `PATH` when it has no slash.
    pub argv: Vec<String>,
    #[serde(default)]
    pub env: Vec<(String, String)>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// Killed after this many seconds, with every process it started (its process group,
    /// and any descendant that left it, such as a daemon).
    pub timeout_secs: u64,
    /// Applied to the child between fork and exec.
    #[serde(default)]
    pub policy: Option<Policy>,
    /// Written to the child's standard input, which is then closed.
    #[serde(default)]
    pub stdin: Option<String>,
    /// CPUs the child may run on (sched_setaffinity before exec); all when absent.
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    /// Who the process works for (the controller sends `run-N`): carried in its
    /// environment and its descendants', so that [`Step::Sweep`] finds what an earlier
    /// attempt left behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Leaf cgroups made by [`Step::MakeCgroups`]: the child joins the first between fork
    /// and exec; its descendant processes are dealt out over all of them as they appear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroups: Option<Vec<String>>,
    /// Each of its tasks' scheduler statistics at its exit (taskstats), in the result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_stats: bool,
}

/// One task's scheduler statistics at its exit, as /proc/PID/schedstat shows them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TaskStat {
    pub tid: u32,
    /// Its process.
    pub tgid: u32,
    pub comm: String,
    /// On a CPU (ns).
    pub run_ns: u64,
    /// Waiting on a run queue (ns).
    pub delay_ns: u64,
    /// Timeslices: times it was put on a CPU.
    pub slices: u64,
}

/// A process [`Step::Sweep`] ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweptProcess {
    pub pid: u32,
    pub comm: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExecResult {
    pub pid: u32,
    /// Exit status, when the process exited normally.
    pub exit_code: Option<i32>,
    /// Terminating signal, when a signal ended it.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Output, at most [`EXEC_OUTPUT_CAP`] bytes of each stream: its first quarter and its
    /// last three quarters, with the bytes dropped between them counted below.
    pub stdout: String,
    pub stderr: String,
    #[serde(default)]
    pub stdout_dropped: u64,
    #[serde(default)]
    pub stderr_dropped: u64,
    /// Policies seen on the process's threads while it ran (`sched_getscheduler`), distinct,
    /// in the order first seen. Empty only if the process ended before it could be looked at.
    pub observed_policies: Vec<String>,
    /// With `cgroups`: distinct processes of the workload seen in each cgroup (absolute
    /// paths) while it ran.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub observed_cgroups: std::collections::BTreeMap<String, u32>,
    /// With `task_stats`: every task of the process and its descendants at its exit, or
    /// why they could not be had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_stats: Option<Result<Vec<TaskStat>, String>>,
}

/// The most output an exec step keeps of each stream.
pub const EXEC_OUTPUT_CAP: usize = 8 << 20;

impl ExecResult {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// A process started by `spawn`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessState {
    pub id: u64,
    pub pid: u32,
    pub running: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Output so far (the last 4 MiB of each stream), or since the offsets a poll gave.
    pub stdout: String,
    pub stderr: String,
    /// Absolute offsets just past the output seen so far, for the next poll's `since`.
    #[serde(default)]
    pub stdout_end: u64,
    #[serde(default)]
    pub stderr_end: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadInfo {
    pub tid: u32,
    pub comm: String,
    pub policy: String,
    /// Its cgroup v2 path from the mount (`/kreg/run-1/g0`), where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
}

/// A listening TCP socket (from /proc/net/tcp and tcp6) and who holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Listener {
    /// The local address as bound: `0.0.0.0`, `::`, `10.0.0.1`, `::ffff:10.0.0.1` ….
    pub address: String,
    pub port: u16,
    /// The processes with the socket among their open files (forked children share it).
    pub holders: Vec<Holder>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
}

impl Listener {
    /// Whether a connection to `address` (an IP literal) on this port would reach it: the
    /// socket is bound to that address or to every address.
    pub fn receives(&self, address: &str) -> bool {
        let bound: Option<std::net::IpAddr> = self.address.parse().ok();
        let want: Option<std::net::IpAddr> = address.parse().ok();
        match (bound, want) {
            (Some(b), Some(w)) => b.is_unspecified() || b == w || as_v4(b).is_some_and(|b4| Some(b4) == as_v4(w)),
            _ => self.address == address,
        }
    }
}

fn as_v4(a: std::net::IpAddr) -> Option<std::net::Ipv4Addr> {
    match a {
        std::net::IpAddr::V4(v) => Some(v),
        std::net::IpAddr::V6(v) => v.to_ipv4_mapped(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KexecRequest {
    /// Name of an uploaded file.
    pub kernel: String,
    /// Name of an uploaded file.
    pub initrd: Option<String>,
    pub cmdline: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Identity {
    pub hostname: String,
    pub kernel_release: String,
    /// `/proc/version`, which carries the build string.
    pub proc_version: String,
    pub boot_id: String,
    pub nr_cpus: u32,
    pub schedstat_version: Option<u32>,
    /// Content of `/sys/kernel/debug/sched/features`, when debugfs shows it.
    pub sched_features: Option<String>,
    pub agent_version: String,
    /// `model name` from /proc/cpuinfo.
    #[serde(default)]
    pub cpu_model: String,
    /// /proc/cmdline.
    #[serde(default)]
    pub cmdline: String,
    /// Seconds since the machine booted (/proc/uptime).
    #[serde(default)]
    pub uptime_secs: f64,
    /// Seconds since the agent started.
    #[serde(default)]
    pub agent_uptime_secs: f64,
    /// The agent's own id, kept in its data folder (empty from an agent that has none): two
    /// addresses that reach one agent report the same.
    #[serde(default)]
    pub agent_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KnobValue {
    pub path: String,
    /// The value read back (after the write, for `write_knob`).
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SchedstatSnapshot {
    pub raw: String,
    /// `CLOCK_MONOTONIC` in nanoseconds when the file was read.
    pub monotonic_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Uploaded {
    pub name: String,
    pub bytes: u64,
    /// Where the file is on the agent's host.
    pub path: String,
}

/// The successful outcome of a step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "output", rename_all = "snake_case")]
pub enum StepOutput {
    Identity(Identity),
    Exec(ExecResult),
    Knob(KnobValue),
    Schedstat(SchedstatSnapshot),
    /// /proc/interrupts as read.
    Interrupts {
        raw: String,
    },
    /// The kernel is loaded; the agent reboots into it right after answering.
    KexecStarted {
        kernel_release: Option<String>,
    },
    Process(ProcessState),
    Threads {
        pid: u32,
        threads: Vec<ThreadInfo>,
    },
    Listeners {
        port: u16,
        sockets: Vec<Listener>,
    },
    Installed(Installed),
    /// The machine reboots right after this answer: into `entry` (a GRUB menu entry) once,
    /// or into its default entry when `entry` is `None`.
    Rebooting {
        entry: Option<String>,
    },
    Kernels {
        /// The running kernel's release.
        running: String,
        kernels: Vec<InstalledKernel>,
    },
    KernelRemoved {
        release: String,
        /// The paths removed.
        removed: Vec<String>,
    },
    Placed(Placed),
    Swept {
        killed: Vec<SweptProcess>,
    },
    Cgroups(CgroupsMade),
    CgroupsRemoved {
        removed: u64,
    },
}

/// Why a step failed, as the agent saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    BadRequest,
    Unauthorized,
    NotFound,
    Forbidden,
    Io,
    Spawn,
    Kernel,
    /// The request is larger than the agent takes (HTTP 413).
    TooLarge,
    /// The request stalled (HTTP 408).
    Timeout,
    /// The agent is at a limit; try again (HTTP 503).
    Busy,
    /// The request's lease epoch is older than the highest the agent has seen: another
    /// controller holds the machine now (HTTP 409).
    Fenced,
}

/// Every response body is one of these, stamped with the protocol version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Envelope<T> {
    pub protocol: u32,
    #[serde(flatten)]
    pub body: Reply<T>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Reply<T> {
    Ok(T),
    Error(StepError),
}

impl<T> Envelope<T> {
    pub fn ok(value: T) -> Self {
        Envelope {
            protocol: PROTOCOL_VERSION,
            body: Reply::Ok(value),
        }
    }
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Self {
        Envelope {
            protocol: PROTOCOL_VERSION,
            body: Reply::Error(StepError {
                kind,
                message: message.into(),
            }),
        }
    }
}

/// The most a secret file's first line may hold.
pub const SECRET_LINE_MAX: usize = 4096;

/// The first line of a secret file (a token, a passphrase), without its line end: a
/// regular file only (not a device, a FIFO or a folder: opened without blocking and
/// checked), and no more than [`SECRET_LINE_MAX`] bytes read. `what` names it in errors.
pub fn read_secret(path: &std::path::Path, what: &str) -> Result<String, crate::Error> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let at = |e: String| crate::Error::Secret(format!("cannot read {what} {}: {e}", path.display()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| at(e.to_string()))?;
    let meta = f.metadata().map_err(|e| at(e.to_string()))?;
    if !meta.is_file() {
        return Err(at("not a regular file".into()));
    }
    let mut buf = Vec::new();
    f.take(SECRET_LINE_MAX as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| at(e.to_string()))?;
    let end = buf.iter().position(|b| *b == b'\n');
    let line = match end {
        Some(n) => &buf[..n],
        None if buf.len() > SECRET_LINE_MAX => {
            return Err(at(format!("its first line is longer than {SECRET_LINE_MAX} bytes")));
        }
        None => &buf[..],
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8(line.to_vec()).map_err(|_| at("its first line is not UTF-8".into()))
}

/// The bearer token both sides read from a token file. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Takes the first line of a token file's text (surrounding blanks trimmed); an empty
    /// or short token is refused.
    pub fn from_file_text(text: &str) -> Result<Token, crate::Error> {
        let refuse = |why: &str| Err(crate::Error::Secret(why.to_string()));
        let t = text.lines().next().unwrap_or("").trim();
        if t.is_empty() {
            return refuse("the token file's first line is empty");
        }
        if t.len() < 16 {
            return refuse("the token is shorter than 16 characters");
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return refuse("the token holds a space or a character outside printable ASCII");
        }
        Ok(Token(t.to_string()))
    }

    /// Reads a token file (see [`Token::from_file_text`] and [`read_secret`]); errors
    /// name the file.
    pub fn read_file(path: &std::path::Path) -> Result<Token, crate::Error> {
        let line = read_secret(path, "token file")?;
        Token::from_file_text(&line).map_err(|e| crate::Error::Secret(format!("token file {}: {e}", path.display())))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, compared in constant time.
    pub fn matches(&self, presented: &[u8]) -> bool {
        subtle::ConstantTimeEq::ct_eq(self.0.as_bytes(), presented).into()
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}
