//! `kexec`: load an uploaded kernel (and initrd) with `kexec_file_load`, then, once the
//! answer is sent, `reboot(LINUX_REBOOT_CMD_KEXEC)`.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::wire::{ErrorKind, KexecRequest, StepError, StepOutput};

/// `KEXEC_FILE_NO_INITRAMFS`: no initrd is passed.
const KEXEC_FILE_NO_INITRAMFS: libc::c_ulong = 0x4;

pub async fn load(req: &KexecRequest, data_dir: &Path) -> Result<StepOutput, StepError> {
    let kernel_path = super::common::upload_path(data_dir, &req.kernel)?;
    let initrd_path = match &req.initrd {
        Some(n) => Some(super::common::upload_path(data_dir, n)?),
        None => None,
    };
    for (name, path) in std::iter::once((&req.kernel, &kernel_path)).chain(req.initrd.iter().zip(initrd_path.iter())) {
        if !path.is_file() {
            return Err(super::common::err(
                ErrorKind::NotFound,
                format!("{name} was not uploaded"),
            ));
        }
    }
    load_files(&kernel_path, initrd_path.as_deref(), &req.cmdline).await
}

/// Loads `kernel` (and `initrd`) with `kexec_file_load`.
pub async fn load_files(
    kernel_path: &Path,
    initrd_path: Option<&Path>,
    cmdline: &str,
) -> Result<StepOutput, StepError> {
    let open = |p: &Path| {
        std::fs::File::open(p).map_err(|e| super::common::err(ErrorKind::NotFound, format!("{}: {e}", p.display())))
    };
    let kernel = open(kernel_path)?;
    let initrd = initrd_path.map(open).transpose()?;
    let release = std::fs::read(kernel_path)
        .ok()
        .and_then(|b| crate::bzimage::release(&b));
    let cmdline = CString::new(cmdline.to_string())
        .map_err(|_| super::common::err(ErrorKind::BadRequest, "the kernel command line contains a NUL byte"))?;
    let (initrd_fd, flags) = match &initrd {
        Some(f) => (f.as_raw_fd(), 0),
        None => (-1, KEXEC_FILE_NO_INITRAMFS),
    };
    // SAFETY: plain syscall with valid fds and a NUL-terminated command line whose length
    // includes the NUL, as kexec_file_load(2) requires.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            kernel.as_raw_fd(),
            initrd_fd,
            cmdline.as_bytes_with_nul().len() as libc::c_ulong,
            cmdline.as_ptr(),
            flags,
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(super::common::err(
            ErrorKind::Kernel,
            format!("kexec_file_load of {} refused: {e}", kernel_path.display()),
        ));
    }
    Ok(StepOutput::KexecStarted {
        kernel_release: release,
    })
}

/// Flushes file systems and jumps into the loaded kernel. Returns only if that failed.
pub fn reboot_into_loaded() {
    // SAFETY: sync and reboot take no pointers.
    unsafe {
        libc::sync();
        let rc = libc::reboot(libc::LINUX_REBOOT_CMD_KEXEC);
        tracing::error!(rc, error = %std::io::Error::last_os_error(), "reboot into the loaded kernel failed");
    }
}
