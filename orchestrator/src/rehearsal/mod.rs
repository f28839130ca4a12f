//! A scenario's rehearsal on the local lab (`kreg rehearse`): its SUT a lab machine (a disk
//! VM with GRUB and Debian, booting kernels as a real machine does), its load generator a
//! second one on a LAN of their own that carries the scenario's server addresses, each
//! reached by the transport the scenario names (http, or ssh with kreg installing its
//! agent); its kernels stood in for by kernels the lab boots. The run itself is an ordinary
//! run of the cut-down scenario; [`sheet`] reads it back as the rehearsal's sheet.

pub mod sheet;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::lab::machine::{Lan, Machine, MachineSpec};
use crate::scenario::{HttpTransport, KernelSource, Role, Scenario, SshSpec, SshTransport, Transport};
use crate::workload::WorkloadKind;

/// The kernels that stand in, in turn, for kernels given as images, packages or trees:
/// Debian's, which the lab machine boots by the scenario's method.
pub const STANDINS: [&str; 2] = ["linux-image-amd64", "linux-image-6.12-amd64"];

/// The agent port kreg installs its own agent on over SSH (the image's agent has 7878).
const SSH_AGENT_PORT: u16 = 7879;

/// A kernel of the scenario and what the rehearsal boots in its place.
#[derive(Debug, Clone)]
pub struct StandIn {
    pub kernel: String,
    /// What the scenario gives ("image images/vmlinuz-6.9"), and what stands in.
    pub given: String,
    pub by: Option<String>,
}

/// Features of EEVDF (6.6 and later) that Debian's 6.1 lacks.
const EEVDF_FEATURES: [&str; 3] = ["PLACE_LAG", "RUN_TO_PARITY", "PLACE_DEADLINE_INITIAL"];

/// The scenario's kernels stood in for: an image, a package or a tree becomes one of
/// [`STANDINS`] in turn; `running` stays the machine's own kernel. When a variant sets a
/// sched feature of EEVDF, every one becomes the newest stand-in, which has them.
pub fn stand_in(s: &mut Scenario) -> Vec<StandIn> {
    let eevdf = s.variants.iter().any(|v| {
        v.features
            .iter()
            .any(|f| EEVDF_FEATURES.contains(&f.trim_start_matches("NO_")))
    });
    let standins: &[&str] = match eevdf {
        true => &STANDINS[1..],
        false => &STANDINS,
    };
    let mut out = Vec::new();
    let mut next = 0;
    for k in s.kernels.iter_mut() {
        let given = match &k.source {
            KernelSource::Running => None,
            KernelSource::Deb { package } => Some(format!("Debian package {package}")),
            KernelSource::Path { vmlinuz } => Some(format!("image {}", vmlinuz.display())),
            KernelSource::Build(b) => Some(match &b.tree {
                crate::scenario::TreeSource::Git { url, git_ref } => format!("build of {url} at {git_ref}"),
                crate::scenario::TreeSource::Tarball { path } => format!("build of {}", path.display()),
            }),
        };
        let Some(given) = given else {
            out.push(StandIn {
                kernel: k.name.clone(),
                given: "the running kernel".into(),
                by: None,
            });
            continue;
        };
        let package = standins[next % standins.len()];
        next += 1;
        k.source = KernelSource::Deb {
            package: package.into(),
        };
        // A tree's own perf goes with its build, which is not made here.
        if matches!(k.perf, Some(crate::scenario::PerfSource::Tree(_))) {
            k.perf = None;
        }
        out.push(StandIn {
            kernel: k.name.clone(),
            given,
            by: Some(match eevdf {
                true => format!("Debian's {package} (the variants set EEVDF's features, which 6.1 lacks)"),
                false => format!("Debian's {package}"),
            }),
        });
    }
    out
}

/// The files of `s` a rehearsal does not read: its kernels' (images, trees, patches,
/// configs) and its hosts' (tokens, keys), whose parts the lab stands in for.
pub fn lab_replaced_files(s: &Scenario) -> Vec<PathBuf> {
    use crate::scenario::{ConfigBase, PerfSource, TreeSource};
    let mut out = Vec::new();
    let tree = |t: &TreeSource, out: &mut Vec<PathBuf>| {
        if let TreeSource::Tarball { path } = t {
            out.push(path.clone());
        }
    };
    for k in &s.kernels {
        match &k.source {
            KernelSource::Path { vmlinuz } => out.push(vmlinuz.clone()),
            KernelSource::Build(b) => {
                tree(&b.tree, &mut out);
                out.extend(b.patches.iter().cloned());
                if let ConfigBase::File(f) = &b.config.base {
                    out.push(f.clone());
                }
            }
            _ => {}
        }
        if let Some(PerfSource::Tree(t)) = &k.perf {
            tree(t, &mut out);
        }
    }
    for h in &s.hosts {
        match &h.transport {
            Transport::Http(t) => out.push(t.token_file.clone()),
            Transport::Ssh(t) => out.extend(
                [
                    t.token_file.clone(),
                    t.ssh.identity.clone(),
                    t.ssh.passphrase_file.clone(),
                    t.ssh.known_hosts.clone(),
                ]
                .into_iter()
                .flatten(),
            ),
            Transport::Lab { .. } => {}
        }
    }
    out
}

/// The addresses each host serves on, as the scenario's workloads name them: (host, address).
pub fn server_addresses(s: &Scenario) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in s.workloads.iter().filter_map(|w| server_of(&w.kind)) {
        if !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

/// The host and address a workload's server runs on, when it has one.
pub fn server_of(kind: &WorkloadKind) -> Option<(String, String)> {
    match kind {
        WorkloadKind::Netperf(n) => Some((n.server_on.clone(), n.server_address.clone())),
        WorkloadKind::Hammerdb(h) => Some((h.server.on.clone(), h.server.address.clone())),
        WorkloadKind::Sysbench(b) => Some((b.server.on.clone(), b.server.address.clone())),
        _ => None,
    }
}

/// Each host's addresses on the LAN (`ADDRESS/24`): the ones it serves on, and for a host
/// that serves none one of its own beside them.
fn lan_addresses(s: &Scenario) -> Result<Vec<(String, Vec<String>)>, String> {
    let served = server_addresses(s);
    let mut taken = Vec::new();
    for (_, a) in &served {
        let ip: Ipv4Addr = a.parse().map_err(|_| {
            format!("server address {a:?} is a name, not an IPv4 address: the lab's LAN carries addresses only")
        })?;
        taken.push(ip);
    }
    let base = taken.first().copied().unwrap_or(Ipv4Addr::new(192, 0, 2, 10));
    let mut out = Vec::new();
    for h in &s.hosts {
        let mut mine: Vec<String> = served
            .iter()
            .filter(|(on, _)| on == &h.name)
            .map(|(_, a)| format!("{a}/24"))
            .collect();
        if mine.is_empty() {
            let o = base.octets();
            let free = (1..=254u8)
                .rev()
                .map(|last| Ipv4Addr::new(o[0], o[1], o[2], last))
                .find(|ip| !taken.contains(ip))
                .ok_or("the LAN's /24 is full")?;
            taken.push(free);
            mine.push(format!("{free}/24"));
        }
        out.push((h.name.clone(), mine));
    }
    Ok(out)
}

/// The lab the rehearsal runs on: a machine per host, kept up until it is dropped.
pub struct Lab {
    pub machines: Vec<(String, Machine)>,
    /// The scenario with its hosts' transports on the lab's machines.
    pub scenario: Scenario,
}

/// How the lab's machines are made.
pub struct LabSpec<'a> {
    /// Folder of the golden image (disk.raw, ssh_host_ed25519_key.pub).
    pub image: &'a Path,
    /// Where the machines' overlays, tokens, keys and consoles go.
    pub dir: &'a Path,
    pub agent_bin: &'a Path,
    pub kreg_bin: &'a Path,
    pub cpus: u32,
    pub memory_mib: u32,
    pub threads_per_core: u32,
}

fn io(what: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", what.display())
}

/// Starts a machine for each host of `s` (one SUT, at most one load generator), waits for
/// each, and gives `s` with its transports on them.
pub async fn start(s: &Scenario, spec: &LabSpec<'_>, say: &mut dyn FnMut(String)) -> Result<Lab, String> {
    let suts = s.hosts.iter().filter(|h| h.role == Role::Sut).count();
    if suts != 1 || s.hosts.len() > 2 {
        return Err(format!(
            "a rehearsal runs one SUT and at most one load generator; this scenario has {} host(s), {suts} SUT(s)",
            s.hosts.len()
        ));
    }
    let addresses = lan_addresses(s)?;
    let mut lans = match s.hosts.len() {
        2 => {
            let (a, b) = Lan::pair().map_err(|e| e.to_string())?;
            vec![Some(a), Some(b)]
        }
        _ => vec![None],
    };
    std::fs::create_dir_all(spec.dir).map_err(io(spec.dir))?;
    let identity = spec.dir.join("id_rehearsal");
    let mut out = s.clone();
    // All started first, then waited for: they boot side by side.
    let mut started = Vec::new();
    for (i, h) in out.hosts.iter().enumerate() {
        let mut lan = lans[i].take();
        if let Some(l) = lan.as_mut() {
            l.addresses = addresses[i].1.clone();
        }
        let (m, dir, token, token_file) = start_one(h, spec, &identity, lan)?;
        let lan = match s.hosts.len() {
            2 => format!(", LAN {}", addresses[i].1.join(" ")),
            _ => String::new(),
        };
        say(format!(
            "{}: lab machine starting ({} CPUs{lan}, console {})",
            h.name,
            spec.cpus,
            m.console.display()
        ));
        started.push((m, dir, token, token_file));
    }
    let mut machines = Vec::new();
    for (h, (m, dir, token, token_file)) in out.hosts.iter_mut().zip(started) {
        let client = kreg_protocol::client::AgentClient::new(&m.url(), &token);
        let id = crate::boot::wait_for_agent(&client, None, Duration::from_secs(900), None)
            .await
            .map_err(|e| {
                format!(
                    "{}: the lab machine did not come up: {e}; console:\n{}",
                    h.name,
                    m.console_tail(25)
                )
            })?;
        say(format!(
            "{}: up, kernel {}, {} CPUs",
            h.name, id.kernel_release, id.nr_cpus
        ));
        h.transport = transport(&h.transport, &m, spec, &dir, &identity, &token_file)?;
        machines.push((h.name.clone(), m));
    }
    Ok(Lab {
        machines,
        scenario: out,
    })
}

/// Host `h`'s machine started (not yet up): it, its folder, its agent's token and the
/// token's file.
fn start_one(
    h: &crate::scenario::Host,
    spec: &LabSpec,
    identity: &Path,
    lan: Option<Lan>,
) -> Result<(Machine, PathBuf, String, PathBuf), String> {
    let dir = spec.dir.join(&h.name);
    let token = crate::token::random().map_err(|e| e.to_string())?;
    let token_file = dir.join("token");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    std::fs::write(&token_file, &token).map_err(io(&token_file))?;
    let keys = match h.transport {
        Transport::Ssh(_) => Some(authorized_key(identity)?),
        _ => None,
    };
    let m = Machine::start(&MachineSpec {
        golden: spec.image.join("disk.raw"),
        dir: dir.clone(),
        agent_bin: Some(spec.agent_bin.to_path_buf()),
        token: token.clone(),
        authorized_keys: keys,
        cpus: spec.cpus,
        memory_mib: spec.memory_mib,
        threads_per_core: if h.role == Role::Sut { spec.threads_per_core } else { 1 },
        lan,
    })
    .map_err(|e| e.to_string())?;
    Ok((m, dir, token, token_file))
}

/// The public half of the rehearsal's SSH identity (made once, without a passphrase).
fn authorized_key(identity: &Path) -> Result<String, String> {
    if !identity.exists() {
        let out = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "kreg-rehearsal", "-f"])
            .arg(identity)
            .output()
            .map_err(|e| format!("ssh-keygen (install openssh-client): {e}"))?;
        if !out.status.success() {
            return Err(format!("ssh-keygen: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
    }
    let public = identity.with_extension("pub");
    std::fs::read_to_string(&public).map_err(io(&public))
}

/// The host's transport as the scenario names it, on machine `m`: its boot method and
/// keep_kernels kept, the lab's reset button and console in place of the real ones.
fn transport(
    was: &Transport,
    m: &Machine,
    spec: &LabSpec,
    dir: &Path,
    identity: &Path,
    token_file: &Path,
) -> Result<Transport, String> {
    let lab = |machine: &crate::scenario::Machine| crate::scenario::Machine {
        reset: Some(vec![
            spec.kreg_bin.display().to_string(),
            "lab".into(),
            "reset".into(),
            m.monitor.display().to_string(),
        ]),
        console: Some(vec![
            "tail".into(),
            "-n".into(),
            "200".into(),
            m.console.display().to_string(),
        ]),
        ..machine.clone()
    };
    Ok(match was {
        Transport::Http(h) => Transport::Http(HttpTransport {
            url: m.url(),
            token_file: token_file.to_path_buf(),
            tls_fingerprint: None,
            insecure: false,
            machine: lab(&h.machine),
        }),
        Transport::Ssh(t) => {
            let known = dir.join("known_hosts");
            let line =
                Machine::known_hosts_line(&spec.image.join("disk.raw"), m.ssh_port).map_err(|e| e.to_string())?;
            std::fs::write(&known, line + "\n").map_err(io(&known))?;
            Transport::Ssh(SshTransport {
                ssh: SshSpec {
                    address: "127.0.0.1".into(),
                    port: m.ssh_port,
                    user: "root".into(),
                    identity: Some(identity.to_path_buf()),
                    passphrase_file: None,
                    known_hosts: Some(known),
                    host_key: None,
                    agent_port: SSH_AGENT_PORT,
                },
                token_file: None,
                machine: lab(&t.machine),
            })
        }
        Transport::Lab { .. } => was.clone(),
    })
}

/// Where the lab machine's image is kept unless `--image` says: the cache's `machine`.
pub fn default_image(cache: &Path) -> PathBuf {
    cache.join("machine")
}
