//! Where the soak and the isolated workers run: a bridge with a network namespace per
//! worker (a worker's network cut is its link going down), and a PostgreSQL of the test's
//! own listening on the bridge (restarted by the soak without touching other tests' server).
//! Each test has a site of its own (bridge, subnet, names, port), so that they can run at
//! the same time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::harness::kreg_out;

/// A test's bridge, its /24 (`SUBNET.1` on this machine, `SUBNET.10+i` worker i), its
/// namespaces' and links' names, and its PostgreSQL's port.
pub struct Site {
    pub bridge: &'static str,
    pub subnet: &'static str,
    pub tag: &'static str,
    pub pg_port: u16,
}

impl Site {
    /// The host side of worker `i`'s link: down, the worker is cut off.
    pub fn veth(&self, i: usize) -> String {
        format!("k{}{i}", self.tag)
    }
}

pub const SOAK: Site = Site {
    bridge: "kregsoak0",
    subnet: "10.213.0",
    tag: "soak",
    pg_port: 5499,
};

pub fn sh(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bridge on this machine (SUBNET.1) and a namespace per worker joined to it (SUBNET.10+i),
/// removed on drop.
pub struct Net {
    pub namespaces: Vec<String>,
    bridge: &'static str,
}

impl Net {
    pub fn new(site: &Site, workers: usize) -> Net {
        let (bridge, subnet, tag) = (site.bridge, site.subnet, site.tag);
        let _ = Command::new("ip").args(["link", "del", bridge]).output();
        sh("ip", &["link", "add", bridge, "type", "bridge"]);
        sh("ip", &["addr", "add", &format!("{subnet}.1/24"), "dev", bridge]);
        sh("ip", &["link", "set", bridge, "up"]);
        let mut namespaces = Vec::new();
        for i in 0..workers {
            let ns = format!("kreg-{tag}-w{i}");
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
            let (host, inner) = (site.veth(i), format!("k{tag}{i}p"));
            let _ = Command::new("ip").args(["link", "del", &host]).output();
            sh("ip", &["netns", "add", &ns]);
            sh("ip", &["link", "add", &host, "type", "veth", "peer", "name", &inner]);
            sh("ip", &["link", "set", &inner, "netns", &ns]);
            sh("ip", &["link", "set", &host, "master", bridge]);
            sh("ip", &["link", "set", &host, "up"]);
            sh(
                "ip",
                &[
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{subnet}.{}/24", 10 + i),
                    "dev",
                    &inner,
                ],
            );
            sh("ip", &["-n", &ns, "link", "set", &inner, "up"]);
            sh("ip", &["-n", &ns, "link", "set", "lo", "up"]);
            namespaces.push(ns);
        }
        Net { namespaces, bridge }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = Command::new("ip").args(["link", "del", self.bridge]).output();
    }
}

/// A PostgreSQL of the test's own (kreg's private cluster, made by `kreg db url`), listening
/// on the bridge too, so that it can be restarted without touching other tests' server.
pub struct Pg {
    cluster: PathBuf,
    pg_ctl: PathBuf,
    pub url: String,
}

impl Pg {
    pub fn new(data: &Path, site: &Site) -> Pg {
        let (subnet, port) = (site.subnet, site.pg_port);
        let (ok, out) = kreg_out("", data, &["db", "url"]);
        assert!(ok, "{out}");
        let line = out
            .lines()
            .find(|l| l.contains("host="))
            .unwrap_or_else(|| panic!("{out}"));
        let cluster = PathBuf::from(line.rsplit_once("host=").unwrap().1.trim());
        let (ok, out) = kreg_out("", data, &["db", "stop"]);
        assert!(ok, "{out}");
        let append = |file: &str, text: &str| {
            let p = cluster.join(file);
            let mut t = std::fs::read_to_string(&p).unwrap();
            t.push_str(text);
            std::fs::write(&p, t).unwrap();
        };
        append(
            "postgresql.conf",
            &format!("\nlisten_addresses = '{subnet}.1'\nport = {port}\nmax_connections = 300\n"),
        );
        append("pg_hba.conf", &format!("\nhost all all {subnet}.0/24 trust\n"));
        let pg_ctl = std::fs::read_dir("/usr/lib/postgresql")
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path().join("bin/pg_ctl")))
            .filter(|p| p.exists())
            .max()
            .expect("pg_ctl under /usr/lib/postgresql");
        let pg = Pg {
            cluster,
            pg_ctl,
            url: format!("postgres://kreg@{subnet}.1:{port}/kreg"),
        };
        pg.ctl(&[
            "-l",
            &pg.cluster.join("server.log").display().to_string(),
            "-w",
            "start",
        ]);
        pg
    }

    /// pg_ctl as the cluster's owner.
    fn ctl(&self, args: &[&str]) {
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(&self.cluster).unwrap().uid();
        let mut cmd = if owner == 0 {
            Command::new(&self.pg_ctl)
        } else {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid",
                &owner.to_string(),
                "--regid",
                &owner_gid(&self.cluster),
                "--clear-groups",
            ])
            .arg(&self.pg_ctl);
            c
        };
        let out = cmd.arg("-D").arg(&self.cluster).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "pg_ctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn restart(&self, down: Duration) {
        self.ctl(&["-m", "fast", "-w", "stop"]);
        std::thread::sleep(down);
        self.ctl(&[
            "-l",
            &self.cluster.join("server.log").display().to_string(),
            "-w",
            "start",
        ]);
    }
}

fn owner_gid(p: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().gid().to_string()
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| self.ctl(&["-m", "immediate", "-w", "stop"]));
    }
}
