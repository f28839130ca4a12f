//! `exec`: run one program from an argv array (never through a shell), under a scheduling
//! policy set between fork and exec, with a timeout that kills its whole process group.
//! While it runs, the policies of its threads and child processes are observed.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::wire::{policy_name, ErrorKind, ExecRequest, ExecResult, StepError};

const SCHED_RESET_ON_FORK: i32 = 0x4000_0000;

pub(crate) fn policy_of(tid: i32) -> Option<i32> {
    // SAFETY: no pointers; returns -1 when the task is gone.
    let p = unsafe { libc::sched_getscheduler(tid) };
    (p >= 0).then_some(p & !SCHED_RESET_ON_FORK)
}

/// Threads of `pid` and of its direct children.
fn tasks_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut pids = vec![pid as i32];
    if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for e in entries.flatten() {
            if let Ok(children) = std::fs::read_to_string(e.path().join("children")) {
                pids.extend(children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()));
            }
        }
    }
    for p in pids {
        match std::fs::read_dir(format!("/proc/{p}/task")) {
            Ok(entries) => out.extend(
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()),
            ),
            Err(_) => out.push(p),
        }
    }
    out
}

fn observe(pid: u32, seen: &mut Vec<String>) {
    for tid in tasks_of(pid) {
        if let Some(p) = policy_of(tid) {
            let name = policy_name(p);
            if !seen.contains(&name) {
                seen.push(name);
            }
        }
    }
}

/// The command for a request: argv (no shell), env, cwd, its own process group, and the
/// scheduling policy set between fork and exec.
pub(crate) fn command(req: &ExecRequest) -> Result<Command, StepError> {
    let Some((program, args)) = req.argv.split_first() else {
        return Err(super::err(ErrorKind::BadRequest, "exec needs a non-empty argv"));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &req.cwd {
        cmd.current_dir(cwd);
    }
    let policy = req.policy.map(|p| p.as_raw());
    let cpus = req.cpus.clone();
    if policy.is_some() || cpus.is_some() {
        // SAFETY: only async-signal-safe calls between fork and exec; the CPU set is built
        // on the stack from a vector allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(cpus) = &cpus {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    for &c in cpus {
                        libc::CPU_SET(c as usize, &mut set);
                    }
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(raw) = policy {
                    let param = libc::sched_param { sched_priority: 0 };
                    if libc::sched_setscheduler(0, raw, &param) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    Ok(cmd)
}

/// Writes `input` to the child's stdin and closes it, without blocking the caller.
pub(crate) fn feed_stdin(child: &mut tokio::process::Child, input: Option<String>) {
    if let (Some(mut stdin), Some(text)) = (child.stdin.take(), input) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = stdin.write_all(text.as_bytes()).await;
        });
    }
}

pub async fn run(req: ExecRequest) -> Result<ExecResult, StepError> {
    let program = req.argv.first().cloned().unwrap_or_default();
    let mut cmd = command(&req)?;
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| super::err(ErrorKind::Spawn, format!("cannot start {program:?}: {e}")))?;
    let pid = child.id().unwrap_or(0);
    feed_stdin(&mut child, req.stdin.clone());
    let mut observed = Vec::new();
    observe(pid, &mut observed);

    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf).await;
        buf
    });
    let err_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf).await;
        buf
    });

    let deadline = tokio::time::sleep(Duration::from_secs(req.timeout_secs.max(1)));
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut timed_out = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = tick.tick() => observe(pid, &mut observed),
            _ = &mut deadline, if !timed_out => {
                timed_out = true;
                // SAFETY: signals the process group we created for the child.
                unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
            }
        }
    }
    .map_err(|e| super::err(ErrorKind::Io, format!("waiting for {program:?}: {e}")))?;
    // Stray members of the group (daemonised helpers) must not outlive the step.
    // SAFETY: as above.
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    let stdout = out_task.await.unwrap_or_default();
    let stderr = err_task.await.unwrap_or_default();

    use std::os::unix::process::ExitStatusExt;
    Ok(ExecResult {
        pid,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration_ms: started.elapsed().as_millis() as u64,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        observed_policies: observed,
    })
}
