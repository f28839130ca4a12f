//! Hosts, their transports (how kreg reaches them, boots kernels on them, resets them and
//! reads their console), and the scenario's `boot:`.

use super::super::*;
use super::{Cx, Fields};
use crate::scenario::keys::{self, SSH_KEYS};
use crate::yaml::{Kind, Node};
use crate::Error;

/// Whether an http url names this machine (its loopback).
/// An agent's URL, read as the HTTP client reads it: scheme http or https, a host, a port,
/// a path, and nothing else. A backslash (which the client takes for a slash), userinfo
/// (`user@`), a query, a fragment, whitespace or a control character is refused, so that the
/// host kreg checks is the host the token goes to.
pub(crate) fn agent_url(u: &str) -> Result<url::Url, Error> {
    if let Some(c) = u.chars().find(|c| *c == '\\' || c.is_whitespace() || c.is_control()) {
        return Err(Error::invalid(format!(
            "url: {u:?} holds {c:?}: give scheme://host:port/path only"
        )));
    }
    let url = url::Url::parse(u).map_err(|e| Error::invalid(format!("url: {u:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::invalid(format!(
            "url: {u:?} must start with http:// or https://"
        )));
    }
    let authority = u
        .split_once("://")
        .map_or("", |(_, r)| r)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    if authority.contains('@') || !url.username().is_empty() || url.password().is_some() {
        return Err(Error::invalid(format!(
            "url: {u:?} holds a user name or password (user@host): the agent takes its token from token_file only"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Error::invalid(format!(
            "url: {u:?} has a query or fragment: give scheme://host:port/path only"
        )));
    }
    if url.host().is_none() {
        return Err(Error::invalid(format!("url: {u:?} names no host")));
    }
    Ok(url)
}

/// Whether the client would connect to this machine itself.
fn is_loopback(url: &url::Url) -> bool {
    let Some(h) = url.host_str() else {
        return false;
    };
    let h = h.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl<'a> Cx<'a> {
    pub(super) fn hosts(&mut self, node: &Node, default_boot: BootVia) -> Option<Vec<Host>> {
        let Kind::Map(entries) = &node.kind else {
            self.expected(node, "hosts", "a mapping of host name to host");
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        let mut names: Vec<String> = Vec::new();
        for (k, v) in entries {
            let Some(name) = self.name(k, "host name") else {
                ok = false;
                continue;
            };
            if names.contains(&name) {
                self.error(k, format!("host `{name}` is declared twice"));
                ok = false;
                continue;
            }
            names.push(name.clone());
            match self.host(&name, v, default_boot) {
                Some(h) => out.push(h),
                None => ok = false,
            }
        }
        if entries.is_empty() {
            self.error(node, "hosts: declare at least one host");
            return None;
        }
        ok.then_some(out)
    }

    fn host(&mut self, name: &str, node: &Node, default_boot: BootVia) -> Option<Host> {
        let what = format!("host `{name}`");
        let f = self.map(node, &what, &keys::HOST)?;
        let (role, transport) = self.role_and_transport(&f, &what, default_boot);
        let tuning = match f.get("tuning") {
            Some(n) => self.tuning(n, &what),
            None => Some(Default::default()),
        };
        Some(Host {
            name: name.to_string(),
            role: role?,
            transport: transport?,
            tuning: tuning?,
        })
    }

    /// A host's (or a pool machine's) required `role` and `transport`.
    pub(super) fn role_and_transport(
        &mut self,
        f: &Fields,
        what: &str,
        default_boot: BootVia,
    ) -> (Option<Role>, Option<Transport>) {
        let role = self
            .required(f, "role", what)
            .and_then(|n| match self.string(n, "role")?.as_str() {
                "sut" => Some(Role::Sut),
                "loadgen" => Some(Role::Loadgen),
                other => {
                    self.error(n, format!("role: unknown role `{other}`; expected sut or loadgen"));
                    None
                }
            });
        let transport = self
            .required(f, "transport", what)
            .and_then(|n| self.transport(n, what, default_boot));
        (role, transport)
    }

    fn transport(&mut self, node: &Node, host: &str, default_boot: BootVia) -> Option<Transport> {
        let what = format!("the transport of {host}");
        let f = self.map(node, &what, &keys::TRANSPORT)?;
        let kind_node = self.required(&f, "kind", &what)?;
        let kind = self.string(kind_node, "kind")?;
        let refuse = |cx: &mut Self, keys: &[&str], kind: &str| {
            for key in keys {
                if let Some(n) = f.get(key) {
                    cx.error(n, format!("`{key}` does not apply to transport kind `{kind}`"));
                }
            }
        };
        match kind.as_str() {
            "http" => {
                refuse(self, &["cpus", "memory_mib", "parallel"], "http");
                refuse(self, SSH_KEYS, "http");
                self.http_transport(&f, &what, default_boot)
            }
            "ssh" => {
                refuse(
                    self,
                    &["url", "cpus", "memory_mib", "parallel", "tls_fingerprint", "insecure"],
                    "ssh",
                );
                self.ssh_transport(&f, &what, default_boot)
            }
            "lab" => {
                refuse(
                    self,
                    &["url", "token_file", "boot", "reset", "console", "keep_kernels"],
                    "lab",
                );
                refuse(self, SSH_KEYS, "lab");
                refuse(self, &["tls_fingerprint", "insecure"], "lab");
                self.lab_transport(&f)
            }
            other => {
                self.error(
                    kind_node,
                    format!("kind: unknown transport `{other}`; expected http, ssh or lab"),
                );
                None
            }
        }
    }

    /// How a machine kreg reaches through its agent boots kernels, is reset and has its
    /// console read, and how many of kreg's kernels it keeps.
    pub(super) fn machine(&mut self, f: &Fields, default_boot: BootVia) -> Option<Machine> {
        let boot = match f.get("boot") {
            None => Some(default_boot),
            Some(n) => self.boot_via(n, "boot"),
        };
        let reset = match f.get("reset") {
            None => Some(None),
            Some(n) => self
                .argv(n, "reset", "give a program and its arguments, e.g. [ipmitool, …]")
                .map(Some),
        };
        let console = match f.get("console") {
            None => Some(None),
            Some(n) => self
                .argv(n, "console", "give a program and its arguments, e.g. [ipmitool, …]")
                .map(Some),
        };
        let keep = self.uint_or(f, "keep_kernels", "keep_kernels", (1, 1000), KEEP_KERNELS);
        Some(Machine {
            boot: boot?,
            reset: reset?,
            console: console?,
            keep_kernels: keep?,
        })
    }

    /// A machine running kreg-agent: its URL and token, how it boots kernels, how it is
    /// reset and its console read, how many of kreg's kernels it keeps.
    fn http_transport(&mut self, f: &Fields, what: &str, default_boot: BootVia) -> Option<Transport> {
        let url = self.required(f, "url", what).and_then(|n| {
            let u = self.string(n, "url")?;
            if let Err(e) = agent_url(&u) {
                self.error(n, e.to_string());
                return None;
            }
            Some((u, n))
        });
        let fingerprint = match f.get("tls_fingerprint") {
            None => Some(None),
            Some(n) => self.string(n, "tls_fingerprint").and_then(|s| {
                if kreg_protocol::pin::normalize(&s).is_none() {
                    self.error(
                        n,
                        format!("tls_fingerprint: {s:?} is not a SHA-256 fingerprint (sha256: and 64 hex digits, as `kreg agent install` prints it)"),
                    );
                    return None;
                }
                Some(Some(s))
            }),
        };
        let insecure = self.bool_or(f, "insecure", "insecure", false);
        let url = match (url, &fingerprint, insecure) {
            (Some((u, n)), Some(fp), Some(insecure)) => {
                self.check_clear_text(&u, n, f, fp.is_some(), insecure).then_some(u)
            }
            (Some((u, _)), _, _) => Some(u),
            _ => None,
        };
        let token = self
            .required(f, "token_file", what)
            .and_then(|n| self.secret(n, "token_file"));
        let machine = self.machine(f, default_boot);
        Some(Transport::Http(HttpTransport {
            url: url?,
            token_file: token?,
            tls_fingerprint: fingerprint?,
            insecure: insecure?,
            machine: machine?,
        }))
    }

    /// An https url has its certificate pinned; a plain http url reaches this machine only,
    /// unless the user says `insecure: true`: a token never crosses a network in clear text
    /// by accident.
    fn check_clear_text(&mut self, url: &str, n: &Node, f: &Fields, pinned: bool, insecure: bool) -> bool {
        let parsed = agent_url(url).expect("checked when read");
        let https = parsed.scheme() == "https";
        if https && !pinned {
            self.error(
                n,
                format!("url: {url:?} is https, so give the agent's certificate as tls_fingerprint: (`kreg agent install` prints it; on the machine, `kreg-agent --tls-fingerprint`)"),
            );
            return false;
        }
        if !https && pinned {
            let at = f.get("tls_fingerprint").unwrap_or(n);
            self.error(
                at,
                format!("tls_fingerprint: applies to an https url, and {url:?} is http"),
            );
            return false;
        }
        if https && insecure {
            let at = f.get("insecure").unwrap_or(n);
            self.error(at, "insecure: an https url is not insecure; remove it");
            return false;
        }
        if !https && !insecure && !is_loopback(&parsed) {
            self.error(
                n,
                format!(
                    "url: {url:?} would send the agent's token across the network in clear text; use https:// with tls_fingerprint (kreg agent install sets it up), the ssh transport, or say insecure: true"
                ),
            );
            return false;
        }
        true
    }

    /// A qemu VM of kreg's lab.
    fn lab_transport(&mut self, f: &Fields) -> Option<Transport> {
        let cpus = self.uint_or(f, "cpus", "cpus", (1, 8), 2);
        let mem = self.uint_or(f, "memory_mib", "memory_mib", (256, 8192), 1024);
        let parallel = self.bool_or(f, "parallel", "parallel", false);
        Some(Transport::Lab {
            cpus: cpus?,
            memory_mib: mem?,
            parallel: parallel?,
        })
    }

    pub(super) fn boot(&mut self, node: &Node) -> Option<Boot> {
        let f = self.map(node, "boot", &keys::BOOT)?;
        let timeout_secs = match f.get("timeout") {
            Some(n) => self.duration(n, "boot timeout"),
            None => Some(300),
        };
        let method = match f.get("method") {
            Some(n) => self.boot_via(n, "boot method"),
            None => Some(BootVia::Kexec),
        };
        Some(Boot {
            timeout_secs: timeout_secs?,
            method: method?,
        })
    }

    /// `kexec` or `grub-reboot`.
    fn boot_via(&mut self, node: &Node, what: &str) -> Option<BootVia> {
        match self.string(node, what)?.as_str() {
            "kexec" => Some(BootVia::Kexec),
            "grub-reboot" => Some(BootVia::GrubReboot),
            other => {
                self.error(
                    node,
                    format!("{what}: unknown method `{other}`; expected kexec or grub-reboot"),
                );
                None
            }
        }
    }
}
