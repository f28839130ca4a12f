//! `installed_kernels` and `remove_kernel`: what kreg installed on this machine, and taking
//! one of them off again, so that a long bisection does not fill /boot.
//!
//! Only kreg's own kernels (`/boot/kreg/RELEASE`) are listed or removed. When a distribution
//! kernel of the same release is installed too (`/boot/vmlinuz-RELEASE`), its config,
//! System.map and modules are shared with it and stay.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::install::{check_release, running_release, Layout};
use crate::wire::{ErrorKind, InstalledKernel, StepError, StepOutput};

fn err(kind: ErrorKind, message: impl Into<String>) -> StepError {
    super::common::err(kind, message)
}

/// Bytes under `path` (files only; symlinks are not followed).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Whether the distribution has a kernel of this release (it then owns the shared files).
fn distribution_has(release: &str, layout: &Layout) -> bool {
    layout.boot_dir.join(format!("vmlinuz-{release}")).exists()
}

/// The files of a kreg kernel besides its /boot/kreg folder, when it owns them.
fn own_files(release: &str, layout: &Layout) -> Vec<PathBuf> {
    if distribution_has(release, layout) {
        return Vec::new();
    }
    let mut files = vec![
        layout.boot_dir.join(format!("config-{release}")),
        layout.boot_dir.join(format!("System.map-{release}")),
        layout.modules_dir.join(release),
    ];
    if layout.modules_dir == Path::new("/lib/modules") {
        // update-initramfs's record of the initramfs it made.
        files.push(PathBuf::from("/var/lib/initramfs-tools").join(release));
    }
    files
}

/// kreg's kernels on this machine, oldest install first.
pub fn list(layout: &Layout) -> Result<StepOutput, StepError> {
    let root = layout.boot_dir.join("kreg");
    let mut kernels = Vec::new();
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(StepOutput::Kernels {
                running: running_release(),
                kernels,
            })
        }
        Err(e) => return Err(err(ErrorKind::Io, format!("{}: {e}", root.display()))),
    };
    for e in entries.flatten() {
        let Some(release) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if check_release(&release).is_err() || !e.path().is_dir() {
            continue;
        }
        let image = e.path().join("vmlinuz");
        let installed_unix = std::fs::metadata(&image)
            .or_else(|_| e.metadata())
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let bytes = size_of(&e.path()) + own_files(&release, layout).iter().map(|p| size_of(p)).sum::<u64>();
        kernels.push(InstalledKernel {
            shares_with_distribution: distribution_has(&release, layout),
            release,
            installed_unix,
            bytes,
        });
    }
    kernels.sort_by(|a, b| (a.installed_unix, &a.release).cmp(&(b.installed_unix, &b.release)));
    Ok(StepOutput::Kernels {
        running: running_release(),
        kernels,
    })
}

/// Removes a kernel kreg installed. The running kernel and kernels kreg did not install
/// are refused.
pub fn remove(release: &str, layout: &Layout) -> Result<StepOutput, StepError> {
    check_release(release)?;
    if release == running_release() {
        return Err(err(
            ErrorKind::Forbidden,
            format!("{release} is the running kernel; kreg does not remove the kernel a machine runs"),
        ));
    }
    let home = layout.kernel_dir(release);
    if !home.is_dir() {
        return Err(err(
            ErrorKind::NotFound,
            format!("{} does not exist: kreg did not install {release} here", home.display()),
        ));
    }
    let mut removed = Vec::new();
    for path in std::iter::once(home).chain(own_files(release, layout)) {
        let gone = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(_) => continue,
        };
        gone.map_err(|e| err(ErrorKind::Io, format!("removing {}: {e}", path.display())))?;
        removed.push(path.display().to_string());
    }
    Ok(StepOutput::KernelRemoved {
        release: release.to_string(),
        removed,
    })
}
