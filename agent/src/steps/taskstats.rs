//! Per-task scheduler statistics of a workload, exact at each task's exit: a taskstats
//! listener (generic netlink, registered for every possible CPU) receives the counters of
//! every task that exits on the machine while the workload runs; those of the workload's
//! processes and threads are kept. Each exit carries what `/proc/PID/schedstat` shows:
//! time on the CPU (`sum_exec_runtime`), time waiting on a run queue (`run_delay`, counted
//! while schedstats or delay accounting are on) and the number of timeslices (`pcount`).
//! The kernel serves taskstats in the initial network namespace only.

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::wire::TaskStat;

const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_NEW: u8 = 2;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK: u16 = 4;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLMSG_ERROR: u16 = 2;
const NLA_F_MASK: u16 = 0x3fff;

/// Offsets in `struct taskstats` (include/uapi/linux/taskstats.h); `ac_tgid` came with
/// version 12.
const OFF_VERSION: usize = 0;
const OFF_CPU_COUNT: usize = 16;
const OFF_CPU_RUN_VIRTUAL: usize = 72;
const OFF_CPU_DELAY: usize = 24;
const OFF_COMM: usize = 80;
const OFF_PID: usize = 128;
const OFF_PPID: usize = 132;
const OFF_TGID: usize = 368;
const MIN_VERSION: u16 = 12;

fn nla(out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(payload);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// A request; every one asks for an acknowledgement, so that an answer always comes.
fn message(kind: u16, cmd: u8, version: u8, attrs: &[u8]) -> Vec<u8> {
    let len = 16 + 4 + attrs.len();
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&[cmd, version, 0, 0]);
    m.extend_from_slice(attrs);
    m
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The attributes in `b`: (type, payload).
fn attrs(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while let (Some(len), Some(kind)) = (u16_at(b, at), u16_at(b, at + 2)) {
        let len = len as usize;
        if len < 4 || at + len > b.len() {
            break;
        }
        out.push((kind & NLA_F_MASK, &b[at + 4..at + len]));
        at += len.next_multiple_of(4);
    }
    out
}

/// The netlink messages in one datagram: (type, body after the netlink header).
fn messages(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while let (Some(len), Some(kind)) = (u32_at(b, at), u16_at(b, at + 4)) {
        let len = len as usize;
        if len < 16 || at + len > b.len() {
            break;
        }
        out.push((kind, &b[at + 16..at + len]));
        at += len.next_multiple_of(4);
    }
    out
}

/// One exit: the task's counters, or `None` when the message is not one.
pub fn parse_exit(body: &[u8]) -> Option<Exit> {
    if body.first() != Some(&TASKSTATS_CMD_NEW) {
        return None;
    }
    let aggr = attrs(body.get(4..)?)
        .into_iter()
        .find(|(k, _)| *k == TASKSTATS_TYPE_AGGR_PID)?
        .1;
    let stats = attrs(aggr).into_iter().find(|(k, _)| *k == TASKSTATS_TYPE_STATS)?.1;
    if u16_at(stats, OFF_VERSION)? < MIN_VERSION {
        return None;
    }
    let comm = stats.get(OFF_COMM..OFF_COMM + 32)?;
    let comm = String::from_utf8_lossy(&comm[..comm.iter().position(|c| *c == 0).unwrap_or(32)]).into_owned();
    Some(Exit {
        stat: TaskStat {
            tid: u32_at(stats, OFF_PID)?,
            tgid: u32_at(stats, OFF_TGID)?,
            comm,
            run_ns: u64_at(stats, OFF_CPU_RUN_VIRTUAL)?,
            delay_ns: u64_at(stats, OFF_CPU_DELAY)?,
            slices: u64_at(stats, OFF_CPU_COUNT)?,
        },
        ppid: u32_at(stats, OFF_PPID)?,
    })
}

/// A task's exit as taskstats reports it; `ppid` is its parent process.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    pub stat: TaskStat,
    pub ppid: u32,
}

/// The exits of `root`'s processes and threads and their descendants', wherever they
/// come in the list (a child may exit before its parent, or after).
pub fn of_tree(root: u32, exits: &[Exit]) -> Vec<TaskStat> {
    let mut ours: HashSet<u32> = HashSet::from([root]);
    loop {
        let before = ours.len();
        for e in exits {
            if ours.contains(&e.ppid) && e.stat.tid == e.stat.tgid {
                ours.insert(e.stat.tgid);
            }
        }
        if ours.len() == before {
            break;
        }
    }
    exits
        .iter()
        .filter(|e| ours.contains(&e.stat.tgid))
        .map(|e| e.stat.clone())
        .collect()
}

/// A registered listener; deregistered when dropped.
pub struct Listener {
    fd: OwnedFd,
    family: u16,
    cpus: String,
    /// Exits received so far (every task of the machine).
    pub exits: Vec<Exit>,
    /// Datagrams the socket dropped (its buffer was full).
    pub lost: bool,
}

fn sys(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

impl Listener {
    /// [`open`](Self::open) off the runtime's thread; the error as text.
    pub async fn open_async() -> Result<Listener, crate::Error> {
        tokio::task::spawn_blocking(Listener::open)
            .await
            .map_err(|e| crate::Error::Kernel(format!("taskstats: {e}")))?
            .map_err(|e| crate::Error::Kernel(format!("taskstats: {e}")))
    }

    /// The exits of `root`'s tree once it has ended; deregisters (off the runtime's
    /// thread: it waits for the kernel's answer).
    pub fn finish(mut self, root: u32) -> Result<Vec<TaskStat>, crate::Error> {
        self.drain();
        let tasks = if self.lost {
            Err(crate::Error::Kernel(
                "taskstats: the socket dropped exits (its buffer was full)".to_string(),
            ))
        } else {
            Ok(of_tree(root, &self.exits))
        };
        tokio::task::spawn_blocking(move || drop(self));
        tasks
    }

    /// Opens the socket, finds the TASKSTATS family, registers for every possible CPU.
    pub fn open() -> io::Result<Listener> {
        // SAFETY: plain syscalls on a descriptor this function owns.
        let fd = unsafe {
            let fd = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            OwnedFd::from_raw_fd(fd)
        };
        let size: libc::c_int = 8 << 20;
        // An answer that never comes is an error after 2 s, not a hang.
        let wait = libc::timeval { tv_sec: 2, tv_usec: 0 };
        // SAFETY: options of the right sizes; a smaller buffer is only a risk of loss.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            );
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&wait as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            );
        }
        let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible")?
            .trim()
            .to_string();
        let mut l = Listener {
            fd,
            family: 0,
            cpus,
            exits: Vec::new(),
            lost: false,
        };
        l.family = l.family_id()?;
        l.cpumask(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK)?;
        // SAFETY: as above; from here on, reads never block.
        unsafe {
            let flags = libc::fcntl(l.fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(l.fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Ok(l)
    }

    /// The TASKSTATS family's id: its description, then the acknowledgement (or only an
    /// error).
    fn family_id(&mut self) -> io::Result<u16> {
        let mut name = Vec::new();
        nla(&mut name, CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0");
        self.send(&message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, &name))?;
        // The family's description, then the acknowledgement (or only an error).
        let mut family = None;
        let mut acked = false;
        for _ in 0..4 {
            let reply = self.recv_blocking()?;
            for (kind, body) in messages(&reply) {
                if kind == NLMSG_ERROR {
                    let code = u32_at(body, 0).map(|c| c as i32).unwrap_or(0);
                    if code != 0 {
                        return Err(io::Error::other(format!(
                            "the kernel has no TASKSTATS netlink family here ({}; CONFIG_TASKSTATS off, or not the initial network namespace)",
                            io::Error::from_raw_os_error(-code)
                        )));
                    }
                    acked = true;
                } else if let Some(id) = attrs(body.get(4..).unwrap_or_default())
                    .into_iter()
                    .find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID)
                    .and_then(|(_, v)| u16_at(v, 0))
                {
                    family = Some(id);
                }
            }
            if acked {
                break;
            }
        }
        family.ok_or_else(|| io::Error::other("taskstats: no family id in the kernel's answer"))
    }

    fn cpumask(&mut self, which: u16) -> io::Result<()> {
        let mut mask = self.cpus.clone().into_bytes();
        mask.push(0);
        let mut a = Vec::new();
        nla(&mut a, which, &mask);
        self.send(&message(self.family, TASKSTATS_CMD_GET, 1, &a))?;
        self.recv_ack()
    }

    /// Waits for an acknowledgement: the error it carries, if any.
    fn recv_ack(&mut self) -> io::Result<()> {
        for _ in 0..4 {
            let reply = self.recv_blocking()?;
            for (kind, body) in messages(&reply) {
                if kind == NLMSG_ERROR {
                    let code = u32_at(body, 0).map(|c| c as i32).unwrap_or(0);
                    return if code == 0 {
                        Ok(())
                    } else {
                        Err(io::Error::from_raw_os_error(-code))
                    };
                }
            }
        }
        Err(io::Error::other("taskstats did not acknowledge"))
    }

    fn send(&self, m: &[u8]) -> io::Result<()> {
        // SAFETY: a zeroed sockaddr_nl is the kernel's address.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: the buffer and address live across the call.
        sys(unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                m.as_ptr().cast(),
                m.len(),
                0,
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        })
        .map(|_| ())
    }

    /// The answer to a request (exits that come first are kept).
    fn recv_blocking(&mut self) -> io::Result<Vec<u8>> {
        for _ in 0..1000 {
            let mut buf = vec![0u8; 64 << 10];
            // SAFETY: the buffer outlives the call.
            let n = sys(unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) })?;
            buf.truncate(n);
            let exits: Vec<Exit> = messages(&buf).into_iter().filter_map(|(_, b)| parse_exit(b)).collect();
            if exits.is_empty() {
                return Ok(buf);
            }
            self.exits.extend(exits);
        }
        Err(io::Error::other("no answer from taskstats"))
    }

    /// Takes every exit waiting on the socket.
    pub fn drain(&mut self) {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            // SAFETY: the buffer outlives the call.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::ENOBUFS) {
                    self.lost = true;
                    continue;
                }
                return;
            }
            let exits: Vec<Exit> = messages(&buf[..n as usize])
                .into_iter()
                .filter_map(|(_, b)| parse_exit(b))
                .collect();
            self.exits.extend(exits);
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: back to blocking for the deregistration's answer.
        unsafe {
            let flags = libc::fcntl(self.fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
        let _ = self.cpumask(TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TASKSTATS_CMD_NEW message as the kernel sends it at a task's exit.
    fn exit_message(tid: u32, tgid: u32, ppid: u32, comm: &str, run: u64, delay: u64, slices: u64) -> Vec<u8> {
        let mut stats = vec![0u8; 400];
        stats[0..2].copy_from_slice(&14u16.to_ne_bytes());
        stats[OFF_CPU_COUNT..OFF_CPU_COUNT + 8].copy_from_slice(&slices.to_ne_bytes());
        stats[OFF_CPU_DELAY..OFF_CPU_DELAY + 8].copy_from_slice(&delay.to_ne_bytes());
        stats[OFF_CPU_RUN_VIRTUAL..OFF_CPU_RUN_VIRTUAL + 8].copy_from_slice(&run.to_ne_bytes());
        stats[OFF_COMM..OFF_COMM + comm.len()].copy_from_slice(comm.as_bytes());
        stats[OFF_PID..OFF_PID + 4].copy_from_slice(&tid.to_ne_bytes());
        stats[OFF_PPID..OFF_PPID + 4].copy_from_slice(&ppid.to_ne_bytes());
        stats[OFF_TGID..OFF_TGID + 4].copy_from_slice(&tgid.to_ne_bytes());
        let mut inner = Vec::new();
        nla(&mut inner, 1, &tid.to_ne_bytes());
        nla(&mut inner, TASKSTATS_TYPE_STATS, &stats);
        let mut outer = Vec::new();
        nla(&mut outer, TASKSTATS_TYPE_AGGR_PID, &inner);
        message(20, TASKSTATS_CMD_NEW, 1, &outer)
    }

    #[test]
    fn exits_are_read_from_their_netlink_messages() {
        let mut datagram = exit_message(101, 100, 1, "hackbench", 5_000_000, 700_000, 12);
        datagram.extend(exit_message(7, 7, 1, "sshd", 1, 2, 3));
        let exits: Vec<Exit> = messages(&datagram)
            .into_iter()
            .filter_map(|(_, b)| parse_exit(b))
            .collect();
        assert_eq!(exits.len(), 2);
        assert_eq!(
            exits[0],
            Exit {
                stat: TaskStat {
                    tid: 101,
                    tgid: 100,
                    comm: "hackbench".into(),
                    run_ns: 5_000_000,
                    delay_ns: 700_000,
                    slices: 12
                },
                ppid: 1
            }
        );
    }

    #[test]
    fn a_tree_is_found_whatever_order_its_tasks_exit_in() {
        let e = |tid: u32, tgid: u32, ppid: u32| Exit {
            stat: TaskStat {
                tid,
                tgid,
                comm: String::new(),
                run_ns: 1,
                delay_ns: 1,
                slices: 1,
            },
            ppid,
        };
        // 10 is the workload; 11 its child, 12 its grandchild (exits first), 13 a thread
        // of 11; 50 and 51 are not its.
        let exits = [
            e(12, 12, 11),
            e(50, 50, 1),
            e(13, 11, 10),
            e(11, 11, 10),
            e(51, 51, 50),
            e(10, 10, 9),
        ];
        let mut got: Vec<u32> = of_tree(10, &exits).iter().map(|t| t.tid).collect();
        got.sort();
        assert_eq!(got, [10, 11, 12, 13]);
    }
}
