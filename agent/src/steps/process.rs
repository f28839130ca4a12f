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
    super::common::err(
        ErrorKind::NotFound,
        format!("no spawned process with id {id} (the agent restarts with none)"),
    )
}

impl Table {
    pub async fn spawn(&self, mut req: ExecRequest) -> Result<ProcessState, StepError> {
        let program = req.argv.first().cloned().unwrap_or_default();
        let mark = super::exec::new_mark();
        let mut cmd = super::exec::command(&req, &mark)?;
        let mut child = cmd
            .spawn()
            .map_err(|e| super::common::err(ErrorKind::Spawn, format!("cannot start {program:?}: {e}")))?;
        super::exec::feed_stdin(&mut child, req.stdin.take());
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
        std::fs::read_dir(&dir).map_err(|e| super::common::err(ErrorKind::NotFound, format!("process {pid}: {e}")))?;
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

/// The TCP sockets in LISTEN state on `port` (/proc/net/tcp and tcp6 of the agent's
/// network namespace) and the processes holding each.
pub fn listeners(port: u16) -> Result<Vec<crate::wire::Listener>, StepError> {
    let mut found: Vec<(u64, String)> = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(super::common::err(ErrorKind::Io, format!("reading {file}: {e}"))),
        };
        found.extend(listening(&text, v6, port));
    }
    let mut out: Vec<crate::wire::Listener> = found
        .iter()
        .map(|(_, address)| crate::wire::Listener {
            address: address.clone(),
            port,
            holders: Vec::new(),
        })
        .collect();
    if found.is_empty() {
        return Ok(out);
    }
    let procs =
        std::fs::read_dir("/proc").map_err(|e| super::common::err(ErrorKind::Io, format!("reading /proc: {e}")))?;
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // A process may end while it is read: what cannot be read is not held.
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let inodes: Vec<u64> = fds
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter_map(|l| socket_inode(&l.to_string_lossy()))
            .collect();
        for (i, (inode, _)) in found.iter().enumerate() {
            if inodes.contains(inode) {
                let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
                let (comm, ppid) = comm_and_ppid(&stat);
                out[i].holders.push(crate::wire::Holder { pid, ppid, comm });
            }
        }
    }
    Ok(out)
}

fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// `comm` and the parent's pid from /proc/PID/stat (`PID (COMM) STATE PPID …`; the name
/// may hold spaces and parentheses).
fn comm_and_ppid(stat: &str) -> (String, u32) {
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return (String::new(), 0);
    };
    let ppid = stat[close + 1..]
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (stat[open + 1..close].to_string(), ppid)
}

/// The inode and local address of each LISTEN (state 0A) socket on `port` in a
/// /proc/net/tcp(6) table.
fn listening(table: &str, v6: bool, port: u16) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || f[3] != "0A" {
            continue;
        }
        let Some((addr, p)) = f[1].split_once(':') else {
            continue;
        };
        if u16::from_str_radix(p, 16).ok() != Some(port) {
            continue;
        }
        let (Some(address), Ok(inode)) = (proc_address(addr, v6), f[9].parse::<u64>()) else {
            continue;
        };
        out.push((inode, address));
    }
    out
}

/// An address as /proc/net/tcp prints it: each 32-bit word of the address (network byte
/// order in memory) printed in hex as a native integer.
fn proc_address(hex: &str, v6: bool) -> Option<String> {
    if hex.len() != if v6 { 32 } else { 8 } {
        return None;
    }
    let mut bytes = Vec::with_capacity(16);
    for i in 0..hex.len() / 8 {
        let w = u32::from_str_radix(&hex[i * 8..i * 8 + 8], 16).ok()?;
        bytes.extend_from_slice(&w.to_ne_bytes());
    }
    if v6 {
        let b: [u8; 16] = bytes.try_into().ok()?;
        Some(std::net::Ipv6Addr::from(b).to_string())
    } else {
        Some(std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string())
    }
}

#[cfg(test)]
mod listener_tests {
    use super::*;

    #[test]
    fn the_listening_sockets_of_a_port() {
        // Lines as this machine's kernel wrote them (netserver -p 12999 on 127.0.0.1 and on
        // every address; an established connection; another port).
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:32C7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:32C7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 100 0 0 10 0
   2: 0100007F:32C7 0100007F:D3A2 01 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4545 1 0000000000000000 100 0 0 10 0
";
        assert_eq!(
            listening(tcp, false, 12999),
            vec![(4242, "127.0.0.1".to_string()), (4343, "0.0.0.0".to_string())]
        );
        let tcp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:32C7 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:32C7 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5252 1 0000000000000000 100 0 0 10 0
";
        assert_eq!(
            listening(tcp6, true, 12999),
            vec![(5151, "::".to_string()), (5252, "::ffff:127.0.0.1".to_string())]
        );
        assert_eq!(
            comm_and_ppid("77 (net server) S 12 77 1 0"),
            ("net server".to_string(), 12)
        );
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
    }

    #[test]
    fn which_listeners_a_connection_reaches() {
        let l = |a: &str| crate::wire::Listener {
            address: a.into(),
            port: 12865,
            holders: vec![],
        };
        for (bound, to, reaches) in [
            ("0.0.0.0", "10.0.0.1", true),
            ("::", "10.0.0.1", true),
            ("10.0.0.1", "10.0.0.1", true),
            ("::ffff:10.0.0.1", "10.0.0.1", true),
            ("10.0.0.2", "10.0.0.1", false),
            ("127.0.0.1", "10.0.0.1", false),
            ("fe80::1", "10.0.0.1", false),
        ] {
            assert_eq!(l(bound).receives(to), reaches, "{bound} for {to}");
        }
    }

    #[test]
    fn a_listener_of_this_process_is_found_with_its_holder() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let found = listeners(port).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].address, "127.0.0.1");
        assert!(
            found[0].holders.iter().any(|h| h.pid == std::process::id()),
            "{found:?}"
        );
        drop(l);
        assert_eq!(listeners(port).unwrap(), vec![]);
    }
}
