//! `identity`: who and what this machine is right now (kernel, boot id, CPUs).

use crate::wire::{ErrorKind, Identity, StepError};

async fn read_trim(path: &str) -> Result<String, StepError> {
    tokio::fs::read_to_string(path)
        .await
        .map(|s| s.trim().to_string())
        .map_err(|e| super::common::err(ErrorKind::Io, format!("reading {path}: {e}")))
}

pub async fn run() -> Result<Identity, StepError> {
    let schedstat = tokio::fs::read_to_string("/proc/schedstat").await.ok();
    let schedstat_version = schedstat
        .as_deref()
        .and_then(|s| s.lines().next()?.strip_prefix("version ")?.trim().parse().ok());
    let nr_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    Ok(Identity {
        hostname: read_trim("/proc/sys/kernel/hostname").await?,
        kernel_release: read_trim("/proc/sys/kernel/osrelease").await?,
        proc_version: read_trim("/proc/version").await?,
        boot_id: read_trim("/proc/sys/kernel/random/boot_id").await?,
        nr_cpus,
        schedstat_version,
        sched_features: read_trim("/sys/kernel/debug/sched/features").await.ok(),
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
        cpu_model: tokio::fs::read_to_string("/proc/cpuinfo")
            .await
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("model name")
                        .and_then(|r| r.split_once(':'))
                        .map(|(_, v)| v.trim().to_string())
                })
            })
            .unwrap_or_default(),
        cmdline: read_trim("/proc/cmdline").await.unwrap_or_default(),
        uptime_secs: read_trim("/proc/uptime")
            .await
            .ok()
            .and_then(|u| u.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0),
        agent_uptime_secs: started().elapsed().as_secs_f64(),
        agent_id: ID.get().cloned().unwrap_or_default(),
    })
}

/// When the agent started (the first call, made at start by [`started`]'s caller in main).
pub fn started() -> std::time::Instant {
    static AT: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *AT.get_or_init(std::time::Instant::now)
}

/// This agent's id, once [`keep_id`] read or made it.
static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// This agent's id ("" before [`keep_id`]).
pub fn id() -> &'static str {
    ID.get().map(String::as_str).unwrap_or("")
}

/// Reads the agent's id from `DATA_DIR/agent-id`, or makes one (128 random bits in hex)
/// and keeps it there: the controller tells one agent listed under two addresses from two
/// agents by it. A data folder wiped makes a new agent.
pub fn keep_id(data_dir: &std::path::Path) -> Result<String, crate::Error> {
    let path = data_dir.join("agent-id");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()) {
            let _ = ID.set(id.to_string());
            return Ok(id.to_string());
        }
    }
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom")
            .map_err(|e| crate::Error::Own(format!("cannot open /dev/urandom: {e}")))?,
        &mut bytes,
    )
    .map_err(|e| crate::Error::Own(format!("cannot read /dev/urandom: {e}")))?;
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(data_dir)
        .map_err(|e| crate::Error::Own(format!("cannot make {}: {e}", data_dir.display())))?;
    let tmp = data_dir.join("agent-id.tmp");
    std::fs::write(&tmp, format!("{id}\n"))
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| crate::Error::Own(format!("cannot write {}: {e}", path.display())))?;
    let _ = ID.set(id.clone());
    Ok(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_id_is_made_once_and_kept_and_a_damaged_one_is_made_again() {
        let dir = std::env::temp_dir().join(format!("kreg-agent-id-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = super::keep_id(&dir).unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(super::keep_id(&dir).unwrap(), first);
        std::fs::write(dir.join("agent-id"), "not an id\n").unwrap();
        let again = super::keep_id(&dir).unwrap();
        assert_ne!(again, first);
        assert_eq!(std::fs::read_to_string(dir.join("agent-id")).unwrap().trim(), again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
