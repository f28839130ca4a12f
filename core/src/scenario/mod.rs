//! The scenario model: what a user declares in YAML (hosts, kernels, variants, workloads,
//! iterations), and its loading with every problem reported as `FILE:LINE:COL: message`.
//!
//! Loading walks a position-aware YAML tree ([`yaml`]) by hand rather than through serde
//! derive: serde stops at the first error, and users want all of them at once.

use crate::Error;
pub mod keys;
mod load;
pub mod pin;

use std::path::{Path, PathBuf};

pub use crate::yaml::cx::{Diagnostic, FileKind, FileRef};
pub use kreg_protocol::wire::Policy;
pub use load::pool::{pool_from_str, PoolMachine};
pub use load::{from_str, parse_cpu_list};

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub hosts: Vec<Host>,
    pub kernels: Vec<Kernel>,
    pub baseline: String,
    pub boot: Boot,
    pub variants: Vec<Variant>,
    pub workloads: Vec<Workload>,
    /// Runs per kernel × variant × workload; the first look of an adaptive run.
    pub iterations: u32,
    /// The most runs an adaptive run takes (`iterations: { min, max }`); equal to
    /// `iterations` for a fixed count.
    pub max_iterations: u32,
    /// Boots per kernel: the runs are spread over them, kernels alternating (A B A B).
    pub boots: u32,
    /// Warm-up runs of each cell at the start of each boot: run and stored, not judged.
    pub warmup: u32,
    /// Tools to put on hosts after each boot, before the jobs.
    pub tools: Vec<Tool>,
    /// The order of jobs within a kernel.
    pub order: Order,
    /// Collectors for every workload.
    pub collect: crate::collect::Collect,
    /// What `kreg bisect` bisects (`bisect:`), when the scenario says.
    pub bisect: Option<crate::bisect::Spec>,
    /// Every file the scenario names, with where: `kreg validate` checks them.
    pub files: Vec<FileRef>,
}

/// How jobs are ordered within a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// variant, workload, iteration (the default).
    Blocked,
    /// iteration, variant, workload.
    Interleaved,
}

/// A workload tool and where it comes from; installed as `install_dir/name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub on: Vec<String>,
    pub source: ToolSource,
    pub install_dir: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolSource {
    /// A distribution package (`apt-get install`); its version is the package's.
    Apt { package: String },
    /// Built on the host: cloned, checked out at `git_ref`, built by `build` (argv) in the
    /// tree; `binary` (relative to the tree) is installed. Its version is the commit.
    Git {
        url: String,
        git_ref: String,
        build: Vec<String>,
        binary: String,
    },
    /// A file on the controller, uploaded; its version is its SHA-256.
    Upload { path: PathBuf },
    /// A .tar.gz on the controller (a program that runs from its own tree, e.g. HammerDB):
    /// uploaded and unpacked on the host into a tree of kreg's (a single top folder is the
    /// tree); `binary` (relative to the tree) runs as the tool. Its version is its SHA-256.
    Tarball { path: PathBuf, binary: String },
}

impl Scenario {
    /// The files its runs carry (see [`FileKind`]), in the order the scenario names them.
    pub fn carried(&self) -> impl Iterator<Item = &FileRef> {
        self.files.iter().filter(|f| f.kind == FileKind::Carried)
    }

    /// Every carried file's path replaced by `to`'s answer for it (a path `to` does not
    /// know is left as it is): the run's files as the host that drives it holds them.
    pub fn relocate(&mut self, to: &dyn Fn(&Path) -> Option<PathBuf>) {
        let at = |p: &mut PathBuf| {
            if let Some(q) = to(p) {
                *p = q;
            }
        };
        let tree = |t: &mut TreeSource| {
            if let TreeSource::Tarball { path } = t {
                at(path);
            }
        };
        for t in &mut self.tools {
            match &mut t.source {
                ToolSource::Upload { path } | ToolSource::Tarball { path, .. } => at(path),
                ToolSource::Apt { .. } | ToolSource::Git { .. } => {}
            }
        }
        for k in &mut self.kernels {
            match &mut k.source {
                KernelSource::Path { vmlinuz } => at(vmlinuz),
                KernelSource::Build(b) => {
                    tree(&mut b.tree);
                    b.patches.iter_mut().for_each(at);
                    if let ConfigBase::File(p) = &mut b.config.base {
                        at(p);
                    }
                }
                KernelSource::Deb { .. } | KernelSource::Running => {}
            }
            if let Some(PerfSource::Tree(t)) = &mut k.perf {
                tree(t);
            }
        }
        for f in self.files.iter_mut().filter(|f| f.kind == FileKind::Carried) {
            at(&mut f.path);
        }
    }

    /// Each database server's password file (a secret) replaced by the file `map` gives for
    /// its name as the scenario wrote it: how a fleet worker reads a submitted scenario's
    /// secrets (files of the operator's, never the submitter's paths). The names `map`
    /// lacks, with where they are used.
    pub fn map_secrets(&mut self, map: &std::collections::BTreeMap<String, PathBuf>) -> Result<(), Vec<String>> {
        let mut missing = Vec::new();
        let files = self.files.clone();
        for w in &mut self.workloads {
            let server = match &mut w.kind {
                WorkloadKind::Sysbench(s) => &mut s.server,
                WorkloadKind::Hammerdb(h) => &mut h.server,
                _ => continue,
            };
            let name = files
                .iter()
                .find(|f| f.kind == FileKind::Secret && f.path == server.password_file)
                .map(|f| f.written.clone())
                .unwrap_or_else(|| server.password_file.display().to_string());
            match map.get(&name) {
                Some(p) => server.password_file = p.clone(),
                None => missing.push(format!("`{name}` (password_file of workload {})", w.name)),
            }
        }
        match missing.is_empty() {
            true => Ok(()),
            false => Err(missing),
        }
    }

    /// The git sources (kernels, perf trees, tools) given as a path on the machine that
    /// reads the scenario rather than a URL to fetch (`/src/linux`, `file:///…`, `~/…`):
    /// a fleet worker would read its own host's files for them.
    pub fn local_git_sources(&self) -> Vec<&str> {
        let local = |u: &str| {
            !["https://", "http://", "ssh://", "git://"]
                .iter()
                .any(|s| u.starts_with(s))
                && !is_scp_like(u)
        };
        let mut out = Vec::new();
        for k in &self.kernels {
            if let KernelSource::Build(BuildSpec {
                tree: TreeSource::Git { url, .. },
                ..
            }) = &k.source
            {
                out.push(url.as_str());
            }
            if let Some(PerfSource::Tree(TreeSource::Git { url, .. })) = &k.perf {
                out.push(url.as_str());
            }
        }
        for t in &self.tools {
            if let ToolSource::Git { url, .. } = &t.source {
                out.push(url.as_str());
            }
        }
        out.retain(|u| local(u));
        out.sort();
        out.dedup();
        out
    }

    /// Expands the `~/` the loader kept in ssh paths (and in the files `kreg validate`
    /// checks) to `home`, the user's home directory: the loader reads no environment.
    pub fn expand_home(&mut self, home: &Path) {
        let expand = |p: &mut PathBuf| {
            if let Ok(rest) = p.strip_prefix("~") {
                *p = home.join(rest);
            }
        };
        for h in &mut self.hosts {
            if let Transport::Ssh(t) = &mut h.transport {
                for p in [
                    &mut t.ssh.identity,
                    &mut t.ssh.passphrase_file,
                    &mut t.ssh.known_hosts,
                    &mut t.token_file,
                ] {
                    p.as_mut().map(expand);
                }
            }
        }
        for f in &mut self.files {
            expand(&mut f.path);
        }
    }

    /// Whether host `host` runs perf: the SUT with a perf collector, or a host with a
    /// `perf-bench` workload.
    pub fn needs_perf_on(&self, host: &str) -> bool {
        let collect = self.workloads.iter().fold(self.collect, |c, w| c.or(w.collect));
        let collector = collect.perf_stat || collect.perf_sched_stats;
        (collector && host == self.sut().name)
            || self
                .workloads
                .iter()
                .any(|w| w.on == host && matches!(w.kind, WorkloadKind::PerfBench(_)))
    }

    /// Whether a variant or a workload runs in a cgroup.
    pub fn uses_cgroups(&self) -> bool {
        self.variants.iter().any(|v| v.cgroup.is_some()) || self.workloads.iter().any(|w| w.cgroup.is_some())
    }

    /// The looks of the run's sequential plan, in observations per side: runs, or boots
    /// when there are two or more.
    pub fn looks(&self) -> crate::stats::Looks {
        if self.boots >= 2 {
            let per_boot = self.iterations.div_ceil(self.boots);
            crate::stats::Looks::adaptive(self.boots as usize, self.max_iterations.div_ceil(per_boot) as usize)
        } else {
            crate::stats::Looks::adaptive(self.iterations as usize, self.max_iterations as usize)
        }
    }

    /// Whether the analysis takes each boot as one observation.
    pub fn by_boot(&self) -> bool {
        self.boots >= 2
    }

    /// Whether runs are added after the first look to rows still inconclusive.
    pub fn adaptive(&self) -> bool {
        !self.looks().is_fixed()
    }

    /// Runs per boot (the last boots of a fixed count may have one fewer).
    pub fn runs_per_boot(&self) -> u32 {
        self.iterations.div_ceil(self.boots.max(1))
    }

    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
    pub fn variant(&self, name: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.name == name)
    }
    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }
    /// The machine under test (validation guarantees there is exactly one).
    pub fn sut(&self) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.role == Role::Sut)
            .expect("validated: one sut")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sut,
    Loadgen,
}

crate::states::state_names!(Role { Sut => "sut", Loadgen => "loadgen" });

#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub role: Role,
    pub transport: Transport,
    /// Settings applied after every boot, for the run (a variant's override the SUT's).
    pub tuning: crate::tuning::Tuning,
}

/// A machine running `kreg-agent`, reached over HTTP; the token file is resolved against
/// the scenario's folder.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpTransport {
    pub url: String,
    pub token_file: PathBuf,
    /// An https agent's certificate fingerprint (`sha256:…`), pinned: no CA is consulted.
    pub tls_fingerprint: Option<String>,
    /// Plain http to a host that is not this machine, said on purpose: the token crosses
    /// the network in clear text.
    pub insecure: bool,
    pub machine: Machine,
}

/// How kreg boots and recovers a real machine, however it is reached (http or ssh).
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// How a kernel other than the running one gets booted after it is installed.
    pub boot: BootVia,
    /// A command run on the controller to reset the machine (a BMC's power cycle, say)
    /// when a kernel does not come back; the default boot entry then brings it up.
    pub reset: Option<Vec<String>>,
    /// A command run on the controller that prints the machine's recent console
    /// output (a console server's log, say); its last lines go into boot failures.
    pub console: Option<Vec<String>>,
    /// How many of kreg's kernels may stay installed on the machine (besides a running
    /// one); the oldest are removed before another is installed.
    pub keep_kernels: u32,
}

/// A machine that runs nothing but sshd: kreg reaches it over SSH, installs or upgrades
/// `kreg-agent` on it, and speaks the agent's protocol through the SSH connection to the
/// agent on the machine's loopback. It boots kernels like an http host.
#[derive(Debug, Clone, PartialEq)]
pub struct SshTransport {
    pub ssh: SshSpec,
    /// The agent's token on the controller; without it kreg keeps one per machine under
    /// its data folder (`ssh/USER@ADDRESS:PORT.token`, mode 0600).
    pub token_file: Option<PathBuf>,
    pub machine: Machine,
}

/// Where and as whom kreg logs in, and how it knows the machine is the right one.
#[derive(Debug, Clone, PartialEq)]
pub struct SshSpec {
    /// Host name or IP address.
    pub address: String,
    pub port: u16,
    pub user: String,
    /// The private key; without it the user's `~/.ssh/id_ed25519`, `id_ecdsa` or `id_rsa`.
    pub identity: Option<PathBuf>,
    /// A file holding the identity's passphrase, when it has one.
    pub passphrase_file: Option<PathBuf>,
    /// Known host keys; without it the user's `~/.ssh/known_hosts` and
    /// `/etc/ssh/ssh_known_hosts`.
    pub known_hosts: Option<PathBuf>,
    /// A host key pinned in the scenario (`SHA256:…`): the machine must show it, whatever
    /// the known_hosts files say.
    pub host_key: Option<String>,
    /// The port the agent listens on, on the machine's loopback.
    pub agent_port: u16,
}

impl SshSpec {
    /// `user@address:port`, as messages and the stored rows name the machine.
    pub fn target(&self) -> String {
        if self.address.contains(':') {
            format!("{}@[{}]:{}", self.user, self.address, self.port)
        } else {
            format!("{}@{}:{}", self.user, self.address, self.port)
        }
    }
}

impl SshSpec {
    /// `USER@HOST[:PORT]` (user root, port 22 when not given), as the command line takes a
    /// machine, with the other settings at their defaults.
    pub fn from_target(target: &str) -> Result<SshSpec, Error> {
        let (user, rest) = match target.split_once('@') {
            Some((u, r)) => (u.to_string(), r),
            None => ("root".to_string(), target),
        };
        let user_ok = !user.is_empty()
            && !user.starts_with('-')
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !user_ok {
            return Err(Error::invalid(format!("{target:?}: {user:?} is not a user name")));
        }
        let (address, port) =
            load::ssh::split_address(rest).map_err(|why| Error::invalid(format!("{target:?} {why}")))?;
        if address.is_empty() || address.starts_with('-') || address.contains(char::is_whitespace) {
            return Err(Error::invalid(format!("{target:?}: expected USER@HOST[:PORT]")));
        }
        Ok(SshSpec {
            address,
            port,
            user,
            identity: None,
            passphrase_file: None,
            known_hosts: None,
            host_key: None,
            agent_port: SSH_AGENT_PORT,
        })
    }
}

/// The agent's port on an ssh host's loopback unless `agent_port:` says otherwise: not
/// 7878, where the agent of `kreg agent install` listens, so that both may run.
pub const SSH_AGENT_PORT: u16 = 7879;

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A running `kreg-agent`.
    Http(HttpTransport),
    /// sshd, and an agent kreg installs through it.
    Ssh(SshTransport),
    /// A qemu VM that kreg starts on this machine.
    Lab {
        cpus: u32,
        memory_mib: u32,
        /// Under TCG: all vCPUs taking turns on one host thread (the default: the emulator
        /// never runs stale guest code while the kernel patches its own text), or each on a
        /// thread of its own (`parallel: true`: real parallelism, and a guest that now and
        /// then dies of an int3 oops at boot or on a sched_features write).
        parallel: bool,
    },
}

/// kreg's kernels kept installed on an http host unless `keep_kernels:` says otherwise.
pub const KEEP_KERNELS: u32 = 3;

/// How an http host boots an installed kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootVia {
    /// kexec from the running kernel: no firmware, no bootloader.
    Kexec,
    /// A one-shot GRUB entry (`grub-reboot`) and a reboot: a kernel that hangs falls back
    /// to the default entry at the next reset.
    GrubReboot,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub source: KernelSource,
    /// Appended to the kernel command line kreg boots it with.
    pub cmdline: Option<String>,
    /// A perf of its own source, whatever the kernel (the kernel's `perf:`, else the
    /// scenario's): built on the controller and run on the SUT while this kernel is booted.
    /// `perf: tree` is [`BuildSpec::perf`] instead.
    pub perf: Option<PerfSource>,
}

/// Where a perf independent of the kernel under test comes from: a new perf runs on old
/// kernels, and `perf sched stats` needs perf 6.19 or later whatever the kernel.
#[derive(Debug, Clone, PartialEq)]
pub enum PerfSource {
    /// A kernel source tree (git or tarball) whose tools/perf is built.
    Tree(TreeSource),
    /// A Debian kernel source package (`linux-source-7.2`), fetched with `apt-get download`
    /// (through a sources list of kreg's own for Debian unstable when the machine's sources
    /// do not have it); the tarball in it is the tree.
    Debian { package: String },
}

impl std::fmt::Display for PerfSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PerfSource::Tree(TreeSource::Git { url, git_ref }) => write!(f, "git {url} at {git_ref}"),
            PerfSource::Tree(TreeSource::Tarball { path }) => write!(f, "tarball {}", path.display()),
            PerfSource::Debian { package } => write!(f, "Debian's {package}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum KernelSource {
    /// A Debian linux-image package (a meta-package is followed to the image it depends on).
    Deb { package: String },
    /// A prebuilt image on the controller's machine.
    Path { vmlinuz: PathBuf },
    /// Whatever kernel the SUT runs: nothing is booted.
    Running,
    /// Built from source with a declared config and patches.
    Build(BuildSpec),
}

#[derive(Debug, Clone, PartialEq)]
pub struct BuildSpec {
    pub tree: TreeSource,
    pub config: ConfigSpec,
    /// Applied in order with `patch -p1`.
    pub patches: Vec<PathBuf>,
    /// Where the compile runs: on the controller's machine (`None`), or on a host of the
    /// scenario (`build_on: sut`) with that host's compiler and cores.
    pub build_on: Option<String>,
    /// `perf: tree`: perf built from this tree's `tools/perf` (on the controller), and run
    /// on the SUT in place of the machine's own while this kernel is booted.
    pub perf: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TreeSource {
    /// A git repository (URL or local path) at a ref.
    Git { url: String, git_ref: String },
    /// A source tarball such as Debian's /usr/src/linux-source-6.1.tar.xz.
    Tarball { path: PathBuf },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigSpec {
    pub base: ConfigBase,
    /// `CONFIG_NAME` → value (`y`, `m`, `n`, a number or a quoted string), applied in order.
    pub set: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConfigBase {
    /// The SUT's running config (/proc/config.gz, else /boot/config-RELEASE).
    Running,
    Defconfig,
    Tinyconfig,
    File(PathBuf),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boot {
    pub timeout_secs: u64,
    /// How http hosts without a `boot:` of their own boot installed kernels.
    pub method: BootVia,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: String,
    pub policy: Policy,
    /// Written one by one to /sys/kernel/debug/sched/features, e.g. `NO_PLACE_LAG`.
    pub features: Vec<String>,
    /// CPUs the workload (or server) may run on; all when absent.
    pub cpus: Option<Vec<u32>>,
    /// The SUT's tuning for this variant's jobs, over the host's own.
    pub tuning: crate::tuning::Tuning,
    /// The cgroup its jobs run in (a workload's own `cgroup:` wins).
    pub cgroup: Option<crate::cgroup::Cgroup>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    /// Host that runs it.
    pub on: String,
    pub timeout_secs: u64,
    pub kind: WorkloadKind,
    /// Collectors for this workload besides the scenario's.
    pub collect: crate::collect::Collect,
    /// The cgroup it runs in, over its variant's.
    pub cgroup: Option<crate::cgroup::Cgroup>,
}

pub use crate::workload::WorkloadKind;

/// `user@host:path` as git reads it (no `://`; a colon before any slash, not a drive
/// letter).
fn is_scp_like(url: &str) -> bool {
    if url.contains("://") {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (Some(c), Some(s)) => c < s && c > 1,
        (Some(c), None) => c > 1,
        _ => false,
    }
}
