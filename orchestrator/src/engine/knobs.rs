//! The knobs kreg reads and writes through an agent, in one place: a file under /proc/sys
//! or /sys read (absent is `None`, the text untrimmed) and written (read back), the
//! schedstat switch, and a variant's sched features with the settings they are noted as.

use kreg_protocol::client::AgentClient;

use super::error::HostError;
use crate::scenario::Variant;

/// The running kernel's sched features.
pub const FEATURES: &str = "/sys/kernel/debug/sched/features";
const SCHEDSTATS: &str = "/proc/sys/kernel/sched_schedstats";
/// The name the schedstat switch is recorded and reported under.
pub const SCHEDSTATS_SETTING: &str = "kernel.sched_schedstats";

/// A knob's value as the agent read it (untrimmed); `None` when there is no such file.
pub async fn read(client: &AgentClient, path: &str) -> Result<Option<String>, HostError> {
    client
        .read_knob(path)
        .await
        .map_err(HostError::agent(format!("reading {path}")))
}

/// A knob that must exist, its value untrimmed.
pub async fn read_present(client: &AgentClient, path: &str) -> Result<String, HostError> {
    read(client, path)
        .await?
        .ok_or_else(|| HostError::Other(format!("{path} does not exist")))
}

/// Writes a knob; its value read back after (untrimmed).
pub async fn write(client: &AgentClient, path: &str, value: &str) -> Result<String, HostError> {
    Ok(client.write_knob(path, value).await?)
}

/// The schedstat switch's value (the counters stay zero until it is 1).
pub async fn schedstats_value(client: &AgentClient) -> Result<String, HostError> {
    Ok(read_present(client, SCHEDSTATS).await?.trim().to_string())
}

/// Sets the schedstat switch, checked in the read-back.
pub async fn set_schedstats(client: &AgentClient, value: &str) -> Result<(), HostError> {
    let back = write(client, SCHEDSTATS, value).await?;
    if back.trim() == value {
        Ok(())
    } else {
        Err(HostError::Other(format!(
            "wrote {value} to {SCHEDSTATS}, it reads back as {}",
            back.trim()
        )))
    }
}

/// Sets a variant's sched features, checking each one in the read-back.
/// `defaults` is the features file as the kernel booted (empty when unknown).
pub async fn apply_features(client: &AgentClient, variant: &Variant, defaults: &str) -> Result<(), HostError> {
    for f in &variant.features {
        let base = f.strip_prefix("NO_").unwrap_or(f);
        let known = defaults
            .split_whitespace()
            .any(|t| t.strip_prefix("NO_").unwrap_or(t) == base);
        if !defaults.is_empty() && !known {
            return Err(HostError::Other(format!(
                "variant {}: this kernel has no sched feature {base}; it has: {defaults}",
                variant.name
            )));
        }
        let back = write(client, FEATURES, f).await.map_err(|e| match e {
            HostError::Agent { cause, .. } => HostError::Agent {
                what: Some(format!("variant {}", variant.name)),
                cause,
            },
            other => HostError::Other(format!("variant {}: {other}", variant.name)),
        })?;
        if !back.split_whitespace().any(|t| t == f) {
            return Err(HostError::Other(format!(
                "variant {}: wrote {f} to {FEATURES} but it reads back as: {back}",
                variant.name
            )));
        }
    }
    Ok(())
}

/// How a sched feature a variant changes is noted among the host's settings (its value
/// before is the state the kernel booted with): `sched feature TTWU_QUEUE`.
pub const FEATURE_SETTING: &str = "sched feature ";

/// A feature's state as the kernel booted with it: `X` or `NO_X`, for `f` either.
pub fn boot_state(defaults: &str, f: &str) -> String {
    let base = f.strip_prefix("NO_").unwrap_or(f);
    if defaults.split_whitespace().any(|t| t == base) {
        base.to_string()
    } else {
        format!("NO_{base}")
    }
}

/// The settings a variant's features are noted as: (setting, the state the kernel booted
/// with, the variant's).
pub fn feature_settings(variant: &Variant, defaults: &str) -> Vec<(String, String, String)> {
    variant
        .features
        .iter()
        .map(|f| {
            let base = f.strip_prefix("NO_").unwrap_or(f);
            (format!("{FEATURE_SETTING}{base}"), boot_state(defaults, f), f.clone())
        })
        .collect()
}

/// Writes one feature's state (`X` or `NO_X`) back.
pub async fn write_feature(client: &AgentClient, state: &str) -> Result<(), HostError> {
    write(client, FEATURES, state).await.map(|_| ())
}
