//! A pool file: the machines of a fleet, each with its role, its transport (the keys of a
//! scenario host's `transport:`), a SUT's load generator, its labels (what a run may ask for
//! and its pairs must share) and what only describes it (`about`: a serial, a rack).
//!
//! ```yaml
//! machines:
//!   sut-a: { role: sut, loadgen: ldg-a, labels: { cpu: EPYC-7763, numa: "2" },
//!            about: { serial: J1234, rack: r3 },
//!            transport: { kind: http, url: "https://10.0.0.5:7878", token_file: a.token,
//!                         tls_fingerprint: "sha256:…" } }
//!   ldg-a: { role: loadgen, transport: { kind: ssh, address: 10.0.0.6 } }
//! ```

use crate::scenario::keys;
use std::collections::BTreeMap;
use std::path::Path;

use super::super::*;
use crate::yaml::cx::Cx;
use crate::yaml::{Kind, Node};

/// One machine of a pool file.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolMachine {
    pub name: String,
    pub role: Role,
    pub transport: Transport,
    /// A SUT's load generator (another machine of the pool), leased with it.
    pub loadgen: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// Labels that only describe it: never matched, never compared between pairs.
    pub about: BTreeMap<String, String>,
}

/// Parses and checks a pool file; relative paths are taken from `base_dir`.
pub fn pool_from_str(text: &str, base_dir: &Path) -> Result<Vec<PoolMachine>, Vec<Diagnostic>> {
    super::parse_with(text, base_dir, |cx, root| cx.pool(root)).map(|(m, _)| m)
}

impl Cx<'_> {
    fn pool(&mut self, root: &Node) -> Option<Vec<PoolMachine>> {
        let f = self.map(root, "the pool file", &keys::POOL)?;
        let node = self.required(&f, "machines", "the pool file")?;
        let Kind::Map(entries) = &node.kind else {
            self.expected(node, "machines", "a mapping of machine name to machine");
            return None;
        };
        if entries.is_empty() {
            self.error(node, "machines: declare at least one machine");
            return None;
        }
        let mut out: Vec<PoolMachine> = Vec::new();
        let mut ok = true;
        for (k, v) in entries {
            let name = self.name(k, "machine name");
            match name {
                Some(n) if out.iter().any(|m| m.name == n) => {
                    self.error(k, format!("machine `{n}` is declared twice"));
                    ok = false;
                }
                Some(n) => match self.pool_machine(&n, v) {
                    Some(m) => out.push(m),
                    None => ok = false,
                },
                None => ok = false,
            }
        }
        if ok {
            self.check_loadgens(entries, &out);
            self.check_same_agent(entries, &out);
        }
        ok.then_some(out)
    }

    fn pool_machine(&mut self, name: &str, node: &Node) -> Option<PoolMachine> {
        let what = format!("machine `{name}`");
        let f = self.map(node, &what, &keys::MACHINE)?;
        let (role, transport) = self.role_and_transport(&f, &what, BootVia::Kexec);
        if let Some(Transport::Lab { .. }) = &transport {
            self.error(
                f.get("transport")?,
                format!("{what}: a lab VM cannot be a fleet machine (it lives with one controller)"),
            );
            return None;
        }
        let loadgen = match f.get("loadgen") {
            Some(n) => Some(self.name(n, "loadgen")?),
            None => None,
        };
        let labels = match f.get("labels") {
            Some(n) => self.labels(n, "labels")?,
            None => BTreeMap::new(),
        };
        let about = match f.get("about") {
            Some(n) => self.labels(n, "about")?,
            None => BTreeMap::new(),
        };
        Some(PoolMachine {
            name: name.to_string(),
            role: role?,
            transport: transport?,
            loadgen,
            labels,
            about,
        })
    }

    /// `labels: { key: value, … }` (or `about:`, the key given): names for keys, any plain
    /// text for values.
    fn labels(&mut self, node: &Node, key: &str) -> Option<BTreeMap<String, String>> {
        let Kind::Map(entries) = &node.kind else {
            self.expected(node, key, "a mapping of label to value");
            return None;
        };
        let mut out = BTreeMap::new();
        for (k, v) in entries {
            let key = self.name(k, "label")?;
            let value = self.string(v, &format!("label {key}"))?;
            if value.chars().any(char::is_control) {
                self.error(v, format!("label {key}: {value:?} holds a control character"));
                return None;
            }
            out.insert(key, value);
        }
        Some(out)
    }

    /// A SUT's `loadgen` names a load generator of the pool; only a SUT has one.
    fn check_loadgens(&mut self, entries: &[(Node, Node)], machines: &[PoolMachine]) {
        for ((k, _), m) in entries.iter().zip(machines) {
            let Some(l) = &m.loadgen else { continue };
            let found = machines.iter().find(|o| &o.name == l);
            let problem = match (m.role, found) {
                (Role::Loadgen, _) => Some(format!("machine `{}`: only a SUT has a loadgen", m.name)),
                (_, None) => Some(format!(
                    "machine `{}`: loadgen `{l}` is not a machine of this pool",
                    m.name
                )),
                (_, Some(o)) if o.role != Role::Loadgen => Some(format!(
                    "machine `{}`: `{l}` is not a loadgen (its role is sut)",
                    m.name
                )),
                _ => None,
            };
            if let Some(p) = problem {
                self.error(k, p);
            }
        }
    }

    /// Two entries that reach one agent (one address written two ways) would be leased to
    /// two slots at once, each fencing the other: the second is refused.
    fn check_same_agent(&mut self, entries: &[(Node, Node)], machines: &[PoolMachine]) {
        let mut seen: Vec<(String, &str)> = Vec::new();
        for ((k, _), m) in entries.iter().zip(machines) {
            let Some(at) = endpoint(&m.transport) else { continue };
            if let Some((_, first)) = seen.iter().find(|(e, _)| *e == at) {
                self.error(
                    k,
                    format!(
                        "machine `{}` reaches the same agent as machine `{first}` ({at}): one machine leased to two slots fences one of them; list it once",
                        m.name
                    ),
                );
                continue;
            }
            seen.push((at, &m.name));
        }
    }
}

/// Where a transport reaches its machine, written one way: the scheme, the host in lower
/// case (`localhost` and the loopback addresses as `127.0.0.1`), the port (the scheme's
/// default when none is given); a URL's path and trailing slash do not matter.
pub fn endpoint(t: &Transport) -> Option<String> {
    let host_key = |host: &str| {
        let h = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let h = h.trim_end_matches('.').to_string();
        let loopback = h == "localhost"
            || h == "::1"
            || h.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|a| a == std::net::Ipv4Addr::LOCALHOST);
        if loopback {
            "127.0.0.1".to_string()
        } else {
            h
        }
    };
    match t {
        Transport::Http(h) => {
            let (scheme, rest) = h.url.split_once("://")?;
            let scheme = scheme.to_ascii_lowercase();
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) if !p.contains(']') && p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => {
                    (h, p.parse::<u16>().ok()?)
                }
                _ => (authority, if scheme == "https" { 443 } else { 80 }),
            };
            Some(format!("{scheme}://{}:{port}", host_key(host)))
        }
        Transport::Ssh(s) => Some(format!("ssh://{}:{}", host_key(&s.ssh.address), s.ssh.port)),
        Transport::Lab { .. } => None,
    }
}
