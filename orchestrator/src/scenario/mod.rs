//! The scenario model: what a user declares in YAML (hosts, kernels, variants, workloads,
//! iterations), and its loading with every problem reported as `FILE:LINE:COL: message`.
//!
//! Loading walks a position-aware YAML tree ([`yaml`]) by hand rather than through serde
//! derive: serde stops at the first error, and users want all of them at once.

mod load;
pub mod yaml;

use std::path::PathBuf;

pub use kreg_agent::wire::Policy;
pub use load::{from_str, Diagnostic};

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub hosts: Vec<Host>,
    pub kernels: Vec<Kernel>,
    pub baseline: String,
    pub boot: Boot,
    pub variants: Vec<Variant>,
    pub workloads: Vec<Workload>,
    pub iterations: u32,
    /// Tools to put on hosts after each boot, before the jobs.
    pub tools: Vec<Tool>,
    /// The order of jobs within a kernel.
    pub order: Order,
    /// Every file the scenario names, with where: `kreg validate` checks them.
    pub files: Vec<FileRef>,
}

/// A file named in a scenario, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRef {
    pub path: PathBuf,
    pub line: usize,
    pub col: usize,
    /// What it is, as the messages name it ("a patch file", "token_file", …).
    pub what: String,
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

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A running `kreg-agent`; the token file is resolved against the scenario's folder.
    Http {
        url: String,
        token_file: PathBuf,
        /// How a kernel other than the running one gets booted after it is installed.
        boot: BootVia,
        /// A command run on the controller to reset the machine (a BMC's power cycle, say)
        /// when a kernel does not come back; the default boot entry then brings it up.
        reset: Option<Vec<String>>,
        /// A command run on the controller that prints the machine's recent console
        /// output (a console server's log, say); its last lines go into boot failures.
        console: Option<Vec<String>>,
        /// How many of kreg's kernels may stay installed on the machine (besides a running
        /// one); the oldest are removed before another is installed.
        keep_kernels: u32,
    },
    /// A qemu VM that kreg starts on this machine.
    Lab { cpus: u32, memory_mib: u32 },
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

#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadKind {
    Hackbench(Hackbench),
    Schbench(Schbench),
    PerfBench(PerfBench),
    Sysbench(Sysbench),
    Netperf(Netperf),
    Hammerdb(Hammerdb),
    Command(CommandWorkload),
}

impl WorkloadKind {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadKind::Hackbench(_) => "hackbench",
            WorkloadKind::Schbench(_) => "schbench",
            WorkloadKind::PerfBench(_) => "perf-bench",
            WorkloadKind::Sysbench(_) => "sysbench",
            WorkloadKind::Netperf(_) => "netperf",
            WorkloadKind::Hammerdb(_) => "hammerdb",
            WorkloadKind::Command(_) => "command",
        }
    }
}

/// Validated command-line flags of a tool, in a fixed order: (flag, value).
pub type Flags = Vec<(String, Option<String>)>;

fn push_flags(argv: &mut Vec<String>, flags: &Flags) {
    for (flag, value) in flags {
        argv.push(flag.clone());
        if let Some(v) = value {
            argv.push(v.clone());
        }
    }
}

/// schbench with any of its flags (-m -t -r -M -W -L -n -F -R -A -p -i -w -s -z -C).
#[derive(Debug, Clone, PartialEq)]
pub struct Schbench {
    pub flags: Flags,
    /// Also ask for `-j -` (JSON on stdout) and read it; the text report stays on stderr.
    pub json: bool,
}

impl Schbench {
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec!["schbench".to_string()];
        push_flags(&mut v, &self.flags);
        if self.json {
            v.extend(["-j".into(), "-".into()]);
        }
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfBenchKind {
    Messaging,
    Pipe,
}

/// `perf bench sched messaging|pipe` with its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfBench {
    pub bench: PerfBenchKind,
    pub flags: Flags,
}

impl PerfBench {
    pub fn argv(&self) -> Vec<String> {
        let bench = match self.bench {
            PerfBenchKind::Messaging => "messaging",
            PerfBenchKind::Pipe => "pipe",
        };
        let mut v = vec!["perf".to_string(), "bench".into(), "sched".into(), bench.into()];
        push_flags(&mut v, &self.flags);
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Mariadb,
    Mysql,
}

/// A database server that kreg starts on a host (normally the SUT) for a client workload.
#[derive(Debug, Clone, PartialEq)]
pub struct DbServer {
    pub on: String,
    pub kind: DbKind,
    /// The address it listens on and clients connect to.
    pub address: String,
    pub port: u16,
    /// Created with mariadb-install-db / mysqld --initialize-insecure when empty.
    pub datadir: String,
    pub database: String,
    pub user: String,
    /// File on the controller holding the client user's password (never logged or stored).
    pub password_file: PathBuf,
}

/// sysbench OLTP against a MySQL/MariaDB server.
#[derive(Debug, Clone, PartialEq)]
pub struct Sysbench {
    /// oltp_read_write, oltp_read_only, oltp_point_select, …
    pub test: String,
    pub threads: u32,
    pub time_secs: u32,
    pub tables: u32,
    pub table_size: u32,
    pub percentile: u32,
    pub server: DbServer,
}

/// A count of client processes or users, absolute or relative to the SUT's CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Fixed(u32),
    /// Percent of the SUT's CPUs (seed 002: 25/50/75/100%), at least 1.
    PercentOfCpus(u32),
    /// Per SUT CPU (HammerDB virtual users "per CPU").
    PerCpu(f64),
}

impl Count {
    pub fn resolve(self, sut_cpus: u32) -> u32 {
        let n = match self {
            Count::Fixed(n) => n as f64,
            Count::PercentOfCpus(p) => (sut_cpus as f64 * p as f64 / 100.0).round(),
            Count::PerCpu(f) => (sut_cpus as f64 * f).round(),
        };
        (n as u32).max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetTest {
    UdpRr,
    TcpRr,
}

impl NetTest {
    pub fn name(self) -> &'static str {
        match self {
            NetTest::UdpRr => "UDP_RR",
            NetTest::TcpRr => "TCP_RR",
        }
    }
}

/// netperf request/response: `netserver` on the server host, clients on the workload's host.
#[derive(Debug, Clone, PartialEq)]
pub struct Netperf {
    pub test: NetTest,
    pub clients: Count,
    pub duration_secs: u32,
    pub server_on: String,
    pub server_address: String,
    pub server_port: u16,
}

/// HammerDB TPROC-C against MySQL/MariaDB; kreg writes the hammerdbcli script.
#[derive(Debug, Clone, PartialEq)]
pub struct Hammerdb {
    pub warehouses: u32,
    pub virtual_users: Count,
    pub rampup_min: u32,
    pub duration_min: u32,
    pub server: DbServer,
}

/// rt-tests hackbench; each field is one of its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Hackbench {
    /// `-g`
    pub groups: u32,
    /// `-l`
    pub loops: u32,
    /// `-p`: pipes instead of sockets.
    pub pipe: bool,
    /// `-T`: threads instead of processes.
    pub threads: bool,
    /// `-f`: file descriptors (senders and receivers) per group.
    pub fds: Option<u32>,
    /// `-s`: bytes per message.
    pub datasize: Option<u32>,
}

impl Hackbench {
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec!["hackbench".to_string()];
        if self.pipe {
            v.push("-p".into());
        }
        if self.threads {
            v.push("-T".into());
        }
        v.extend([
            "-g".into(),
            self.groups.to_string(),
            "-l".into(),
            self.loops.to_string(),
        ]);
        if let Some(f) = self.fds {
            v.extend(["-f".into(), f.to_string()]);
        }
        if let Some(s) = self.datasize {
            v.extend(["-s".into(), s.to_string()]);
        }
        v
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandWorkload {
    pub argv: Vec<String>,
    pub metrics: Vec<MetricPattern>,
}

/// A metric read from a command's output: the first capture group of `regex`, searched in
/// stdout, then in stderr.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPattern {
    pub name: String,
    pub regex: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// Quotes a string for a single-quoted SQL literal (MySQL/MariaDB, default SQL mode).
pub fn sql_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

impl DbServer {
    /// The server program and client program of this database kind.
    pub fn programs(&self) -> (&'static str, &'static str) {
        match self.kind {
            DbKind::Mariadb => ("mariadbd", "mariadb"),
            DbKind::Mysql => ("mysqld", "mysql"),
        }
    }

    pub fn socket(&self) -> String {
        format!("{}/kreg.sock", self.datadir)
    }

    /// The server, started without any option file so that nothing but these flags counts.
    pub fn server_argv(&self) -> Vec<String> {
        let (server, _) = self.programs();
        vec![
            server.into(),
            "--no-defaults".into(),
            "--user=mysql".into(),
            format!("--datadir={}", self.datadir),
            format!("--bind-address={}", self.address),
            format!("--port={}", self.port),
            format!("--socket={}", self.socket()),
            format!("--pid-file={}/kreg.pid", self.datadir),
            "--skip-name-resolve".into(),
        ]
    }

    /// Creates the system tables in an empty datadir.
    pub fn init_argv(&self) -> Vec<String> {
        match self.kind {
            DbKind::Mariadb => vec![
                "mariadb-install-db".into(),
                "--no-defaults".into(),
                "--user=mysql".into(),
                format!("--datadir={}", self.datadir),
            ],
            DbKind::Mysql => vec![
                "mysqld".into(),
                "--no-defaults".into(),
                "--initialize-insecure".into(),
                "--user=mysql".into(),
                format!("--datadir={}", self.datadir),
            ],
        }
    }

    /// Root's client over the server's Unix socket (root authenticates as the OS user).
    pub fn admin_argv(&self) -> Vec<String> {
        let (_, client) = self.programs();
        vec![
            client.into(),
            "--no-defaults".into(),
            format!("--socket={}", self.socket()),
            "--user=root".into(),
        ]
    }

    /// SQL that creates the benchmark database and user (fed on stdin, never in argv).
    pub fn setup_sql(&self, password: &str) -> String {
        let (db, user, pw) = (&self.database, sql_quote(&self.user), sql_quote(password));
        format!(
            "CREATE DATABASE IF NOT EXISTS `{db}`;\n\
             CREATE USER IF NOT EXISTS {user}@'%' IDENTIFIED BY {pw};\n\
             ALTER USER {user}@'%' IDENTIFIED BY {pw};\n\
             GRANT ALL PRIVILEGES ON `{db}`.* TO {user}@'%';\n\
             FLUSH PRIVILEGES;\n"
        )
    }

    /// A real query from a client host over the network; the password goes in MYSQL_PWD.
    pub fn probe_argv(&self) -> Vec<String> {
        let (_, client) = self.programs();
        vec![
            client.into(),
            "--no-defaults".into(),
            format!("--host={}", self.address),
            format!("--port={}", self.port),
            format!("--user={}", self.user),
            format!("--database={}", self.database),
            "--execute=SELECT 1".into(),
        ]
    }
}

impl Sysbench {
    /// `sysbench TEST … PHASE` (prepare, run, cleanup). sysbench reads the password only
    /// from its command line.
    pub fn argv(&self, password: &str, phase: &str) -> Vec<String> {
        let s = &self.server;
        let mut v = vec![
            "sysbench".to_string(),
            self.test.clone(),
            "--db-driver=mysql".into(),
            format!("--mysql-host={}", s.address),
            format!("--mysql-port={}", s.port),
            format!("--mysql-user={}", s.user),
            format!("--mysql-password={password}"),
            format!("--mysql-db={}", s.database),
            format!("--tables={}", self.tables),
            format!("--table-size={}", self.table_size),
        ];
        if phase == "run" {
            v.extend([
                format!("--threads={}", self.threads),
                format!("--time={}", self.time_secs),
                format!("--percentile={}", self.percentile),
            ]);
        } else {
            v.push(format!("--threads={}", self.threads.min(self.tables)));
        }
        v.push(phase.into());
        v
    }
}

impl Netperf {
    /// One netperf client; kreg starts `clients` of them at once.
    pub fn client_argv(&self) -> Vec<String> {
        vec![
            "netperf".into(),
            "-H".into(),
            self.server_address.clone(),
            "-p".into(),
            self.server_port.to_string(),
            "-t".into(),
            self.test.name().into(),
            "-l".into(),
            self.duration_secs.to_string(),
            "-P".into(),
            "0".into(),
            "--".into(),
            "-k".into(),
            crate::parse::NETPERF_SELECTORS.into(),
        ]
    }

    /// `netserver` in the foreground (-D) on the server's address and port.
    pub fn server_argv(&self) -> Vec<String> {
        vec![
            "netserver".into(),
            "-D".into(),
            "-L".into(),
            self.server_address.clone(),
            "-p".into(),
            self.server_port.to_string(),
        ]
    }
}

impl Hammerdb {
    /// The hammerdbcli script for a TPROC-C run against MySQL/MariaDB: time profile on,
    /// `vus` virtual users, rampup and duration in minutes. The schema is built first when
    /// the database has none (`build`), in a script of its own.
    pub fn script(&self, password: &str, vus: u32, build: bool) -> String {
        let s = &self.server;
        // Tcl braces keep the password literal; a password with braces or a backslash is
        // refused before this point.
        let mut out = format!(
            "dbset db mysql\ndbset bm TPC-C\n\
             diset connection mysql_host {}\ndiset connection mysql_port {}\n\
             diset tpcc mysql_user {}\ndiset tpcc mysql_pass {{{password}}}\ndiset tpcc mysql_dbase {}\n\
             diset tpcc mysql_count_ware {}\ndiset tpcc mysql_storage_engine innodb\n",
            s.address, s.port, s.user, s.database, self.warehouses
        );
        if build {
            out.push_str(&format!(
                "diset tpcc mysql_num_vu {}\nbuildschema\nwaittocomplete\n",
                vus.min(self.warehouses)
            ));
            return out;
        }
        out.push_str(&format!(
            "diset tpcc mysql_driver timed\ndiset tpcc mysql_rampup {}\ndiset tpcc mysql_duration {}\n\
             diset tpcc mysql_timeprofile true\ndiset tpcc mysql_allwarehouse false\n\
             loadscript\nvuset logtotemp 0\nvuset unique 1\nvuset vu {vus}\nvucreate\nvurun\nwaittocomplete\n",
            self.rampup_min, self.duration_min
        ));
        out
    }
}

#[cfg(test)]
mod generator_tests {
    use super::*;

    fn db(kind: DbKind) -> DbServer {
        DbServer {
            on: "sut".into(),
            kind,
            address: "192.0.2.1".into(),
            port: 3307,
            datadir: "/var/lib/kreg/db".into(),
            database: "tpcc".into(),
            user: "bench".into(),
            password_file: "pw".into(),
        }
    }

    #[test]
    fn database_commands() {
        let d = db(DbKind::Mariadb);
        assert_eq!(
            d.server_argv().join(" "),
            "mariadbd --no-defaults --user=mysql --datadir=/var/lib/kreg/db --bind-address=192.0.2.1 --port=3307 --socket=/var/lib/kreg/db/kreg.sock --pid-file=/var/lib/kreg/db/kreg.pid --skip-name-resolve"
        );
        assert_eq!(
            db(DbKind::Mysql).init_argv()[..3],
            ["mysqld", "--no-defaults", "--initialize-insecure"]
        );
        assert_eq!(db(DbKind::Mysql).probe_argv()[0], "mysql");
        let sql = d.setup_sql("it's\\x");
        assert!(sql.contains("IDENTIFIED BY 'it''s\\\\x'"), "{sql}");
        assert!(sql.contains("GRANT ALL PRIVILEGES ON `tpcc`.* TO 'bench'@'%'"), "{sql}");
        assert!(
            !d.probe_argv().iter().any(|a| a.contains("it's")),
            "the password travels in MYSQL_PWD only"
        );
    }

    #[test]
    fn sysbench_phases() {
        let sb = Sysbench {
            test: "oltp_read_write".into(),
            threads: 8,
            time_secs: 30,
            tables: 4,
            table_size: 1000,
            percentile: 99,
            server: db(DbKind::Mariadb),
        };
        let run = sb.argv("pw", "run").join(" ");
        assert_eq!(run, "sysbench oltp_read_write --db-driver=mysql --mysql-host=192.0.2.1 --mysql-port=3307 --mysql-user=bench --mysql-password=pw --mysql-db=tpcc --tables=4 --table-size=1000 --threads=8 --time=30 --percentile=99 run");
        let prep = sb.argv("pw", "prepare");
        assert_eq!(prep[prep.len() - 2..], ["--threads=4", "prepare"]);
    }

    #[test]
    fn netperf_commands() {
        let n = Netperf {
            test: NetTest::UdpRr,
            clients: Count::PercentOfCpus(25),
            duration_secs: 30,
            server_on: "sut".into(),
            server_address: "192.0.2.1".into(),
            server_port: 12865,
        };
        assert_eq!(
            n.client_argv().join(" "),
            "netperf -H 192.0.2.1 -p 12865 -t UDP_RR -l 30 -P 0 -- -k THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY"
        );
        assert_eq!(n.server_argv().join(" "), "netserver -D -L 192.0.2.1 -p 12865");
        assert_eq!(
            (
                Count::PercentOfCpus(25).resolve(240),
                Count::PercentOfCpus(25).resolve(2)
            ),
            (60, 1)
        );
    }

    #[test]
    fn hammerdb_scripts() {
        let h = Hammerdb {
            warehouses: 24,
            virtual_users: Count::PerCpu(1.0),
            rampup_min: 2,
            duration_min: 5,
            server: db(DbKind::Mysql),
        };
        let run = h.script("pw", 16, false);
        for line in [
            "dbset db mysql",
            "dbset bm TPC-C",
            "diset connection mysql_host 192.0.2.1",
            "diset connection mysql_port 3307",
            "diset tpcc mysql_user bench",
            "diset tpcc mysql_pass {pw}",
            "diset tpcc mysql_count_ware 24",
            "diset tpcc mysql_driver timed",
            "diset tpcc mysql_rampup 2",
            "diset tpcc mysql_duration 5",
            "diset tpcc mysql_timeprofile true",
            "vuset vu 16",
            "vurun",
        ] {
            assert!(run.lines().any(|l| l == line), "missing {line:?} in:\n{run}");
        }
        let build = h.script("pw", 64, true);
        assert!(build.contains("diset tpcc mysql_num_vu 24\nbuildschema\n"), "{build}");
        assert!(!build.contains("vurun"));
    }
}
