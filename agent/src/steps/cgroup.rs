//! cgroups v2: trees made under `MOUNT/kreg/NAME` for a job (one group, or a generated
//! hierarchy with the limits on its first level), a workload started in them (the child
//! joins the first leaf between fork and exec; its descendant processes are dealt out over
//! the leaves while it runs), and the tree removed afterwards.

use std::collections::{BTreeMap, HashSet};
use std::ffi::CString;
use std::path::{Path, PathBuf};

use crate::wire::{CgroupTree, CgroupsMade, ErrorKind, StepError};

pub use kreg_protocol::limits::MAX_GROUPS;

/// Where the cgroup2 file system is mounted (the first such mount in mountinfo).
pub fn mount() -> Result<PathBuf, StepError> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| super::common::err(ErrorKind::Io, format!("reading /proc/self/mountinfo: {e}")))?;
    mount_in(&info).ok_or_else(|| {
        super::common::err(
            ErrorKind::NotFound,
            "no cgroup2 file system is mounted on this machine (mount -t cgroup2 none /sys/fs/cgroup)",
        )
    })
}

/// The cgroup2 mount point in a mountinfo text: field 5 is the mount point, and the file
/// system type follows the ` - ` separator.
fn mount_in(info: &str) -> Option<PathBuf> {
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(unescape))
            .flatten()
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> PathBuf {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// A tree's name: one or two plain names joined by `/` (`run-7/job-12`), so that one
/// removal takes every tree of a run.
fn check_name(name: &str) -> Result<(), StepError> {
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 2 || parts.iter().any(|p| super::common::check_owner(p).is_err()) {
        return Err(super::common::err(
            ErrorKind::BadRequest,
            format!("bad cgroup tree name {name:?}: one or two plain names joined by '/'"),
        ));
    }
    Ok(())
}

fn io(what: impl std::fmt::Display, e: std::io::Error) -> StepError {
    super::common::err(ErrorKind::Io, format!("{what}: {e}"))
}

fn write(path: &Path, value: &str) -> Result<(), StepError> {
    std::fs::write(path, value).map_err(|e| io(format!("writing {value:?} to {}", path.display()), e))
}

/// The controllers a tree needs: `cpu` always (the scheduler's task groups are what a
/// hierarchy is for), and the one of each limit file (`cpuset.cpus` → `cpuset`).
fn controllers(tree: &CgroupTree) -> Result<Vec<String>, StepError> {
    let mut out = vec!["cpu".to_string()];
    for (file, value) in &tree.limits {
        let ok_file = file.split_once('.').is_some_and(|(c, rest)| {
            !c.is_empty()
                && !rest.is_empty()
                && file
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_'))
        });
        if !ok_file || file.starts_with("cgroup.") || value.contains('\n') {
            return Err(super::common::err(
                ErrorKind::BadRequest,
                format!("bad cgroup limit {file}={value:?}"),
            ));
        }
        let c = file.split('.').next().unwrap_or_default().to_string();
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

fn total_groups(fanout: &[u32]) -> u64 {
    let mut level = 1u64;
    let mut total = 0u64;
    for f in fanout {
        level = level.saturating_mul(u64::from(*f));
        total = total.saturating_add(level);
    }
    total
}

/// Makes the tree: `MOUNT/kreg/NAME` (removed first if an earlier attempt left it), the
/// controllers enabled from the mount down to the leaves' parents, the limits written in
/// each group of the first level (in the top when there are no levels), then the levels.
pub fn make(tree: &CgroupTree) -> Result<CgroupsMade, StepError> {
    check_name(&tree.name)?;
    if tree.fanout.contains(&0) || total_groups(&tree.fanout) > MAX_GROUPS {
        return Err(super::common::err(
            ErrorKind::BadRequest,
            format!(
                "a cgroup hierarchy of {:?} children per level: each at least 1, at most {MAX_GROUPS} groups in all",
                tree.fanout
            ),
        ));
    }
    let wanted = controllers(tree)?;
    let mount = mount()?;
    let available =
        std::fs::read_to_string(mount.join("cgroup.controllers")).map_err(|e| io("reading cgroup.controllers", e))?;
    if let Some(missing) = wanted
        .iter()
        .find(|c| !available.split_whitespace().any(|a| a == c.as_str()))
    {
        return Err(super::common::err(
            ErrorKind::NotFound,
            format!(
                "the cgroup2 mount {} has no {missing} controller (it has: {})",
                mount.display(),
                available.trim()
            ),
        ));
    }
    let enable: String = wanted.iter().map(|c| format!("+{c} ")).collect();
    let enable = enable.trim_end();
    let kreg = mount.join("kreg");
    let top = kreg.join(&tree.name);
    if top.exists() {
        remove_tree(&top)?;
    }
    write(&mount.join("cgroup.subtree_control"), enable)?;
    mkdir(&kreg)?;
    write(&kreg.join("cgroup.subtree_control"), enable)?;
    if let Some((parent, _)) = tree.name.split_once('/') {
        mkdir(&kreg.join(parent))?;
        write(&kreg.join(parent).join("cgroup.subtree_control"), enable)?;
    }
    mkdir(&top)?;
    let mut level = vec![top.clone()];
    let mut limited = Vec::new();
    if tree.fanout.is_empty() {
        limits(&top, tree)?;
        limited.push(top.clone());
    }
    for (depth, fanout) in tree.fanout.iter().enumerate() {
        let mut next = Vec::with_capacity(level.len() * *fanout as usize);
        for parent in &level {
            write(&parent.join("cgroup.subtree_control"), enable)?;
            for i in 0..*fanout {
                let child = parent.join(format!("g{i}"));
                mkdir(&child)?;
                if depth == 0 {
                    limits(&child, tree)?;
                    limited.push(child.clone());
                }
                next.push(child);
            }
        }
        level = next;
    }
    let show = |p: &Path| p.display().to_string();
    Ok(CgroupsMade {
        mount: show(&mount),
        top: show(&top),
        limited: limited.iter().map(|p| show(p)).collect(),
        leaves: level.iter().map(|p| show(p)).collect(),
    })
}

fn mkdir(path: &Path) -> Result<(), StepError> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(format!("making cgroup {}", path.display()), e)),
    }
}

fn limits(group: &Path, tree: &CgroupTree) -> Result<(), StepError> {
    for (file, value) in &tree.limits {
        write(&group.join(file), value)?;
    }
    Ok(())
}

/// Removes `MOUNT/kreg/NAME` (NAME may be the first part of trees' names: all of them go)
/// and everything under it; returns how many groups went. A
/// tree that still holds processes has them killed first (`cgroup.kill`).
pub fn remove(name: &str) -> Result<u64, StepError> {
    check_name(name)?;
    let top = mount()?.join("kreg").join(name);
    if !top.exists() {
        return Ok(0);
    }
    remove_tree(&top)
}

fn remove_tree(top: &Path) -> Result<u64, StepError> {
    let mut last = None;
    for attempt in 0..50 {
        match remove_below(top) {
            Ok(n) => return Ok(n),
            Err(e) => last = Some(e),
        }
        if attempt == 0 {
            // Kills every process of the subtree (Linux 5.14 and later).
            let _ = std::fs::write(top.join("cgroup.kill"), "1");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(io(
        format!("removing cgroup {}", top.display()),
        last.unwrap_or_else(|| std::io::Error::other("busy")),
    ))
}

/// Depth first: a cgroup directory is removed with `rmdir` once its children are gone.
fn remove_below(dir: &Path) -> std::io::Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            n += remove_below(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)?;
    Ok(n + 1)
}

/// The leaves an exec request names, checked to be cgroups kreg made, and the file the
/// child writes itself into (as a C string made before the fork).
pub fn placement(leaves: &[String]) -> Result<(CString, Vec<PathBuf>), StepError> {
    let mount = mount()?;
    let kreg = mount.join("kreg");
    let mut out = Vec::new();
    for leaf in leaves {
        let p = PathBuf::from(leaf);
        let inside = p.starts_with(&kreg)
            && p.components()
                .all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
        if !inside || !p.join("cgroup.procs").exists() {
            return Err(super::common::err(
                ErrorKind::BadRequest,
                format!("{leaf} is not a cgroup kreg made (under {})", kreg.display()),
            ));
        }
        out.push(p);
    }
    let Some(first) = out.first() else {
        return Err(super::common::err(
            ErrorKind::BadRequest,
            "cgroups: an empty list of leaves",
        ));
    };
    let procs = CString::new(first.join("cgroup.procs").as_os_str().as_encoded_bytes())
        .map_err(|_| super::common::err(ErrorKind::BadRequest, "a cgroup path with a NUL byte"))?;
    Ok((procs, out))
}

/// Between fork and exec: the child writes itself into `procs`. Only async-signal-safe
/// calls (open, write, close).
pub fn join_self(procs: &CString) -> std::io::Result<()> {
    // SAFETY: a valid C string; the descriptor is closed before returning.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
        let e = std::io::Error::last_os_error();
        libc::close(fd);
        if ok {
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// The child processes of `pid` (of each of its threads).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    out
}

/// The cgroup (v2 path, from the mount) a process is in.
pub fn cgroup_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string))
}

/// The cgroup (v2 path, from the mount) a thread is in.
pub fn cgroup_of_task(pid: u32, tid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/cgroup")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string))
}

/// What one look at a process says about its cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// Gone (exited and reaped): nothing to note.
    Gone,
    /// In this cgroup (v2 path from the mount), for sure.
    Settled(String),
    /// Reads as the root cgroup and has never run. A child is visible in `/proc` and in its
    /// parent's `children` before the kernel attaches it to its parent's cgroup
    /// (`cgroup_post_fork` comes after; until then it belongs to the root's set), so such a
    /// look proves nothing: the process is looked at again.
    Forking,
}

/// Times the main thread of `pid` was scheduled in (the third field of
/// `/proc/PID/schedstat`); `None` without the file (a kernel without `CONFIG_SCHED_INFO`).
fn times_run(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    text.split_whitespace().nth(2)?.parse().ok()
}

/// One look at `pid`. Whether it ran is read before its cgroup: a process that ran was
/// attached to its cgroup before (a child is woken only after `cgroup_post_fork`), so the
/// cgroup read next is its own. Any cgroup but the root is its own in any case.
pub fn reading(pid: u32) -> Reading {
    let ran = times_run(pid).is_some_and(|n| n > 0);
    match cgroup_of(pid) {
        None => Reading::Gone,
        Some(cg) if cg == "/" && !ran => Reading::Forking,
        Some(cg) => Reading::Settled(cg),
    }
}

/// Deals a workload's child processes out over the leaves, round-robin, as they appear
/// (their own children inherit their leaf); and notes, per cgroup, the distinct processes
/// seen in it. Only the workload's direct children are looked for: one small read per
/// look, so that looking does not load the machine being measured.
pub struct Spread {
    leaves: Vec<PathBuf>,
    mount: PathBuf,
    placed: HashSet<u32>,
    next: usize,
    /// Each process's cgroup, from its first settled look.
    seen: BTreeMap<u32, String>,
    /// Processes only ever seen while being forked: looked at again on every tick.
    forking: HashSet<u32>,
}

impl Spread {
    /// For an exec's `cgroups`, after the first look at the started process `root`.
    pub fn for_request(leaves: Option<&[String]>, root: u32) -> Result<Option<Spread>, StepError> {
        let Some(leaves) = leaves else {
            return Ok(None);
        };
        let mut s = Spread::new(placement(leaves)?.1, root);
        s.tick(root);
        Ok(Some(s))
    }

    pub fn new(leaves: Vec<PathBuf>, root: u32) -> Spread {
        let mount = mount().unwrap_or_else(|_| PathBuf::from("/sys/fs/cgroup"));
        let mut placed = HashSet::new();
        placed.insert(root);
        let mut forking = HashSet::new();
        // The root process joined the first leaf itself; it is looked at on the first tick.
        forking.insert(root);
        Spread {
            leaves,
            mount,
            placed,
            next: 1,
            seen: BTreeMap::new(),
            forking,
        }
    }

    /// One look: new children of `root` go to the next leaf, and the cgroup each new
    /// process ends up in is noted once it is sure.
    pub fn tick(&mut self, root: u32) {
        self.tick_with(&children(root), reading);
    }

    /// [`Spread::tick`] with the children and the look given.
    fn tick_with(&mut self, children: &[u32], look: impl Fn(u32) -> Reading) {
        for &pid in children {
            if !self.placed.insert(pid) {
                continue;
            }
            if self.leaves.len() > 1 {
                let leaf = &self.leaves[self.next % self.leaves.len()];
                self.next += 1;
                // The kernel finishes a fork before it moves the process. A process that
                // ended meanwhile cannot be moved; nothing to do about it.
                let _ = std::fs::write(leaf.join("cgroup.procs"), pid.to_string());
            }
            self.forking.insert(pid);
        }
        let pending: Vec<u32> = self.forking.iter().copied().collect();
        for pid in pending {
            match look(pid) {
                Reading::Forking => {}
                Reading::Gone => {
                    self.forking.remove(&pid);
                }
                Reading::Settled(cg) => {
                    self.forking.remove(&pid);
                    self.seen.insert(pid, cg);
                }
            }
        }
    }

    /// Deals `root`'s children out from a thread of its own until [`Watch::finish`]: every
    /// 2 ms while the workload starts (its first 2 s), then every 100 ms. The thread asks
    /// for the lowest real-time priority (SCHED_FIFO 1) so that a workload keeping every CPU
    /// busy (hackbench's 80 processes) cannot starve it while it forks; each look is one
    /// small read, so the workload loses microseconds. Without the privilege it runs as
    /// any thread.
    pub fn watch(mut self, root: u32) -> Watch {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen_stop = stop.clone();
        let thread = std::thread::Builder::new().name("kreg-spread".into()).spawn(move || {
            let param = libc::sched_param { sched_priority: 1 };
            // SAFETY: sets this thread's own policy; `param` outlives the call.
            let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
            let started = std::time::Instant::now();
            while !seen_stop.load(std::sync::atomic::Ordering::Relaxed) {
                self.tick(root);
                let pause = if started.elapsed() < std::time::Duration::from_secs(2) {
                    2
                } else {
                    100
                };
                std::thread::sleep(std::time::Duration::from_millis(pause));
            }
            // A last look at what is still there.
            self.tick(root);
            self
        });
        Watch {
            stop,
            thread: thread.ok(),
        }
    }

    /// Distinct processes seen per cgroup, as absolute paths under the mount.
    pub fn observed(&self) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        for cg in self.seen.values() {
            let path = self.mount.join(cg.trim_start_matches('/'));
            *out.entry(path.display().to_string()).or_insert(0) += 1;
        }
        out
    }
}

/// A [`Spread`] at work in its thread.
pub struct Watch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Spread>>,
}

impl Watch {
    /// Stops the thread (within its pause) and gives what it saw.
    pub async fn finish(mut self) -> BTreeMap<String, u32> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let Some(thread) = self.thread.take() else {
            return BTreeMap::new();
        };
        tokio::task::spawn_blocking(move || thread.join().map(|s| s.observed()).unwrap_or_default())
            .await
            .unwrap_or_default()
    }
}

/// A step that ends early (its request gone) stops the thread too.
impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_in_mountinfo() {
        let info = "22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
                    30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(mount_in(info), Some(PathBuf::from("/sys/fs/cgroup")));
        let spaced = "30 22 0:26 / /mnt/my\\040cg rw - cgroup2 none rw\n";
        assert_eq!(mount_in(spaced), Some(PathBuf::from("/mnt/my cg")));
        assert_eq!(mount_in("22 1 0:21 / /proc rw - proc proc rw\n"), None);
    }

    #[test]
    fn limits_name_their_controllers_and_odd_files_are_refused() {
        let tree = |limits: &[(&str, &str)]| CgroupTree {
            name: "t".into(),
            fanout: vec![],
            limits: limits.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        };
        assert_eq!(
            controllers(&tree(&[("cpu.max", "50000 100000"), ("cpuset.cpus", "0-1")])).unwrap(),
            ["cpu", "cpuset"]
        );
        for bad in [
            ("cgroup.procs", "1"),
            ("../x.max", "1"),
            ("cpu.max", "1\n2"),
            ("nodot", "1"),
        ] {
            assert!(controllers(&tree(&[bad])).is_err(), "{bad:?}");
        }
    }

    /// A child looked at while the kernel is still forking it reads as the root cgroup:
    /// that look is not a placement, the next one is.
    #[test]
    fn a_process_seen_mid_fork_is_noted_where_it_lands() {
        let leaf = "/kreg/run-1/job-1/l0".to_string();
        let mut s = Spread::new(vec![PathBuf::from("/sys/fs/cgroup/kreg/run-1/job-1/l0")], 10);
        let looks = std::cell::RefCell::new(vec![(10, Reading::Settled(leaf.clone())), (11, Reading::Forking)]);
        let look = |pid: u32| {
            looks
                .borrow()
                .iter()
                .find(|(p, _)| *p == pid)
                .map(|(_, r)| r.clone())
                .unwrap_or(Reading::Gone)
        };
        s.tick_with(&[11], look);
        assert_eq!(s.seen.len(), 1, "only the root is placed for sure: {:?}", s.seen);
        assert!(s.forking.contains(&11));
        looks.borrow_mut()[1].1 = Reading::Settled(leaf.clone());
        looks.borrow_mut().push((12, Reading::Gone));
        s.tick_with(&[11, 12], look);
        let cgroups: Vec<&String> = s.seen.values().collect();
        assert_eq!(cgroups, [&leaf, &leaf]);
        assert!(s.forking.is_empty());
        // A process that ran and reads as the root cgroup did escape, and says so.
        looks.borrow_mut().push((13, Reading::Settled("/".into())));
        s.tick_with(&[13], look);
        let observed = s.observed();
        assert_eq!(observed.len(), 2, "{observed:?}");
        assert_eq!(observed.values().sum::<u32>(), 3, "{observed:?}");
    }

    /// The look itself, on this machine: a process that has run is settled wherever it is;
    /// a pid that is not there is gone.
    #[test]
    fn a_running_process_is_settled_and_a_missing_one_gone() {
        let me = std::process::id();
        match reading(me) {
            Reading::Settled(cg) => assert!(cg.starts_with('/'), "{cg}"),
            other => panic!("this process read as {other:?}"),
        }
        assert_eq!(reading(u32::MAX - 1), Reading::Gone);
    }

    #[test]
    fn groups_are_counted_per_level() {
        assert_eq!(total_groups(&[]), 0);
        assert_eq!(total_groups(&[2, 100, 10, 1, 1]), 2 + 200 + 2000 + 2000 + 2000);
        assert!(total_groups(&[u32::MAX, u32::MAX, u32::MAX]) > MAX_GROUPS);
    }
}
