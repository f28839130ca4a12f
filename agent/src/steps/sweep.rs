//! `sweep`: ends what an earlier attempt left running for an owner (a controller killed
//! mid-job, a connection that died without the agent noticing). Every process carrying
//! the owner's mark in its environment is killed, servers of spawn steps kept on request.

use std::collections::HashSet;
use std::time::Duration;

use super::common::check_owner;
use super::exec::{env_value, processes_where, OWNER_MARK, STEP_MARK};
use super::process::Table;
use crate::wire::{StepError, SweptProcess};

/// Processes working for `owner` whose step mark is not in `keep`.
fn strays(owner: &str, keep: &HashSet<String>) -> Vec<i32> {
    processes_where(|env| {
        env_value(env, OWNER_MARK) == Some(owner.as_bytes())
            && !env_value(env, STEP_MARK)
                .map(|m| keep.contains(String::from_utf8_lossy(m).as_ref()))
                .unwrap_or(false)
    })
}

pub async fn run(owner: &str, keep_spawned: bool, procs: &Table) -> Result<Vec<SweptProcess>, StepError> {
    check_owner(owner)?;
    let keep = if keep_spawned {
        procs.marks_of(owner).await
    } else {
        procs.forget_owner(owner).await;
        HashSet::new()
    };
    let mut killed: Vec<SweptProcess> = Vec::new();
    for _ in 0..50 {
        let left = strays(owner, &keep);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .unwrap_or_default()
                .trim()
                .to_string();
            // SAFETY: no pointers; the pid carried the owner's mark a moment ago.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            if !killed.iter().any(|k| k.pid == pid as u32) {
                killed.push(SweptProcess { pid: pid as u32, comm });
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if !killed.is_empty() {
        tracing::warn!(
            owner,
            n = killed.len(),
            "sweep killed processes left by an earlier attempt"
        );
    }
    Ok(killed)
}
