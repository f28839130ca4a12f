//! Host keys, checked as OpenSSH checks them: a key listed for the host in a known_hosts
//! file (plain or hashed names, wildcards, negations, `@revoked`) is accepted; a host with
//! a listed key of the same type but not this one has *changed* and is refused loudly; a
//! host not listed at all is refused with the key's fingerprint and the line to add. A key
//! pinned in the scenario replaces the files.

use std::path::PathBuf;

use hmac::{Hmac, Mac};
use russh::keys::ssh_key::known_hosts::{Entry, HostPatterns, Marker};
use russh::keys::{Algorithm, HashAlg, PublicKey};

/// Why a host key is not trusted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HostKeyError {
    #[error(
        "the host key of {host} is not known: {kind} key {fingerprint}. Nothing was sent to it.\n\
         If that is the machine's key (on the machine: ssh-keygen -lf /etc/ssh/ssh_host_{file_kind}_key.pub), \
         add this line to {file}:\n  {line}\nor pin the key in the host's entry: host_key: \"{fingerprint}\""
    )]
    Unknown {
        host: String,
        kind: String,
        file_kind: String,
        fingerprint: String,
        file: String,
        line: String,
    },
    #[error(
        "WARNING: THE HOST KEY OF {host} HAS CHANGED. It shows {kind} key {fingerprint}, but {file}:{line_no} \
         lists another {kind} key ({expected}) for it. Someone may be intercepting the connection, or the machine \
         was reinstalled. Nothing was sent to it. If the change is expected, remove line {line_no} of {file} \
         (ssh-keygen -R '{pattern}' -f {file}) and add the new key."
    )]
    Changed {
        host: String,
        pattern: String,
        kind: String,
        fingerprint: String,
        expected: String,
        file: String,
        line_no: usize,
    },
    #[error("the host key of {host} ({fingerprint}) is marked @revoked in {file}:{line_no}. Nothing was sent to it.")]
    Revoked {
        host: String,
        fingerprint: String,
        file: String,
        line_no: usize,
    },
    #[error(
        "the host key of {host} is {fingerprint}, not the key pinned in the scenario ({pinned}). Nothing was sent to it."
    )]
    PinMismatch {
        host: String,
        fingerprint: String,
        pinned: String,
    },
    #[error("{host} offered an OpenSSH certificate as its host key; kreg checks plain host keys only")]
    Certificate { host: String },
}

/// How a host key came to be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Listed for the host at `file:line`.
    Known { file: PathBuf, line: usize },
    /// The key pinned in the scenario.
    Pinned,
}

/// The name a known_hosts line gives a host: `host`, or `[host]:port` off port 22.
pub fn host_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// `SHA256:…`, as `ssh-keygen -l` prints it.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// The known_hosts files used when a host entry names none, as OpenSSH reads them.
pub fn default_files() -> Vec<PathBuf> {
    vec![
        crate::config::home().join(".ssh/known_hosts"),
        PathBuf::from("/etc/ssh/ssh_known_hosts"),
    ]
}

/// One entry of a known_hosts file that applies to the host.
struct Listed {
    file: PathBuf,
    line: usize,
    marker: Option<Marker>,
    key: PublicKey,
}

/// Every entry of `files` whose host patterns match `name`. Lines that do not parse are
/// skipped (OpenSSH skips them too); a file that does not exist lists nothing.
fn listed(files: &[PathBuf], name: &str) -> Vec<Listed> {
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Ok(entry) = line.parse::<Entry>() else {
                continue;
            };
            if patterns_match(entry.host_patterns(), name) {
                out.push(Listed {
                    file: file.clone(),
                    line: i + 1,
                    marker: entry.marker().cloned(),
                    key: entry.public_key().clone(),
                });
            }
        }
    }
    out
}

fn patterns_match(patterns: &HostPatterns, name: &str) -> bool {
    match patterns {
        HostPatterns::HashedName { salt, hash } => {
            let Ok(mut mac) = Hmac::<sha1::Sha1>::new_from_slice(salt) else {
                return false;
            };
            mac.update(name.as_bytes());
            mac.verify_slice(hash).is_ok()
        }
        HostPatterns::Patterns(list) => {
            let mut matched = false;
            for p in list {
                if let Some(neg) = p.strip_prefix('!') {
                    if wildcard(neg, name) {
                        return false;
                    }
                } else if wildcard(p, name) {
                    matched = true;
                }
            }
            matched
        }
    }
}

/// OpenSSH's pattern match: `*` any run of characters, `?` one; case-insensitive.
fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let n: Vec<char> = name.to_ascii_lowercase().chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Key types that stand for the same key (an RSA key signs with SHA-1, SHA-256 or SHA-512).
fn same_family(a: &Algorithm, b: &Algorithm) -> bool {
    match (a, b) {
        (Algorithm::Rsa { .. }, Algorithm::Rsa { .. }) => true,
        _ => a == b,
    }
}

/// The key types the files list for the host, to ask the server for those first (as
/// OpenSSH does), so that a host known by its RSA key is not called unknown because it
/// also has an Ed25519 one.
pub fn known_algorithms(files: &[PathBuf], host: &str, port: u16) -> Vec<Algorithm> {
    let mut out: Vec<Algorithm> = Vec::new();
    for l in listed(files, &host_name(host, port)) {
        if l.marker.is_none() && !out.iter().any(|a| same_family(a, &l.key.algorithm())) {
            out.push(l.key.algorithm());
        }
    }
    out
}

fn kind_of(key: &PublicKey) -> (String, String) {
    match key.algorithm() {
        Algorithm::Ed25519 => ("ED25519".into(), "ed25519".into()),
        Algorithm::Ecdsa { .. } => ("ECDSA".into(), "ecdsa".into()),
        Algorithm::Rsa { .. } => ("RSA".into(), "rsa".into()),
        other => (other.as_str().to_ascii_uppercase(), other.as_str().to_string()),
    }
}

/// Whether `key`, shown by `host:port`, is to be trusted: by `pin` when given, else by
/// the known_hosts `files`.
pub fn verify(
    host: &str,
    port: u16,
    key: &PublicKey,
    files: &[PathBuf],
    pin: Option<&str>,
) -> Result<Trust, Box<HostKeyError>> {
    verify_inner(host, port, key, files, pin).map_err(Box::new)
}

// Boxed by `verify`, its only caller outside the tests.
#[allow(clippy::result_large_err)]
fn verify_inner(
    host: &str,
    port: u16,
    key: &PublicKey,
    files: &[PathBuf],
    pin: Option<&str>,
) -> Result<Trust, HostKeyError> {
    let name = host_name(host, port);
    let fp = fingerprint(key);
    if let Some(pinned) = pin {
        if pinned.trim_end_matches('=') == fp.trim_end_matches('=') {
            return Ok(Trust::Pinned);
        }
        return Err(HostKeyError::PinMismatch {
            host: name,
            fingerprint: fp,
            pinned: pinned.to_string(),
        });
    }
    let entries = listed(files, &name);
    let same_key = |l: &&Listed| l.key.key_data() == key.key_data();
    if let Some(l) = entries
        .iter()
        .filter(same_key)
        .find(|l| l.marker == Some(Marker::Revoked))
    {
        return Err(HostKeyError::Revoked {
            host: name,
            fingerprint: fp,
            file: l.file.display().to_string(),
            line_no: l.line,
        });
    }
    let plain = || entries.iter().filter(|l| l.marker.is_none());
    if let Some(l) = plain().find(same_key) {
        return Ok(Trust::Known {
            file: l.file.clone(),
            line: l.line,
        });
    }
    let (kind, file_kind) = kind_of(key);
    if let Some(l) = plain().find(|l| same_family(&l.key.algorithm(), &key.algorithm())) {
        return Err(HostKeyError::Changed {
            host: name.clone(),
            pattern: name,
            kind,
            fingerprint: fp,
            expected: fingerprint(&l.key),
            file: l.file.display().to_string(),
            line_no: l.line,
        });
    }
    let openssh = key.to_openssh().unwrap_or_default();
    let mut words = openssh.split_whitespace();
    let line = format!("{name} {} {}", words.next().unwrap_or(""), words.next().unwrap_or(""));
    Err(HostKeyError::Unknown {
        host: name,
        kind,
        file_kind,
        fingerprint: fp,
        file: files
            .first()
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| "~/.ssh/known_hosts".into()),
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFNLAfoZdtOMHSoGbQaBx7GtlLlffceoFhYjYbLottYC";
    const ED2: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGwycY4fHZD6DriA8u/y5JuH/zTv9v4VzoUStH0FW4RS";

    fn key(s: &str) -> PublicKey {
        PublicKey::from_openssh(s).unwrap()
    }

    fn file(text: &str) -> (tempdir::Dir, PathBuf) {
        let d = tempdir::Dir::new();
        let p = d.0.join("known_hosts");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "kreg-hostkey-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    /// A hashed name as `ssh-keygen -H` writes it, for `name` with `salt`.
    fn hashed(name: &str, salt: &[u8]) -> String {
        use base64ct::{Base64, Encoding};
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(salt).unwrap();
        mac.update(name.as_bytes());
        let hash = mac.finalize().into_bytes();
        format!("|1|{}|{}", Base64::encode_string(salt), Base64::encode_string(&hash))
    }

    #[test]
    fn a_listed_key_is_known_by_plain_hashed_and_wildcard_names() {
        for hosts in [
            "[10.0.0.5]:2222".to_string(),
            hashed("[10.0.0.5]:2222", b"01234567890123456789"),
            "other,[10.0.0.*]:2222".to_string(),
            "[10.0.0.?]:2222".to_string(),
        ] {
            let (_d, p) = file(&format!("# comment\nbroken line\n{hosts} {ED}\n"));
            let got = verify_inner("10.0.0.5", 2222, &key(ED), std::slice::from_ref(&p), None);
            assert_eq!(got.unwrap(), Trust::Known { file: p, line: 3 }, "{hosts}");
        }
    }

    #[test]
    fn port_22_is_the_bare_name_and_negation_excludes() {
        let (_d, p) = file(&format!("10.0.0.5 {ED}\n"));
        assert!(verify_inner("10.0.0.5", 22, &key(ED), std::slice::from_ref(&p), None).is_ok());
        assert!(matches!(
            verify_inner("10.0.0.5", 2222, &key(ED), &[p], None),
            Err(HostKeyError::Unknown { .. })
        ));
        let (_d, p) = file(&format!("10.0.0.*,!10.0.0.5 {ED}\n"));
        assert!(matches!(
            verify_inner("10.0.0.5", 22, &key(ED), &[p], None),
            Err(HostKeyError::Unknown { .. })
        ));
    }

    #[test]
    fn an_unknown_host_gets_its_fingerprint_and_the_line_to_add() {
        let (_d, p) = file("");
        let e = verify_inner("h1", 2200, &key(ED), std::slice::from_ref(&p), None).unwrap_err();
        let msg = e.to_string();
        let fp = fingerprint(&key(ED));
        assert!(fp.starts_with("SHA256:") && msg.contains(&fp), "{msg}");
        assert!(msg.contains(&format!("[h1]:2200 {ED}")), "{msg}");
        assert!(msg.contains(&p.display().to_string()), "{msg}");
        // The line printed, added to the file, makes the host known.
        let HostKeyError::Unknown { line, .. } = e else {
            unreachable!()
        };
        std::fs::write(&p, format!("{line}\n")).unwrap();
        assert!(verify_inner("h1", 2200, &key(ED), &[p], None).is_ok());
    }

    #[test]
    fn another_key_of_the_same_type_has_changed_and_revoked_keys_are_refused() {
        let (_d, p) = file(&format!("h1 {ED2}\n"));
        let e = verify_inner("h1", 22, &key(ED), std::slice::from_ref(&p), None).unwrap_err();
        assert!(matches!(e, HostKeyError::Changed { line_no: 1, .. }), "{e}");
        assert!(e.to_string().contains("HAS CHANGED"));
        let (_d, p) = file(&format!("h1 {ED}\n@revoked * {ED}\n"));
        assert!(matches!(
            verify_inner("h1", 22, &key(ED), &[p], None),
            Err(HostKeyError::Revoked { line_no: 2, .. })
        ));
    }

    #[test]
    fn a_pin_decides_alone() {
        let (_d, p) = file(&format!("h1 {ED2}\n"));
        let fp = fingerprint(&key(ED));
        assert_eq!(
            verify_inner("h1", 22, &key(ED), std::slice::from_ref(&p), Some(&fp)).unwrap(),
            Trust::Pinned
        );
        let other = fingerprint(&key(ED2));
        assert!(matches!(
            verify_inner("h1", 22, &key(ED), &[p], Some(&other)),
            Err(HostKeyError::PinMismatch { .. })
        ));
    }

    #[test]
    fn known_types_come_first() {
        let (_d, p) = file(&format!("h1 {ED}\nh2 {ED2}\n"));
        assert_eq!(
            known_algorithms(std::slice::from_ref(&p), "h1", 22),
            vec![Algorithm::Ed25519]
        );
        assert!(known_algorithms(&[p], "h3", 22).is_empty());
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("*", "anything"));
        assert!(wildcard("a*c", "abbbc"));
        assert!(wildcard("A?C", "abc"));
        assert!(!wildcard("a?c", "ac"));
        assert!(!wildcard("*.example.com", "example.com"));
        assert!(wildcard("*.example.com", "x.example.com"));
    }
}
