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
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn home() -> PathBuf {
    var("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"))
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
            database_url: var("DATABASE_URL").map(Secret),
            data_dir,
            cache_dir,
            agent_bin: var("KREG_AGENT_BIN")
                .map(PathBuf::from)
                .unwrap_or_else(default_agent_bin),
            lab_accel: var("KREG_LAB_ACCEL").unwrap_or_else(|| "auto".into()),
        }
    }
}
