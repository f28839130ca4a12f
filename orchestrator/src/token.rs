//! Agent tokens on the controller, in one place: a fresh one made, a token file read (its
//! first line, as the agent reads it), made when missing, and the files kreg keeps per
//! machine. Every token read or made is remembered as a secret (masked wherever kreg writes
//! or prints text). The token's wire form and file rules are `kreg_protocol::wire::Token`.

use std::path::{Path, PathBuf};

use crate::scenario::SshSpec;

/// A fresh random token (48 hex digits from /dev/urandom).
pub fn random() -> Result<String, kreg_protocol::Error> {
    use std::io::Read;
    let mut buf = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| kreg_protocol::Error::Secret(format!("/dev/urandom: {e}")))?;
    let token: String = buf.iter().map(|b| format!("{b:02x}")).collect();
    crate::secrets::remember(&token);
    Ok(token)
}

/// A token file's token: its first line, as the agent reads it.
pub fn read(path: &Path) -> Result<String, kreg_protocol::Error> {
    let token = kreg_protocol::wire::Token::read_file(path)?;
    crate::secrets::remember(token.expose());
    Ok(token.expose().to_string())
}

/// The token in `path`, made first (random, mode 0600, its folder created) when the file
/// does not exist. It is written whole under another name, then linked in: a second kreg
/// making the same file at once keeps the first one's token.
pub fn read_or_make(path: &Path) -> Result<String, kreg_protocol::Error> {
    if !path.exists() {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| kreg_protocol::Error::Secret(format!("{}: {e}", dir.display())))?;
        let token = random()?;
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| kreg_protocol::Error::Secret(format!("{}: {e}", tmp.display())))?;
        f.write_all(format!("{token}\n").as_bytes())
            .map_err(|e| kreg_protocol::Error::Secret(format!("{}: {e}", tmp.display())))?;
        drop(f);
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(kreg_protocol::Error::Secret(format!("{}: {e}", path.display()))),
        }
    }
    read(path)
}

/// The token files kreg keeps per machine, under its data folder.
#[derive(Debug, Clone, Copy)]
pub enum Kept {
    /// The agent the ssh transport installs and speaks to through its tunnel:
    /// `ssh/USER@ADDRESS:PORT.token`.
    Ssh,
    /// The agent `kreg agent install` installs as a service: `agents/ADDRESS.token`.
    Service,
}

impl Kept {
    /// Where kreg keeps this token for the machine.
    pub fn path(self, data_dir: &Path, spec: &SshSpec) -> PathBuf {
        match self {
            Kept::Ssh => {
                let safe: String = spec
                    .target()
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || matches!(c, '@' | '.' | '_' | '-' | ':') {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                data_dir.join("ssh").join(format!("{safe}.token"))
            }
            Kept::Service => data_dir.join("agents").join(format!("{}.token", spec.address)),
        }
    }

    /// The token kept for the machine, when one was made.
    pub fn read_if_any(self, data_dir: &Path, spec: &SshSpec) -> Option<String> {
        read(&self.path(data_dir, spec)).ok()
    }

    /// The token kept for the machine, made (random, mode 0600) on first use, and its file.
    pub fn read_or_make(self, data_dir: &Path, spec: &SshSpec) -> Result<(PathBuf, String), kreg_protocol::Error> {
        let path = self.path(data_dir, spec);
        let token = read_or_make(&path)?;
        Ok((path, token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(address: &str) -> SshSpec {
        SshSpec {
            address: address.into(),
            port: 22,
            user: "kreg".into(),
            identity: None,
            passphrase_file: None,
            known_hosts: None,
            host_key: None,
            agent_port: 7879,
        }
    }

    #[test]
    fn a_kept_token_is_made_once_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("kreg-token-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = spec("10.0.0.7");
        assert_eq!(Kept::Ssh.read_if_any(&dir, &s), None);
        let (path, made) = Kept::Ssh.read_or_make(&dir, &s).unwrap();
        assert_eq!(path, dir.join("ssh/kreg@10.0.0.7:22.token"));
        assert_eq!(made.len(), 48);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            Kept::Ssh.read_or_make(&dir, &s).unwrap().1,
            made,
            "kept, not made again"
        );
        assert_eq!(Kept::Ssh.read_if_any(&dir, &s), Some(made.clone()));
        assert_eq!(Kept::Service.path(&dir, &s), dir.join("agents/10.0.0.7.token"));
        assert_eq!(
            Kept::Service.read_if_any(&dir, &s),
            None,
            "the two slots never share a token"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
