//! The controller's configuration: defaults, then `KREG_*` (and the XDG and `DATABASE_URL`)
//! environment variables. The only place that reads the environment.

use std::path::PathBuf;

/// A secret string whose `Debug` hides it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// `DATABASE_URL`; without it kreg starts its own cluster under `data_dir`.
    pub database_url: Option<Secret>,
    /// `KREG_DATA_DIR`, else `$XDG_DATA_HOME/kreg`, else `~/.local/share/kreg`.
    pub data_dir: PathBuf,
    /// `KREG_CACHE_DIR`, else `$XDG_CACHE_HOME/kreg`, else `~/.cache/kreg`: kernel packages.
    pub cache_dir: PathBuf,
    /// `KREG_AGENT_BIN`, else `kreg-agent` beside the `kreg` binary.
    pub agent_bin: PathBuf,
    /// `KREG_LAB_ACCEL`: `auto` (default: KVM where it works, else TCG), `kvm` or `tcg`.
    pub lab_accel: String,
    /// How long a job that lost its host waits for it to answer again (90 s; a fleet
    /// worker's `--reconnect-wait`).
    pub reconnect_wait: std::time::Duration,
    /// The epoch every agent request carries outside a fleet slot: a health check takes a
    /// new one from the leases' sequence, so that an agent a slot fenced answers it.
    pub agent_epoch: Option<u64>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The user's home directory (`$HOME`, else /root).
pub fn home() -> PathBuf {
    var("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"))
}

/// The folders of `$PATH`, in order.
pub fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

/// Where temporary files go (`$TMPDIR`, else /tmp).
pub fn temp_dir() -> PathBuf {
    std::env::temp_dir()
}

/// `kreg-agent` next to the running executable, or one level up (for test binaries, which
/// live in `target/debug/deps`).
fn default_agent_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    for _ in 0..2 {
        let candidate = dir.join("kreg-agent");
        if candidate.exists() {
            return candidate;
        }
        if !dir.pop() {
            break;
        }
    }
    PathBuf::from("kreg-agent")
}

/// The password of a `scheme://user:password@host/…` URL, as written.
fn url_password(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    userinfo.split_once(':').map(|(_, pw)| pw).filter(|pw| !pw.is_empty())
}

/// `%XX` escapes decoded (what a client connecting with the URL sends).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%' && i + 2 < b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Config {
    pub fn from_env() -> Config {
        let data_dir = var("KREG_DATA_DIR")
            .map(PathBuf::from)
            .or_else(|| var("XDG_DATA_HOME").map(|d| PathBuf::from(d).join("kreg")))
            .unwrap_or_else(|| home().join(".local/share/kreg"));
        let cache_dir = var("KREG_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("kreg")))
            .unwrap_or_else(|| home().join(".cache/kreg"));
        Config {
            database_url: var("DATABASE_URL").map(|url| {
                if let Some(pw) = url_password(&url) {
                    crate::secrets::remember(pw);
                    crate::secrets::remember(&percent_decoded(pw));
                }
                Secret(url)
            }),
            data_dir,
            cache_dir,
            agent_bin: var("KREG_AGENT_BIN")
                .map(PathBuf::from)
                .unwrap_or_else(default_agent_bin),
            lab_accel: var("KREG_LAB_ACCEL").unwrap_or_else(|| "auto".into()),
            reconnect_wait: std::time::Duration::from_secs(90),
            agent_epoch: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::url_password;

    #[test]
    fn a_database_urls_password_is_found_as_written() {
        assert_eq!(url_password("postgres://kreg:s3cr%40t@db:5432/kreg"), Some("s3cr%40t"));
        assert_eq!(url_password("postgres://kreg@localhost/kreg?host=/tmp/x"), None);
        assert_eq!(url_password("postgres://u:@h/d"), None);
        assert_eq!(url_password("postgres://h/d?password=x"), None);
        assert_eq!(super::percent_decoded("s3cr%40t%2"), "s3cr@t%2");
    }
}
