//! `identity`: who and what this machine is right now (kernel, boot id, CPUs).

use crate::wire::{ErrorKind, Identity, StepError};

async fn read_trim(path: &str) -> Result<String, StepError> {
    tokio::fs::read_to_string(path)
        .await
        .map(|s| s.trim().to_string())
        .map_err(|e| super::err(ErrorKind::Io, format!("reading {path}: {e}")))
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
    })
}

/// When the agent started (the first call, made at start by [`started`]'s caller in main).
pub fn started() -> std::time::Instant {
    static AT: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *AT.get_or_init(std::time::Instant::now)
}
