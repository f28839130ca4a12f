//! One job on a booted kernel: schedstat snapshots around the workload, the workload under
//! the variant's policy, parsing, and storing metrics, raw outputs and the observed policy.

use std::time::Duration;

use kreg_agent::client::AgentClient;
use kreg_agent::wire::{ExecRequest, Identity, Step, StepOutput};

use crate::parse;
use crate::scenario::{Variant, Workload, WorkloadKind};
use crate::store::JobOutcome;

const FEATURES: &str = "/sys/kernel/debug/sched/features";
const SCHEDSTATS: &str = "/proc/sys/kernel/sched_schedstats";

/// A job's failure, with the raw outputs gathered before it failed.
#[derive(Debug)]
pub struct JobFailure {
    pub reason: String,
    pub raw: Vec<(String, String)>,
}

fn fail(reason: impl Into<String>, raw: Vec<(String, String)>) -> JobFailure {
    JobFailure {
        reason: reason.into(),
        raw,
    }
}

async fn write_knob(client: &AgentClient, path: &str, value: &str) -> Result<String, String> {
    let step = Step::WriteKnob {
        path: path.into(),
        value: value.into(),
    };
    match client
        .step(step, Duration::from_secs(30))
        .await
        .map_err(|e| e.to_string())?
    {
        StepOutput::Knob(k) => Ok(k.value),
        other => Err(format!("unexpected answer to write_knob: {other:?}")),
    }
}

/// Sets a variant's sched features, checking each one in the read-back.
/// `defaults` is the features file as the kernel booted (empty when unknown).
pub async fn apply_features(client: &AgentClient, variant: &Variant, defaults: &str) -> Result<(), String> {
    for f in &variant.features {
        let base = f.strip_prefix("NO_").unwrap_or(f);
        let known = defaults
            .split_whitespace()
            .any(|t| t.strip_prefix("NO_").unwrap_or(t) == base);
        if !defaults.is_empty() && !known {
            return Err(format!(
                "variant {}: this kernel has no sched feature {base}; it has: {defaults}",
                variant.name
            ));
        }
        let back = write_knob(client, FEATURES, f)
            .await
            .map_err(|e| format!("variant {}: {e}", variant.name))?;
        if !back.split_whitespace().any(|t| t == f) {
            return Err(format!(
                "variant {}: wrote {f} to {FEATURES} but it reads back as: {back}",
                variant.name
            ));
        }
    }
    Ok(())
}

/// Puts each feature a variant touched back to the state the kernel booted with.
pub async fn restore_features(client: &AgentClient, variant: &Variant, defaults: &str) -> Result<(), String> {
    for f in &variant.features {
        let base = f.strip_prefix("NO_").unwrap_or(f);
        let value = if defaults.split_whitespace().any(|t| t == base) {
            base.to_string()
        } else {
            format!("NO_{base}")
        };
        write_knob(client, FEATURES, &value).await?;
    }
    Ok(())
}

async fn schedstat(client: &AgentClient) -> Option<String> {
    match client.step(Step::Schedstat, Duration::from_secs(30)).await {
        Ok(StepOutput::Schedstat(s)) => Some(s.raw),
        _ => None,
    }
}

/// Runs one job and returns what to store.
pub async fn run(
    client: &AgentClient,
    sut: &Identity,
    variant: &Variant,
    workload: &Workload,
) -> Result<JobOutcome, JobFailure> {
    // Counters stay zero until this is on; a kernel without SCHEDSTATS has no such file.
    let _ = write_knob(client, SCHEDSTATS, "1").await;
    let mut raw = Vec::new();
    // Provenance: the sched features in effect for this job.
    if let Ok(StepOutput::Knob(k)) = client
        .step(Step::ReadKnob { path: FEATURES.into() }, Duration::from_secs(30))
        .await
    {
        raw.push(("sched_features".to_string(), k.value));
    }
    if let Some(s) = schedstat(client).await {
        raw.push(("schedstat_before".to_string(), s));
    }
    let argv = match &workload.kind {
        WorkloadKind::Hackbench(h) => h.argv(),
        WorkloadKind::Command(c) => c.argv.clone(),
    };
    let req = ExecRequest {
        argv,
        env: vec![],
        cwd: None,
        timeout_secs: workload.timeout_secs,
        policy: Some(variant.policy),
    };
    let res = client.exec(req).await.map_err(|e| fail(e.to_string(), raw.clone()))?;
    if let Some(s) = schedstat(client).await {
        raw.push(("schedstat_after".to_string(), s));
    }
    raw.push(("stdout".into(), res.stdout.clone()));
    raw.push(("stderr".into(), res.stderr.clone()));
    if !res.success() {
        let how = if res.timed_out {
            format!("timed out after {}s", workload.timeout_secs)
        } else if let Some(sig) = res.signal {
            format!("killed by signal {sig}")
        } else {
            format!("exited with status {}", res.exit_code.unwrap_or(-1))
        };
        let tail: Vec<&str> = res.stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(fail(
            format!("workload {} {how}: {}", workload.name, tail.join(" | ")),
            raw,
        ));
    }
    let metrics = match &workload.kind {
        WorkloadKind::Hackbench(_) => parse::hackbench(&res.stdout),
        WorkloadKind::Command(c) => parse::command(&c.metrics, &res.stdout, &res.stderr),
    }
    .map_err(|e| fail(e.to_string(), raw.clone()))?;
    let want = variant.policy.name();
    if res.observed_policies.iter().any(|p| p != want) {
        return Err(fail(
            format!(
                "variant {} asked for policy {want}, but the workload's threads ran under {}",
                variant.name,
                res.observed_policies.join(", ")
            ),
            raw,
        ));
    }
    let observed_policy = if res.observed_policies.is_empty() {
        "unobserved".to_string()
    } else {
        res.observed_policies.join(",")
    };
    Ok(JobOutcome {
        kernel_release: sut.kernel_release.clone(),
        boot_id: sut.boot_id.clone(),
        observed_policy,
        metrics,
        raw,
    })
}
