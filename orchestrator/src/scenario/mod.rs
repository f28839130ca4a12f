//! The scenario model: what a user declares in YAML (hosts, kernels, variants, workloads,
//! iterations), and its loading with every problem reported as `FILE:LINE:COL: message`.
//!
//! Loading walks a position-aware YAML tree ([`yaml`]) by hand rather than through serde
//! derive: serde stops at the first error, and users want all of them at once.

mod load;

use std::path::PathBuf;

pub use crate::yaml::cx::{Diagnostic, FileRef};
pub use kreg_agent::wire::Policy;
pub use load::from_str;

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
    /// Tools to put on hosts after each boot, before the jobs.
    pub tools: Vec<Tool>,
    /// The order of jobs within a kernel.
    pub order: Order,
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
}

impl Scenario {
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

#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub role: Role,
    pub transport: Transport,
}

/// A machine running `kreg-agent`, reached over HTTP; the token file is resolved against
/// the scenario's folder.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpTransport {
    pub url: String,
    pub token_file: PathBuf,
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

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A running `kreg-agent`.
    Http(HttpTransport),
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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    /// Host that runs it.
    pub on: String,
    pub timeout_secs: u64,
    pub kind: WorkloadKind,
}

pub use crate::workload::WorkloadKind;
