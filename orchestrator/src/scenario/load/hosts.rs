//! Hosts, their transports (how kreg reaches them, boots kernels on them, resets them and
//! reads their console), and the scenario's `boot:`.

use super::super::*;
use super::{Cx, Fields};
use crate::yaml::{Kind, Node};

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
        let f = self.map(node, &what, &["role", "transport"])?;
        let role = self
            .required(&f, "role", &what)
            .and_then(|n| match self.string(n, "role")?.as_str() {
                "sut" => Some(Role::Sut),
                "loadgen" => Some(Role::Loadgen),
                other => {
                    self.error(n, format!("role: unknown role `{other}`; expected sut or loadgen"));
                    None
                }
            });
        let transport = self
            .required(&f, "transport", &what)
            .and_then(|n| self.transport(n, &what, default_boot));
        Some(Host {
            name: name.to_string(),
            role: role?,
            transport: transport?,
        })
    }

    fn transport(&mut self, node: &Node, host: &str, default_boot: BootVia) -> Option<Transport> {
        let what = format!("the transport of {host}");
        let f = self.map(
            node,
            &what,
            &[
                "kind",
                "url",
                "token_file",
                "cpus",
                "memory_mib",
                "parallel",
                "boot",
                "reset",
                "console",
                "keep_kernels",
            ],
        )?;
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
                self.http_transport(&f, &what, default_boot)
            }
            "lab" => {
                refuse(
                    self,
                    &["url", "token_file", "boot", "reset", "console", "keep_kernels"],
                    "lab",
                );
                self.lab_transport(&f)
            }
            other => {
                self.error(
                    kind_node,
                    format!("kind: unknown transport `{other}`; expected http or lab"),
                );
                None
            }
        }
    }

    /// A machine running kreg-agent: its URL and token, how it boots kernels, how it is
    /// reset and its console read, how many of kreg's kernels it keeps.
    fn http_transport(&mut self, f: &Fields, what: &str, default_boot: BootVia) -> Option<Transport> {
        let url = self.required(f, "url", what).and_then(|n| {
            let u = self.string(n, "url")?;
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                self.error(n, format!("url: {u:?} must start with http:// or https://"));
                return None;
            }
            Some(u)
        });
        let token = self
            .required(f, "token_file", what)
            .and_then(|n| self.file(n, "token_file"));
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
        Some(Transport::Http(HttpTransport {
            url: url?,
            token_file: token?,
            boot: boot?,
            reset: reset?,
            console: console?,
            keep_kernels: keep?,
        }))
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
        let f = self.map(node, "boot", &["timeout", "method"])?;
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
