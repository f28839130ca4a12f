//! Two hosts in network namespaces of their own on this machine (a SUT and a load
//! generator), each with a kreg-agent serving HTTPS, joined by veth links.

use std::process::{Child, Command};

use super::{agent_bin, spawn_tls_agent};

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("iproute2");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Namespaces and links, removed on drop: the controller reaches the SUT at NET.1.2 and
/// the LDG at NET.2.2; the SUT is NET.3.1 to the LDG, the LDG NET.3.2 to the SUT.
pub struct Net {
    pub names: Vec<String>,
}

impl Net {
    pub fn new(tag: &str, subnet: &str) -> Net {
        let sut = format!("kreg-{tag}-sut");
        let ldg = format!("kreg-{tag}-ldg");
        let _ = Command::new("ip").args(["netns", "del", &sut]).output();
        let _ = Command::new("ip").args(["netns", "del", &ldg]).output();
        ip(&["netns", "add", &sut]);
        ip(&["netns", "add", &ldg]);
        let net = Net {
            names: vec![sut.clone(), ldg.clone()],
        };
        // controller <-> sut, controller <-> ldg, sut <-> ldg
        for (a, b, ns_a, ns_b, addr_a, addr_b) in [
            (
                format!("kc{tag}s"),
                format!("ks{tag}c"),
                None,
                Some(&sut),
                &format!("{subnet}.1.1/30"),
                &format!("{subnet}.1.2/30"),
            ),
            (
                format!("kc{tag}l"),
                format!("kl{tag}c"),
                None,
                Some(&ldg),
                &format!("{subnet}.2.1/30"),
                &format!("{subnet}.2.2/30"),
            ),
            (
                format!("ks{tag}l"),
                format!("kl{tag}s"),
                Some(&sut),
                Some(&ldg),
                &format!("{subnet}.3.1/30"),
                &format!("{subnet}.3.2/30"),
            ),
        ] {
            let _ = Command::new("ip").args(["link", "del", &a]).output();
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
            for (dev, ns, addr) in [(&a, ns_a, addr_a), (&b, ns_b, addr_b)] {
                match ns {
                    Some(ns) => {
                        ip(&["link", "set", dev, "netns", ns]);
                        ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
                        ip(&["-n", ns, "link", "set", dev, "up"]);
                    }
                    None => {
                        ip(&["addr", "add", addr, "dev", dev]);
                        ip(&["link", "set", dev, "up"]);
                    }
                }
            }
        }
        for ns in [&sut, &ldg] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        net
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

pub struct NsAgent {
    child: Child,
    pub url: String,
    pub fingerprint: String,
}

impl Drop for NsAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agent_in(ns: &str, addr: &str, dir: &std::path::Path, token_file: &std::path::Path) -> NsAgent {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(agent_bin())
        .args(["--listen", &format!("{addr}:0"), "--token-file"])
        .arg(token_file)
        .arg("--data-dir")
        .arg(dir.join(ns));
    let (child, url, fingerprint) = spawn_tls_agent(cmd);
    NsAgent {
        child,
        url,
        fingerprint,
    }
}
