//! The ssh transport: where sshd listens, as whom kreg logs in, how it knows the host key.

use std::path::PathBuf;

use super::super::*;
use super::{Cx, Fields};
use crate::yaml::Node;

impl<'a> Cx<'a> {
    pub(super) fn ssh_transport(&mut self, f: &Fields, what: &str, default_boot: BootVia) -> Option<Transport> {
        let address = self.required(f, "address", what).and_then(|n| self.ssh_address(n));
        let user = match f.get("user") {
            None => Some("root".to_string()),
            Some(n) => self.ssh_user(n),
        };
        let identity = self.opt_path(f, "identity", true);
        let passphrase_file = self.opt_path(f, "passphrase_file", true);
        let known_hosts = self.opt_path(f, "known_hosts", false);
        let token_file = match f.get("token_file") {
            None => Some(None),
            Some(n) => self.secret(n, "token_file").map(Some),
        };
        let host_key = match f.get("host_key") {
            None => Some(None),
            Some(n) => self.host_key(n).map(Some),
        };
        let agent_port = self.uint_or(f, "agent_port", "agent_port", (1, 65535), SSH_AGENT_PORT as u32);
        let machine = self.machine(f, default_boot);
        let (address, port) = address?;
        Some(Transport::Ssh(SshTransport {
            ssh: SshSpec {
                address,
                port,
                user: user?,
                identity: identity?,
                passphrase_file: passphrase_file?,
                known_hosts: known_hosts?,
                host_key: host_key?,
                agent_port: agent_port? as u16,
            },
            token_file: token_file?,
            machine: machine?,
        }))
    }

    /// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address; port 22 by default.
    fn ssh_address(&mut self, node: &Node) -> Option<(String, u16)> {
        let s = self.string(node, "address")?;
        let (host, port) = match split_address(&s) {
            Ok(hp) => hp,
            Err(why) => {
                self.error(node, format!("address: {s:?} {why}; expected host or host:port"));
                return None;
            }
        };
        let bad_host = host.is_empty()
            || host.starts_with('-')
            || host
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '/' | ',' | '*' | '?' | '!'));
        if bad_host {
            self.error(node, format!("address: {host:?} is not a host name or address"));
            return None;
        }
        Some((host, port))
    }

    fn ssh_user(&mut self, node: &Node) -> Option<String> {
        let s = self.string(node, "user")?;
        let ok = !s.is_empty()
            && s.len() <= 32
            && !s.starts_with('-')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !ok {
            self.error(node, format!("user: {s:?} is not a user name"));
            return None;
        }
        Some(s)
    }

    /// `SHA256:` and the base64 of a SHA-256 digest, as `ssh-keygen -l` prints it.
    fn host_key(&mut self, node: &Node) -> Option<String> {
        let s = self.string(node, "host_key")?;
        let body = s.strip_prefix("SHA256:").map(|b| b.trim_end_matches('='));
        match body {
            Some(b) if b.len() == 43 && b.chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/') => {
                Some(format!("SHA256:{b}"))
            }
            _ => {
                self.error(
                    node,
                    format!(
                        "host_key: {s:?} is not a SHA256 fingerprint; give what `ssh-keygen -lf KEY.pub` prints, e.g. \"SHA256:…\" (43 characters after the colon)"
                    ),
                );
                None
            }
        }
    }

    /// An optional file at `key`: `~/` is the user's home (expanded by the caller); relative paths are taken from the
    /// scenario's folder. `must_exist` files are checked by `kreg validate`.
    fn opt_path(&mut self, f: &Fields, key: &str, must_exist: bool) -> Option<Option<PathBuf>> {
        let Some(node) = f.get(key) else {
            return Some(None);
        };
        let s = self.string(node, key)?;
        if s.starts_with("~/") {
            // Kept as written: the caller, which knows the user's home, expands it
            // (`Scenario::expand_home`).
            let path = PathBuf::from(&s);
            if must_exist {
                self.files.push(crate::yaml::cx::FileRef {
                    path: path.clone(),
                    line: node.line,
                    col: node.col,
                    what: key.to_string(),
                    kind: crate::yaml::cx::FileKind::Secret,
                    written: s.clone(),
                });
            }
            return Some(Some(path));
        }
        if must_exist {
            return self.secret(node, key).map(Some);
        }
        if s.is_empty() || s.contains('\0') {
            self.error(node, format!("{key}: {s:?} is not a file name"));
            return None;
        }
        Some(Some(self.base_dir.join(s)))
    }
}

/// Host and port of an `address:` value.
pub(crate) fn split_address(s: &str) -> Result<(String, u16), &'static str> {
    let port = |p: &str| -> Result<u16, &'static str> {
        match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err("has a port that is not a number from 1 to 65535"),
        }
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("opens a [ it does not close")?;
        return match after {
            "" => Ok((host.to_string(), 22)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host.to_string(), port(p)?)),
                None => Err("has something other than :PORT after ]"),
            },
        };
    }
    match s.matches(':').count() {
        0 => Ok((s.to_string(), 22)),
        1 => {
            let (h, p) = s.split_once(':').expect("one colon");
            Ok((h.to_string(), port(p)?))
        }
        // A bare IPv6 address.
        _ => Ok((s.to_string(), 22)),
    }
}
