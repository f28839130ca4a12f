//! `spawn`, `poll`, `stop` and `threads`: long-running processes (servers such as mariadbd
//! or netserver) that outlive one request. The table lives in memory only: after a reboot
//! it is empty, as is the machine.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::wire::{policy_name, ErrorKind, ExecRequest, ProcessState, StepError, ThreadInfo};

/// Output kept per stream: the last 4 MiB.
const KEEP: usize = 4 << 20;

/// A stream's kept output, and how many bytes were dropped from its front.
#[derive(Default)]
struct Kept {
    data: Vec<u8>,
    dropped: u64,
}

impl Kept {
    /// Absolute offset just past the last byte.
    fn end(&self) -> u64 {
        self.dropped + self.data.len() as u64
    }

    /// The bytes from absolute offset `from` (or everything kept, when `from` is older).
    fn since(&self, from: Option<u64>) -> &[u8] {
        let start = from.map_or(0, |f| {
            f.saturating_sub(self.dropped).min(self.data.len() as u64) as usize
        });
        &self.data[start..]
    }
}

type Buffer = Arc<Mutex<Kept>>;

struct Entry {
    pid: u32,
    /// The environment mark of everything it started (see [`super::exec::STEP_MARK`]).
    mark: String,
    owner: Option<String>,
    child: tokio::process::Child,
    stdout: Buffer,
    stderr: Buffer,
}

#[derive(Default)]
pub struct Table {
    next: AtomicU64,
    procs: tokio::sync::Mutex<HashMap<u64, Entry>>,
}

fn collect(mut stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Buffer {
    let buf: Buffer = Arc::default();
    let out = buf.clone();
    tokio::spawn(async move {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = stream.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            let mut b = out.lock().expect("buffer lock");
            b.data.extend_from_slice(&chunk[..n]);
            if b.data.len() > KEEP {
                let cut = b.data.len() - KEEP;
                b.data.drain(..cut);
                b.dropped += cut as u64;
            }
        }
    });
    buf
}

/// The process's state with its output from the absolute offsets `since` (stdout,
/// stderr), or all output kept when `since` is `None`.
fn state(id: u64, e: &mut Entry, since: Option<[u64; 2]>) -> ProcessState {
    use std::os::unix::process::ExitStatusExt;
    let status = e.child.try_wait().ok().flatten();
    let text = |b: &Buffer, from: Option<u64>| {
        let k = b.lock().expect("buffer lock");
        (String::from_utf8_lossy(k.since(from)).into_owned(), k.end())
    };
    let (stdout, stdout_end) = text(&e.stdout, since.map(|s| s[0]));
    let (stderr, stderr_end) = text(&e.stderr, since.map(|s| s[1]));
    ProcessState {
        id,
        pid: e.pid,
        running: status.is_none(),
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stdout,
        stderr,
        stdout_end,
        stderr_end,
    }
}

fn not_found(id: u64) -> StepError {
    super::err(
        ErrorKind::NotFound,
        format!("no spawned process with id {id} (the agent restarts with none)"),
    )
}

impl Table {
    pub async fn spawn(&self, req: ExecRequest) -> Result<ProcessState, StepError> {
        let program = req.argv.first().cloned().unwrap_or_default();
        let mark = super::exec::new_mark();
        let mut cmd = super::exec::command(&req, &mark)?;
        let mut child = cmd
            .spawn()
            .map_err(|e| super::err(ErrorKind::Spawn, format!("cannot start {program:?}: {e}")))?;
        super::exec::feed_stdin(&mut child, req.stdin.clone());
        let pid = child.id().unwrap_or(0);
        let stdout = collect(child.stdout.take().expect("piped"));
        let stderr = collect(child.stderr.take().expect("piped"));
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut entry = Entry {
            pid,
            mark,
            owner: req.owner.clone(),
            child,
            stdout,
            stderr,
        };
        let st = state(id, &mut entry, None);
        self.procs.lock().await.insert(id, entry);
        Ok(st)
    }

    /// The step marks of the servers still in the table for `owner`.
    pub async fn marks_of(&self, owner: &str) -> std::collections::HashSet<String> {
        self.procs
            .lock()
            .await
            .values()
            .filter(|e| e.owner.as_deref() == Some(owner))
            .map(|e| e.mark.clone())
            .collect()
    }

    /// Forgets the servers of `owner` (their processes are killed by the caller).
    pub async fn forget_owner(&self, owner: &str) {
        self.procs.lock().await.retain(|_, e| e.owner.as_deref() != Some(owner));
    }

    pub async fn poll(&self, id: u64, since: Option<[u64; 2]>) -> Result<ProcessState, StepError> {
        let mut procs = self.procs.lock().await;
        let e = procs.get_mut(&id).ok_or_else(|| not_found(id))?;
        Ok(state(id, e, since))
    }

    pub async fn stop(&self, id: u64, grace_secs: u64, interrupt: bool) -> Result<ProcessState, StepError> {
        let mut e = self.procs.lock().await.remove(&id).ok_or_else(|| not_found(id))?;
        let pgid = e.pid as i32;
        if e.child.try_wait().ok().flatten().is_none() {
            let signal = if interrupt { libc::SIGINT } else { libc::SIGTERM };
            // SAFETY: signals the process group created for this child.
            unsafe { libc::kill(-pgid, signal) };
            if tokio::time::timeout(Duration::from_secs(grace_secs), e.child.wait())
                .await
                .is_err()
            {
                // SAFETY: as above.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                let _ = e.child.wait().await;
            }
        }
        // Stray members of the group go too, and daemons it started.
        super::exec::kill_all(pgid, &e.mark);
        // Let the readers drain what is left in the pipes.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(state(id, &mut e, None))
    }
}

/// Every thread of `pid`, with its name and scheduling policy.
pub fn threads(pid: u32) -> Result<Vec<ThreadInfo>, StepError> {
    let dir = format!("/proc/{pid}/task");
    let entries =
        std::fs::read_dir(&dir).map_err(|e| super::err(ErrorKind::NotFound, format!("process {pid}: {e}")))?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
        if let Some(p) = super::exec::policy_of(tid as i32) {
            out.push(ThreadInfo {
                tid,
                comm,
                policy: policy_name(p),
                cgroup: super::cgroup::cgroup_of_task(pid, tid),
            });
        }
    }
    out.sort_by_key(|t| t.tid);
    Ok(out)
}
