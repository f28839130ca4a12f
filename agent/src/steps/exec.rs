//! `exec`: run one program from an argv array (never through a shell), under a scheduling
//! policy set between fork and exec, with a timeout. While it runs, the policies of its
//! threads and child processes are observed. Nothing it started outlives the step: when it
//! ends, times out, or the request that started it goes away, its process group is killed
//! and so is every process still carrying the step's mark in its environment (daemons
//! that left the group with `setsid`).

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::wire::{policy_name, ErrorKind, ExecRequest, ExecResult, StepError, EXEC_OUTPUT_CAP};

/// The environment variable that marks every process a step starts, and its descendants.
pub const STEP_MARK: &str = "KREG_AGENT_STEP";

/// The environment variable naming whom a step's processes work for (`ExecRequest::owner`).
pub const OWNER_MARK: &str = "KREG_AGENT_OWNER";

/// The environment variable naming the agent (its id) that started a step's processes:
/// a sweep of other owners' processes takes only this agent's.
pub const AGENT_MARK: &str = "KREG_AGENT_ID";

/// The environment of process `pid` as `NAME=value` entries (empty when it is gone or a
/// kernel thread).
pub(crate) fn environ(pid: i32) -> Vec<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| {
            env.split(|b| *b == 0)
                .filter(|e| !e.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        })
        .unwrap_or_default()
}

/// The value of `name` in an environment read by [`environ`].
pub(crate) fn env_value<'e>(env: &'e [Vec<u8>], name: &str) -> Option<&'e [u8]> {
    env.iter()
        .find_map(|kv| kv.strip_prefix(name.as_bytes()).and_then(|r| r.strip_prefix(b"=")))
}

/// A mark no other step of any agent shares: pid, start time, counter.
pub(crate) fn new_mark() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let start = START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    });
    format!(
        "{}-{start:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pids of the processes (other than the agent) whose environment satisfies `keep`.
pub(crate) fn processes_where(keep: impl Fn(&[Vec<u8>]) -> bool) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me && keep(&environ(*pid)))
        .collect()
}

/// Pids of the processes whose environment holds `STEP_MARK=mark`.
pub fn marked(mark: &str) -> Vec<i32> {
    processes_where(|env| env_value(env, STEP_MARK) == Some(mark.as_bytes()))
}

/// SIGKILLs process group `pgid` and every process carrying `mark`, until none is left
/// (a process may fork while the others die); returns how many were signalled.
pub fn kill_all(pgid: i32, mark: &str) -> usize {
    let mut total = 0;
    if pgid > 0 {
        // SAFETY: signals a process group the agent created for a step.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    for _ in 0..50 {
        let left = marked(mark);
        if left.is_empty() {
            break;
        }
        for pid in &left {
            // SAFETY: no pointers; the pid carried the step's mark a moment ago.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        total += left.len();
        std::thread::sleep(Duration::from_millis(10));
    }
    total
}

/// Kills what a step started when dropped: at its end, at its timeout, and when the
/// request is dropped because its client went away.
pub(crate) struct Reaper {
    pub pgid: i32,
    pub mark: String,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        let n = kill_all(self.pgid, &self.mark);
        if n > 0 {
            tracing::info!(mark = %self.mark, n, "killed processes a step left behind");
        }
    }
}

/// CPUs must exist on this machine: checked before anything forks.
fn check_cpus(cpus: &[u32]) -> Result<(), StepError> {
    if cpus.is_empty() {
        return Err(super::common::err(
            ErrorKind::BadRequest,
            "cpus: an empty list allows no CPU",
        ));
    }
    // SAFETY: sysconf takes no pointers.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u64;
    let limit = configured.min(libc::CPU_SETSIZE as u64);
    match cpus.iter().find(|c| u64::from(**c) >= limit) {
        Some(c) => Err(super::common::err(
            ErrorKind::BadRequest,
            format!(
                "cpus: CPU {c} does not exist here (this machine has CPUs 0-{})",
                limit - 1
            ),
        )),
        None => Ok(()),
    }
}

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

/// The command for a request: argv (no shell), env marked with `mark` (see
/// [`STEP_MARK`]), cwd, its own process group, and the scheduling policy set between fork
/// and exec.
pub(crate) fn command(req: &ExecRequest, mark: &str) -> Result<Command, StepError> {
    let Some((program, args)) = req.argv.split_first() else {
        return Err(super::common::err(ErrorKind::BadRequest, "exec needs a non-empty argv"));
    };
    if req.argv.iter().any(|a| a.contains('\0'))
        || req.env.iter().any(|(k, v)| k.contains(['\0', '=']) || v.contains('\0'))
    {
        return Err(super::common::err(
            ErrorKind::BadRequest,
            "argv and env may not hold NUL bytes (nor `=` in a name)",
        ));
    }
    if let Some(cpus) = &req.cpus {
        check_cpus(cpus)?;
    }
    if let Some(owner) = &req.owner {
        super::common::check_owner(owner)?;
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .env(STEP_MARK, mark)
        .stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(owner) = &req.owner {
        cmd.env(OWNER_MARK, owner);
    }
    cmd.env(AGENT_MARK, super::identity::id());
    if let Some(cwd) = &req.cwd {
        cmd.current_dir(cwd);
    }
    let policy = req.policy.map(|p| p.as_raw());
    let cpus = req.cpus.clone();
    let join = match &req.cgroups {
        Some(leaves) => Some(super::cgroup::placement(leaves)?.0),
        None => None,
    };
    if policy.is_some() || cpus.is_some() || join.is_some() {
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
                if let Some(procs) = &join {
                    super::cgroup::join_self(procs)?;
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

/// One stream's output within [`EXEC_OUTPUT_CAP`]: the first quarter, and the last three
/// quarters as a window that slides over what follows.
#[derive(Default)]
pub(crate) struct Capped {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
}

impl Capped {
    const HEAD: usize = EXEC_OUTPUT_CAP / 4;
    const TAIL: usize = EXEC_OUTPUT_CAP - Self::HEAD;

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < Self::HEAD {
            let n = data.len().min(Self::HEAD - self.head.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        self.tail.extend_from_slice(data);
        // Trim in batches: each byte is moved at most once or twice.
        if self.tail.len() >= 2 * Self::TAIL {
            let cut = self.tail.len() - Self::TAIL;
            self.tail.drain(..cut);
        }
    }

    /// The text kept, with a line saying how much was dropped in the middle; and that count.
    pub(crate) fn finish(mut self) -> (String, u64) {
        if self.tail.len() > Self::TAIL {
            let cut = self.tail.len() - Self::TAIL;
            self.tail.drain(..cut);
        }
        let dropped = self.total - (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[kreg-agent: {dropped} bytes of output dropped here]\n"));
        }
        text.push_str(&String::from_utf8_lossy(&self.tail));
        (text, dropped)
    }
}

async fn read_capped(mut stream: impl tokio::io::AsyncRead + Unpin) -> Capped {
    let mut kept = Capped::default();
    let mut chunk = vec![0u8; 64 << 10];
    while let Ok(n) = stream.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        kept.push(&chunk[..n]);
    }
    kept
}

pub async fn run(mut req: ExecRequest) -> Result<ExecResult, StepError> {
    let program = req.argv.first().cloned().unwrap_or_default();
    let mark = new_mark();
    let mut cmd = command(&req, &mark)?;
    // Listening before the fork: no exit of the workload's is missed.
    let mut listener = match req.task_stats {
        true => Some(super::taskstats::Listener::open_async().await),
        false => None,
    };
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| super::common::err(ErrorKind::Spawn, format!("cannot start {program:?}: {e}")))?;
    let pid = child.id().unwrap_or(0);
    // From here on, whatever happens to this request, nothing the step started survives it.
    let reaper = Reaper { pgid: pid as i32, mark };
    feed_stdin(&mut child, req.stdin.take());
    let mut observed = Vec::new();
    observe(pid, &mut observed);
    let spread = super::cgroup::Spread::for_request(req.cgroups.as_deref(), pid)?.map(|s| s.watch(pid));

    let out_task = tokio::spawn(read_capped(child.stdout.take().expect("piped")));
    let err_task = tokio::spawn(read_capped(child.stderr.take().expect("piped")));

    let deadline = tokio::time::sleep(Duration::from_secs(req.timeout_secs.max(1)));
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut timed_out = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = tick.tick() => {
                observe(pid, &mut observed);
                if let Some(Ok(l)) = listener.as_mut() {
                    l.drain();
                }
            }
            _ = &mut deadline, if !timed_out => {
                timed_out = true;
                kill_all(reaper.pgid, &reaper.mark);
            }
        }
    }
    .map_err(|e| super::common::err(ErrorKind::Io, format!("waiting for {program:?}: {e}")))?;
    // Stray members of the group and daemonised descendants must not outlive the step;
    // their pipes close with them.
    drop(reaper);
    let task_stats = listener
        .take()
        .map(|l| l.and_then(|l| l.finish(pid)).map_err(|e| e.to_string()));
    let (stdout, stdout_dropped) = out_task.await.unwrap_or_default().finish();
    let (stderr, stderr_dropped) = err_task.await.unwrap_or_default().finish();

    use std::os::unix::process::ExitStatusExt;
    Ok(ExecResult {
        pid,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration_ms: started.elapsed().as_millis() as u64,
        stdout,
        stderr,
        stdout_dropped,
        stderr_dropped,
        observed_policies: observed,
        observed_cgroups: match spread {
            Some(w) => w.finish().await,
            None => Default::default(),
        },
        task_stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_its_head_and_tail_within_the_cap() {
        let mut c = Capped::default();
        let line = b"0123456789abcdef";
        let n = EXEC_OUTPUT_CAP * 3 / line.len();
        c.push(b"HEAD\n");
        for _ in 0..n {
            c.push(line);
        }
        c.push(b"\nTAIL");
        let (text, dropped) = c.finish();
        let total = (5 + n * line.len() + 5) as u64;
        assert!(text.starts_with("HEAD\n"));
        assert!(text.ends_with("\nTAIL"));
        assert!(text.contains(&format!("[kreg-agent: {dropped} bytes of output dropped here]")));
        assert_eq!(dropped, total - EXEC_OUTPUT_CAP as u64);
        assert!(text.len() < EXEC_OUTPUT_CAP + 100);
    }

    #[test]
    fn short_output_is_whole() {
        let mut c = Capped::default();
        c.push(b"Time: 1.234\n");
        assert_eq!(c.finish(), ("Time: 1.234\n".to_string(), 0));
    }

    #[test]
    fn cpus_beyond_the_machine_are_refused_before_forking() {
        assert!(check_cpus(&[0]).is_ok());
        for bad in [vec![], vec![1024], vec![0, 4096], vec![u32::MAX]] {
            assert!(check_cpus(&bad).is_err(), "{bad:?}");
        }
    }
}
