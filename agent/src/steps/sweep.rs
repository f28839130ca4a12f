//! `sweep`: ends what an earlier attempt left running for an owner (a controller killed
//! mid-job, a connection that died without the agent noticing). Every process carrying
//! the owner's mark in its environment is killed, servers of spawn steps kept on request.

use std::collections::HashSet;
use std::time::Duration;

use super::common::check_owner;
use super::exec::{env_value, processes_where, AGENT_MARK, OWNER_MARK, STEP_MARK};
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
    let killed = kill_all(|| strays(owner, &keep)).await;
    if !killed.is_empty() {
        tracing::warn!(
            owner,
            n = killed.len(),
            "sweep killed processes left by an earlier attempt"
        );
    }
    Ok(killed)
}

/// Kills what this agent started for any owner but `owner` (a fleet slot taking the
/// machine over from a holder that stalled or died): processes carrying this agent's id
/// and another owner's mark. Another agent's processes on the same host stay.
pub async fn others(owner: &str) -> Result<Vec<SweptProcess>, StepError> {
    check_owner(owner)?;
    let me = super::identity::id().as_bytes().to_vec();
    let killed = kill_all(|| {
        processes_where(|env| {
            !me.is_empty()
                && env_value(env, AGENT_MARK) == Some(me.as_slice())
                && env_value(env, OWNER_MARK).is_some_and(|o| o != owner.as_bytes())
        })
    })
    .await;
    if !killed.is_empty() {
        tracing::warn!(
            owner,
            n = killed.len(),
            "sweep killed processes an earlier holder of the machine left"
        );
    }
    Ok(killed)
}

/// SIGKILLs what `find` names until it names nothing (at most 50 rounds, 10 ms apart).
async fn kill_all(find: impl Fn() -> Vec<i32>) -> Vec<SweptProcess> {
    let mut killed: Vec<SweptProcess> = Vec::new();
    for _ in 0..50 {
        let left = find();
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
    killed
}
