//! The lab's initramfs: busybox, kreg-agent and hackbench with their shared libraries, the
//! kernel's virtio-net modules (decompressed, in dependency order), an init script that
//! mounts /proc, /sys and debugfs, brings up the network and runs the agent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::cpio::{archive, Entry};
use super::LabError;

/// The guest's agent port; qemu forwards a loopback port of the host to it.
pub const GUEST_AGENT_PORT: u16 = 7878;

const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /tmp
while read -r m; do
  [ -n "$m" ] && { insmod "/lib/modules/kreg/$m" || echo "kreg-init: insmod $m failed"; }
done < /etc/kreg/modules
hostname kreg-lab
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "kreg-init: kernel $(uname -r) up, starting kreg-agent"
while true; do
  /usr/bin/kreg-agent --listen 0.0.0.0:7878 --token-file /etc/kreg/token --data-dir /tmp/kreg-agent
  echo "kreg-init: kreg-agent exited with $?, restarting"
  sleep 1
done
"#;

/// Programs copied from the controller's machine into every lab initramfs.
const HOST_PROGRAMS: &[(&str, &str)] = &[("/usr/bin/hackbench", "usr/bin/hackbench")];

/// Modules the guest needs for its network; their dependencies come along.
const WANTED_MODULES: &[&str] = &["virtio_pci", "virtio_net"];

fn err(s: impl Into<String>) -> LabError {
    LabError::Msg(s.into())
}

/// Shared libraries a program needs, as `ldd` resolves them on this machine.
fn shared_libs(program: &Path) -> Result<Vec<PathBuf>, LabError> {
    let out = Command::new("ldd")
        .arg(program)
        .output()
        .map_err(|e| err(format!("cannot run ldd: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("not a dynamic executable") || !out.status.success() {
        return Ok(Vec::new());
    }
    let mut libs = Vec::new();
    for line in text.lines() {
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

fn find_module(modules_dir: &Path, name: &str) -> Option<PathBuf> {
    let wanted = [format!("{name}.ko"), format!("{name}.ko.xz"), format!("{name}.ko.zst")];
    let alt = name.replace('_', "-");
    let wanted_alt = [format!("{alt}.ko"), format!("{alt}.ko.xz"), format!("{alt}.ko.zst")];
    let mut stack = vec![modules_dir.join("kernel")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                if wanted.iter().chain(wanted_alt.iter()).any(|w| w == n) {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// A module's bytes, decompressed when the package ships it compressed.
fn module_bytes(path: &Path) -> Result<Vec<u8>, LabError> {
    let name = path.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        Some("xz")
    } else if name.ends_with(".zst") {
        Some("zstd")
    } else {
        None
    };
    match tool {
        None => std::fs::read(path).map_err(|e| err(format!("{}: {e}", path.display()))),
        Some(t) => {
            let out = Command::new(t)
                .arg("-dc")
                .arg(path)
                .output()
                .map_err(|e| err(format!("cannot run {t}: {e}")))?;
            if !out.status.success() {
                return Err(err(format!("{t} -dc {} failed", path.display())));
            }
            Ok(out.stdout)
        }
    }
}

fn module_depends(path: &Path) -> Result<Vec<String>, LabError> {
    let out = Command::new("modinfo")
        .args(["-F", "depends"])
        .arg(path)
        .output()
        .map_err(|e| err(format!("cannot run modinfo (package kmod): {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect())
}

/// The modules to load, dependencies first, as (file name in the initramfs, bytes).
fn modules(modules_dir: &Path) -> Result<Vec<(String, Vec<u8>)>, LabError> {
    let mut order: Vec<String> = Vec::new();
    let mut files = Vec::new();
    fn visit(
        dir: &Path,
        name: &str,
        order: &mut Vec<String>,
        files: &mut Vec<(String, Vec<u8>)>,
        depth: u32,
    ) -> Result<(), LabError> {
        if order.iter().any(|o| o == name) || depth > 16 {
            return Ok(());
        }
        // Not found: built into this kernel.
        let Some(path) = find_module(dir, name) else {
            return Ok(());
        };
        for dep in module_depends(&path)? {
            visit(dir, &dep, order, files, depth + 1)?;
        }
        order.push(name.to_string());
        files.push((format!("{name}.ko"), module_bytes(&path)?));
        Ok(())
    }
    for m in WANTED_MODULES {
        visit(modules_dir, m, &mut order, &mut files, 0)?;
    }
    Ok(files)
}

/// Where `perf` comes from (Debian's linux-perf) when a lab run needs it.
pub const PERF: (&str, &str) = ("/usr/bin/perf", "usr/bin/perf");

/// Which perf a guest gets as /usr/bin/perf.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Perf<'a> {
    None,
    /// The host's (Debian's linux-perf).
    Host,
    /// One built from the kernel's tree.
    Built(&'a Path),
}

/// Builds the initramfs for one kernel release and returns its bytes. With `perf`, a perf
/// goes in too (with its libraries, some 30 MB for the host's).
pub fn build(agent_bin: &Path, token: &str, modules_dir: Option<&Path>, perf: Perf<'_>) -> Result<Vec<u8>, LabError> {
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        return Err(err("/bin/busybox is missing: install the busybox-static package"));
    }
    let mut entries = skeleton(token);
    entries.push(Entry::File {
        path: "bin/busybox".into(),
        mode: 0o755,
        data: read(busybox)?,
    });
    add_programs(&mut entries, agent_bin, busybox, perf)?;
    add_modules(&mut entries, modules_dir)?;
    Ok(archive(&entries))
}

fn read(p: &Path) -> Result<Vec<u8>, LabError> {
    std::fs::read(p).map_err(|e| err(format!("{}: {e}", p.display())))
}

/// The directories, device nodes, init and token of the guest.
fn skeleton(token: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    for d in [
        "bin",
        "dev",
        "etc",
        "etc/kreg",
        "lib",
        "lib/modules",
        "lib/modules/kreg",
        "proc",
        "root",
        "run",
        "sys",
        "tmp",
        "usr",
        "usr/bin",
        "var",
        "var/lib",
    ] {
        entries.push(Entry::Dir {
            path: d.into(),
            mode: 0o755,
        });
    }
    entries.push(Entry::CharDev {
        path: "dev/console".into(),
        mode: 0o600,
        major: 5,
        minor: 1,
    });
    entries.push(Entry::CharDev {
        path: "dev/null".into(),
        mode: 0o666,
        major: 1,
        minor: 3,
    });
    entries.push(Entry::File {
        path: "init".into(),
        mode: 0o755,
        data: INIT.as_bytes().to_vec(),
    });
    entries.push(Entry::File {
        path: "etc/kreg/token".into(),
        mode: 0o600,
        data: token.as_bytes().to_vec(),
    });
    entries
}

/// The agent and the host's programs, with the shared libraries they (and busybox) need.
fn add_programs(entries: &mut Vec<Entry>, agent_bin: &Path, busybox: &Path, perf: Perf<'_>) -> Result<(), LabError> {
    let mut programs: Vec<(PathBuf, String)> = vec![(agent_bin.to_path_buf(), "usr/bin/kreg-agent".into())];
    for (host, guest) in HOST_PROGRAMS {
        if !Path::new(host).exists() {
            return Err(err(format!("{host} is missing: install the rt-tests package")));
        }
        programs.push((PathBuf::from(host), guest.to_string()));
    }
    match perf {
        Perf::None => {}
        Perf::Host => {
            if !Path::new(PERF.0).exists() {
                return Err(err(format!("{} is missing: install the linux-perf package", PERF.0)));
            }
            programs.push((PathBuf::from(PERF.0), PERF.1.to_string()));
        }
        Perf::Built(path) => programs.push((path.to_path_buf(), PERF.1.to_string())),
    }
    // A dynamically linked busybox works too, given its libraries.
    let mut libs: BTreeSet<PathBuf> = shared_libs(busybox)?.into_iter().collect();
    for (host, guest) in &programs {
        entries.push(Entry::File {
            path: guest.clone(),
            mode: 0o755,
            data: read(host)?,
        });
        libs.extend(shared_libs(host)?);
    }
    let mut dirs: BTreeSet<String> = BTreeSet::new();
    for lib in &libs {
        let rel = lib.to_string_lossy().trim_start_matches('/').to_string();
        let mut acc = String::new();
        for part in Path::new(&rel).parent().into_iter().flat_map(|p| p.components()) {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(&part.as_os_str().to_string_lossy());
            if !["lib", "usr"].contains(&acc.as_str()) && dirs.insert(acc.clone()) {
                entries.push(Entry::Dir {
                    path: acc.clone(),
                    mode: 0o755,
                });
            }
        }
        entries.push(Entry::File {
            path: rel,
            mode: 0o755,
            data: read(lib)?,
        });
    }
    Ok(())
}

/// The kernel's modules the guest loads at boot, and their list.
fn add_modules(entries: &mut Vec<Entry>, modules_dir: Option<&Path>) -> Result<(), LabError> {
    let mut list = String::new();
    if let Some(dir) = modules_dir {
        for (name, bytes) in modules(dir)? {
            list.push_str(&name);
            list.push('\n');
            entries.push(Entry::File {
                path: format!("lib/modules/kreg/{name}"),
                mode: 0o644,
                data: bytes,
            });
        }
    }
    entries.push(Entry::File {
        path: "etc/kreg/modules".into(),
        mode: 0o644,
        data: list.into_bytes(),
    });
    Ok(())
}
