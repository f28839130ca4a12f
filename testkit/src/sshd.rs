//! A machine that runs nothing but sshd, on this one: a network namespace reached over a
//! veth pair (its loopback is its own: the agent kreg installs there is reachable only
//! through SSH), and a mount namespace in which the folders kreg installs into
//! (/usr/local/lib/kreg, /etc/kreg, /var/lib/kreg-agent, /var/lib/kreg-agent-ssh, and the agent's manual
//! page's /usr/local/share/man/man8) are folders of the test. sshd is
//! Debian's, with a private config, host key and authorized_keys made by the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::Scratch;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args), &format!("ip {}", args.join(" ")));
}

/// A new key pair (ed25519 unless `kind` says otherwise), its private key's path.
pub fn keygen(dir: &Path, name: &str, kind: &str, passphrase: &str) -> PathBuf {
    let key = dir.join(name);
    let _ = std::fs::remove_file(&key);
    let _ = std::fs::remove_file(key.with_extension("pub"));
    run(
        Command::new("ssh-keygen")
            .args(["-q", "-t", kind, "-N", passphrase, "-C", name, "-f"])
            .arg(&key),
        "ssh-keygen",
    );
    key
}

/// The folders of the machine kreg installs into, as (path on the machine, folder here).
pub const MOUNTED: [&str; 5] = [
    "/usr/local/lib/kreg",
    "/etc/kreg",
    "/var/lib/kreg-agent",
    "/var/lib/kreg-agent-ssh",
    "/usr/local/share/man/man8",
];

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

pub struct SshMachine {
    pub ns: String,
    /// Its address, from the controller.
    pub addr: String,
    pub dir: Scratch,
    /// The test's key, in authorized_keys.
    pub identity: PathBuf,
    /// A known_hosts file listing the machine's host key.
    pub known_hosts: PathBuf,
    /// `SHA256:…` of the host key, as ssh-keygen prints it.
    pub fingerprint: String,
    sshd: Option<Child>,
}

impl SshMachine {
    /// Machine `tag` (a few letters) on 10.233.`net`.0/30.
    pub fn new(tag: &str, net: u8) -> SshMachine {
        let ns = format!("kreg-ssh-{tag}");
        let dir = Scratch::new(&format!("ssh-{tag}"));
        let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        ip(&["netns", "add", &ns]);
        let (host_if, ns_if) = (format!("kh{tag}"), format!("km{tag}"));
        let _ = Command::new("ip").args(["link", "del", &host_if]).output();
        ip(&["link", "add", &host_if, "type", "veth", "peer", "name", &ns_if]);
        ip(&["link", "set", &ns_if, "netns", &ns]);
        let (mine, theirs) = (format!("10.233.{net}.1"), format!("10.233.{net}.2"));
        ip(&["addr", "add", &format!("{mine}/30"), "dev", &host_if]);
        ip(&["link", "set", &host_if, "up"]);
        ip(&["-n", &ns, "addr", "add", &format!("{theirs}/30"), "dev", &ns_if]);
        ip(&["-n", &ns, "link", "set", &ns_if, "up"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        let host_key = keygen(&dir.0, "ssh_host_ed25519_key", "ed25519", "");
        let identity = keygen(&dir.0, "id_test", "ed25519", "");
        std::fs::copy(identity.with_extension("pub"), dir.0.join("authorized_keys")).unwrap();
        let pub_line = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
        let mut words = pub_line.split_whitespace();
        let known_hosts = dir.0.join("known_hosts");
        std::fs::write(
            &known_hosts,
            format!("{theirs} {} {}\n", words.next().unwrap(), words.next().unwrap()),
        )
        .unwrap();
        let fp = run(
            Command::new("ssh-keygen")
                .arg("-lf")
                .arg(host_key.with_extension("pub")),
            "ssh-keygen -l",
        );
        let fingerprint = fp.split_whitespace().nth(1).unwrap().to_string();
        for m in MOUNTED {
            std::fs::create_dir_all(dir.0.join("root").join(&m[1..])).unwrap();
        }
        let config = format!(
            "ListenAddress {theirs}:22\nHostKey {hk}\nPidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             UsePAM no\nStrictModes no\nAllowTcpForwarding yes\nLogLevel VERBOSE\n",
            hk = host_key.display(),
            d = dir.0.display()
        );
        std::fs::write(dir.0.join("sshd_config"), config).unwrap();
        let mut m = SshMachine {
            ns,
            addr: theirs,
            dir,
            identity,
            known_hosts,
            fingerprint,
            sshd: None,
        };
        m.start_sshd();
        m
    }

    /// The folder here that is `path` on the machine.
    pub fn path(&self, path: &str) -> PathBuf {
        self.dir.0.join("root").join(path.trim_start_matches('/'))
    }

    /// Starts sshd in the machine's namespaces and waits until it accepts connections.
    pub fn start_sshd(&mut self) {
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut binds = String::new();
        for m in MOUNTED {
            std::fs::create_dir_all(m).unwrap();
            binds.push_str(&format!("mount --bind '{}' '{m}' && ", self.path(m).display()));
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.0.join("sshd.log"))
            .unwrap();
        let script = format!(
            "{binds}exec /usr/sbin/sshd -D -e -f '{}'",
            self.dir.0.join("sshd_config").display()
        );
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
            ])
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sshd");
        self.sshd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let to = format!("{}:22", self.addr).parse().unwrap();
        while std::net::TcpStream::connect_timeout(&to, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not listen: {}", self.sshd_log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills sshd and every connection it serves (SIGKILL): the controller's connection
    /// dies with them. What sshd started detached (the agent) lives on.
    pub fn kill_sshd(&mut self) {
        if let Some(mut child) = self.sshd.take() {
            for pid in children_of(child.id()) {
                // SAFETY: kill takes no pointers.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the processes that serve sshd's connections (SIGKILL); sshd itself stays and
    /// serves new ones. Returns how many it killed.
    pub fn drop_connections(&self) -> usize {
        let Some(sshd) = &self.sshd else { return 0 };
        let pids = children_of(sshd.id());
        for pid in &pids {
            // SAFETY: kill takes no pointers.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
        pids.len()
    }

    pub fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("sshd.log")).unwrap_or_default()
    }

    /// The host entry's transport, with `extra` keys (`, identity: …` and the like).
    pub fn transport(&self, extra: &str) -> String {
        format!(
            "{{ kind: ssh, address: \"{}\", identity: \"{}\", known_hosts: \"{}\"{extra} }}",
            self.addr,
            self.identity.display(),
            self.known_hosts.display()
        )
    }

    /// A process in the machine's network namespace whose command line is exactly `argv`.
    pub fn process(&self, argv: &[&str]) -> Option<u32> {
        let out = Command::new("ip").args(["netns", "pids", &self.ns]).output().ok()?;
        let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .find(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
    }

    /// The pid of the ssh transport's agent on the machine, from the pid file it keeps
    /// without systemd.
    pub fn agent_pid(&self) -> Option<u32> {
        self.pid_in("/var/lib/kreg-agent-ssh")
    }

    /// The pid of the agent whose data folder is `data`, when it runs.
    pub fn pid_in(&self, data: &str) -> Option<u32> {
        let text = std::fs::read_to_string(self.path(&format!("{data}/agent.pid"))).ok()?;
        let pid: u32 = text.trim().parse().ok()?;
        Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
    }
}

impl Drop for SshMachine {
    fn drop(&mut self) {
        self.kill_sshd();
        // Whatever still runs in the namespace (the agent) goes with it.
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.ns]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Ok(pid) = pid.parse::<i32>() {
                    // SAFETY: kill takes no pointers.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}
