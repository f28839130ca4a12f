//! Kernels as the controller prepares them: Debian packages fetched with `apt-get download`
//! and unpacked into a cache, or prebuilt images; each with the release it will report.

use crate::failure::CommandFailed;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::scenario::KernelSource;

pub mod build;
pub mod perf;
pub mod range;
pub mod remote;
mod worktree;

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("{0}")]
    Msg(String),
}

pub(crate) fn msg(s: impl Into<String>) -> KernelError {
    KernelError::Msg(s.into())
}

/// A kernel ready to boot: its image, the release it will report, and where its modules are.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub release: String,
    pub vmlinuz: PathBuf,
    /// `lib/modules/RELEASE` of the unpacked package, when it has one.
    pub modules_dir: Option<PathBuf>,
    /// For a Debian package: the concrete package name the request resolved to.
    pub package: Option<String>,
    /// For a kernel kreg built: the build.
    pub built: Option<build::Built>,
    /// perf built from the kernel's tree (`perf: tree`), to run in place of the SUT's own.
    pub perf: Option<perf::TreePerf>,
}

/// Prepares a kernel on the controller's machine. `None` for `running`. A kernel built from
/// source needs `running_config` when its config base is `running`; build output goes to `log`.
pub fn prepare(
    source: &KernelSource,
    cache: &Path,
    running_config: Option<String>,
    log: &mut dyn FnMut(&str),
) -> Result<Option<Prepared>, KernelError> {
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(2);
    prepare_with(source, cache, running_config, &mut build::Local { jobs }, log)
}

/// [`prepare`], with kernels built from source compiled on `host`.
pub fn prepare_with(
    source: &KernelSource,
    cache: &Path,
    running_config: Option<String>,
    host: &mut dyn build::BuildHost,
    log: &mut dyn FnMut(&str),
) -> Result<Option<Prepared>, KernelError> {
    match source {
        KernelSource::Running => Ok(None),
        KernelSource::Path { vmlinuz } => {
            let image = std::fs::read(vmlinuz).map_err(|e| msg(format!("kernel image {}: {e}", vmlinuz.display())))?;
            let release = kreg_protocol::bzimage::release(&image).ok_or_else(|| {
                msg(format!(
                    "{} is not a bzImage (no setup header with a kernel version)",
                    vmlinuz.display()
                ))
            })?;
            Ok(Some(Prepared {
                release,
                vmlinuz: vmlinuz.clone(),
                modules_dir: None,
                package: None,
                built: None,
                perf: None,
            }))
        }
        KernelSource::Deb { package } => fetch_deb(package, cache).map(Some),
        KernelSource::Build(spec) => {
            let jobs = host.jobs();
            let b = build::build(spec, cache, running_config, host, log)?;
            let perf = if spec.perf {
                Some(perf::build(spec, &b, cache, jobs, log)?)
            } else {
                None
            };
            Ok(Some(Prepared {
                release: b.release.clone(),
                vmlinuz: b.image(),
                modules_dir: b.modules_dir(),
                package: None,
                built: Some(b),
                perf,
            }))
        }
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<std::process::Output, KernelError> {
    let out = cmd.output().map_err(|e| msg(format!("cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(msg(CommandFailed::of_output(what, &out).to_string()));
    }
    Ok(out)
}

/// Runs a command on the controller; its stdout, trimmed, or an error with the output's tail.
pub(crate) fn stdout_of(cmd: &mut Command, what: &str) -> Result<String, KernelError> {
    let out = run(cmd, what)?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn find_deb(dir: &Path, package: &str) -> Option<PathBuf> {
    let prefix = format!("{package}_");
    std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".deb"))
    })
}

/// An exclusive lock on a file of the cache, held until dropped: one process (or thread)
/// at a time downloads and unpacks packages there.
struct CacheLock {
    /// Closing it releases the lock.
    _file: std::fs::File,
}

impl CacheLock {
    fn take(cache: &Path) -> Result<CacheLock, KernelError> {
        Self::take_named(cache, "packages")
    }

    /// The lock `.NAME.lock` of the cache (one per thing built or fetched there).
    fn take_named(cache: &Path, name: &str) -> Result<CacheLock, KernelError> {
        std::fs::create_dir_all(cache).map_err(|e| msg(format!("cannot create {}: {e}", cache.display())))?;
        let path = cache.join(format!(".{name}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| msg(format!("{}: {e}", path.display())))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; blocks until the lock is ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(msg(format!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(CacheLock { _file: file })
    }
}

/// Downloads (once) and unpacks (once) a linux-image package. A meta-package such as
/// `linux-image-amd64` is followed to the image package it depends on. Concurrent callers
/// (two tests, two kreg processes) wait for each other.
fn fetch_deb(package: &str, cache: &Path) -> Result<Prepared, KernelError> {
    let _lock = CacheLock::take(cache)?;
    fetch_deb_locked(package, cache, 0)
}

fn fetch_deb_locked(package: &str, cache: &Path, depth: u32) -> Result<Prepared, KernelError> {
    if depth > 3 {
        return Err(msg(format!("{package}: too many levels of meta-packages")));
    }
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| msg(format!("cannot create {}: {e}", debs.display())))?;
    let deb = match find_deb(&debs, package) {
        Some(d) => d,
        None => {
            eprintln!("kreg: downloading {package} with apt-get download");
            run(
                Command::new("apt-get")
                    .args(["download", "-q", package])
                    .current_dir(&debs),
                &format!("apt-get download {package}"),
            )
            .map_err(|e| msg(format!("{e}\n(run `apt-get update` if the package list is stale)")))?;
            find_deb(&debs, package)
                .ok_or_else(|| msg(format!("apt-get download {package} left no .deb in {}", debs.display())))?
        }
    };
    let tree = cache.join("kernels").join(package);
    if !tree.join(".unpacked").exists() {
        let _ = std::fs::remove_dir_all(&tree);
        std::fs::create_dir_all(&tree).map_err(|e| msg(format!("cannot create {}: {e}", tree.display())))?;
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree), "dpkg-deb -x")?;
        std::fs::write(tree.join(".unpacked"), "").map_err(|e| msg(e.to_string()))?;
    }
    let boot = tree.join("boot");
    let vmlinuz = std::fs::read_dir(&boot).ok().and_then(|rd| {
        rd.flatten().map(|e| e.path()).find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
    });
    match vmlinuz {
        Some(v) => {
            let release = v
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .unwrap_or_default()
                .to_string();
            let modules = tree.join("lib/modules").join(&release);
            let modules = if modules.exists() {
                modules
            } else {
                tree.join("usr/lib/modules").join(&release)
            };
            Ok(Prepared {
                release,
                vmlinuz: v,
                modules_dir: modules.exists().then_some(modules),
                package: Some(package.to_string()),
                built: None,
                perf: None,
            })
        }
        None => {
            let out = run(
                Command::new("dpkg-deb").arg("-f").arg(&deb).arg("Depends"),
                "dpkg-deb -f",
            )?;
            let depends = String::from_utf8_lossy(&out.stdout).to_string();
            let target = image_dependency(&depends).ok_or_else(|| {
                msg(format!(
                    "{package} has no kernel image and depends on no linux-image package (Depends: {})",
                    depends.trim()
                ))
            })?;
            fetch_deb_locked(&target, cache, depth + 1)
        }
    }
}

/// The first `linux-image-*` package in a Depends field.
pub fn image_dependency(depends: &str) -> Option<String> {
    depends
        .split([',', '|'])
        .map(|d| d.split_whitespace().next().unwrap_or(""))
        .find(|d| d.starts_with("linux-image-"))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    #[test]
    fn follows_meta_package_dependency() {
        assert_eq!(
            super::image_dependency("linux-image-6.12.117+deb12-amd64 (= 6.12.117-1~deb12u1)"),
            Some("linux-image-6.12.117+deb12-amd64".into())
        );
        assert_eq!(
            super::image_dependency("kmod, linux-base (>= 4.3~), linux-image-6.1.0-57-amd64"),
            Some("linux-image-6.1.0-57-amd64".into())
        );
        assert_eq!(super::image_dependency("kmod"), None);
    }
}
