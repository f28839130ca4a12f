//! `install_kernel`, `kexec_installed` and `reboot` (GRUB's part is in [`super::grub`]): a kernel's files go where
//! the machine boots from, and the machine boots into it by kexec or by a one-shot GRUB
//! entry. Every program runs from an argv array; the release is checked to be a plain name
//! before it becomes part of any path.
//!
//! kreg's kernels live in `/boot/kreg/RELEASE/` (vmlinuz, initrd.img, cmdline), with
//! `/boot/config-RELEASE` and `/boot/System.map-RELEASE` where tools look for them and the
//! modules in `/lib/modules/RELEASE`. The distribution's menu generator only lists
//! `/boot/vmlinuz-*`, so the machine's default entry (GRUB_DEFAULT, typically the newest
//! distribution kernel) never changes: kreg's kernels get their own submenu, written by
//! `/etc/grub.d/45_kreg`, at the end of the menu, and are only ever booted once.

use std::path::{Path, PathBuf};

use super::modules_tar;
use crate::wire::{ErrorKind, ExecRequest, InstallRequest, Installed, StepError, StepOutput};

/// Where kernels are installed. The defaults are the machine's own /boot and /lib/modules.
#[derive(Debug, Clone)]
pub struct Layout {
    pub boot_dir: PathBuf,
    pub modules_dir: PathBuf,
}

impl Layout {
    /// Where kreg keeps one kernel's image, initramfs and command line.
    pub fn kernel_dir(&self, release: &str) -> PathBuf {
        self.boot_dir.join("kreg").join(release)
    }
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            boot_dir: PathBuf::from("/boot"),
            modules_dir: PathBuf::from("/lib/modules"),
        }
    }
}

fn err(kind: ErrorKind, message: impl Into<String>) -> StepError {
    super::common::err(kind, message)
}

/// A release is a plain name: letters, digits, `.`, `_`, `-`, `+`, `~`, starting with a
/// letter or digit (so it is never taken for a path part like `..`, nor for an option of
/// depmod or an initramfs tool).
pub fn check_release(release: &str) -> Result<(), StepError> {
    let ok = release.len() <= 128
        && release.starts_with(|c: char| c.is_ascii_alphanumeric())
        && release
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '~'));
    if ok {
        Ok(())
    } else {
        Err(err(ErrorKind::BadRequest, format!("bad kernel release {release:?}")))
    }
}

pub(crate) fn running_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The first of `names` found in PATH (or the usual sbin folders), as an absolute path.
pub(crate) fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    for extra in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        dirs.push(PathBuf::from(extra));
    }
    for name in names {
        for d in &dirs {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs a program to completion; a failure carries its output.
pub(crate) async fn run(argv: Vec<String>, timeout_secs: u64, log: &mut String) -> Result<(), StepError> {
    let shown = argv.join(" ");
    let r = super::exec::run(ExecRequest {
        argv,
        timeout_secs,
        ..Default::default()
    })
    .await?;
    log.push_str(&format!("$ {shown}\n{}{}", r.stdout, r.stderr));
    if r.success() {
        Ok(())
    } else {
        Err(err(
            ErrorKind::Io,
            format!(
                "`{shown}` failed ({}): {}",
                r.exit_code.map_or("killed".to_string(), |c| format!("exit {c}")),
                tail(&format!("{}{}", r.stdout, r.stderr), 15)
            ),
        ))
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn copy_into(from: &Path, to: &Path) -> Result<(), StepError> {
    let tmp = to.with_extension("kreg-partial");
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::rename(&tmp, to))
        .map_err(|e| err(ErrorKind::Io, format!("installing {}: {e}", to.display())))
}

pub async fn install(req: &InstallRequest, data_dir: &Path, layout: &Layout) -> Result<StepOutput, StepError> {
    let r = &req.release;
    check_release(r)?;
    if *r == running_release() {
        return Err(err(
            ErrorKind::Forbidden,
            format!("{r} is the running kernel; kreg does not install over the kernel a machine runs"),
        ));
    }
    let upload = |name: &str| -> Result<PathBuf, StepError> {
        let p = super::common::upload_path(data_dir, name)?;
        if p.is_file() {
            Ok(p)
        } else {
            Err(err(ErrorKind::NotFound, format!("{name} was not uploaded")))
        }
    };
    let boot = &layout.boot_dir;
    std::fs::create_dir_all(boot).map_err(|e| err(ErrorKind::Io, format!("{}: {e}", boot.display())))?;
    let image = upload(&req.image)?;
    let header = std::fs::read(&image).map_err(|e| err(ErrorKind::Io, format!("{}: {e}", image.display())))?;
    match crate::bzimage::release(&header) {
        Some(announced) if announced != *r => {
            return Err(err(
                ErrorKind::BadRequest,
                format!("the image announces release {announced}, not {r}"),
            ))
        }
        _ => {}
    }
    let mut log = String::new();
    let mut written = Vec::new();
    let made = place_files(req, &image, &upload, layout, &mut written, &mut log).await;
    let (kernel, (initrd, tool)) = match made {
        Ok(x) => x,
        Err(e) => {
            // Nothing of a failed install stays: no half a kernel in the boot menu.
            for p in written.iter().rev() {
                let _ = match std::fs::symlink_metadata(p) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
                    _ => std::fs::remove_file(p),
                };
            }
            return Err(e);
        }
    };
    // Installed: the uploads have been copied or unpacked and are not needed again.
    for name in std::iter::once(&req.image)
        .chain(&req.system_map)
        .chain(&req.config)
        .chain(&req.modules)
    {
        if let Ok(p) = super::common::upload_path(data_dir, name) {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(StepOutput::Installed(Installed {
        release: r.clone(),
        kernel: kernel.display().to_string(),
        initrd: initrd.map(|p| p.display().to_string()),
        initramfs_tool: tool,
        log,
    }))
}

/// Writes the kernel's files, noting each path in `written` before it is written, and
/// makes the initramfs.
async fn place_files(
    req: &InstallRequest,
    image: &Path,
    upload: &(dyn Fn(&str) -> Result<PathBuf, StepError> + Sync),
    layout: &Layout,
    written: &mut Vec<PathBuf>,
    log: &mut String,
) -> Result<(PathBuf, (Option<PathBuf>, Option<String>)), StepError> {
    let r = &req.release;
    let boot = &layout.boot_dir;
    let home = layout.kernel_dir(r);
    if home.exists() {
        std::fs::remove_dir_all(&home).map_err(|e| err(ErrorKind::Io, format!("{}: {e}", home.display())))?;
    }
    written.push(home.clone());
    std::fs::create_dir_all(&home).map_err(|e| err(ErrorKind::Io, format!("{}: {e}", home.display())))?;
    let kernel = home.join("vmlinuz");
    copy_into(image, &kernel)?;
    let distro_owns = boot.join(format!("vmlinuz-{r}")).exists();
    if let Some(m) = &req.system_map {
        let to = boot.join(format!("System.map-{r}"));
        if !distro_owns {
            written.push(to.clone());
        }
        copy_into(&upload(m)?, &to)?;
    }
    if let Some(c) = &req.config {
        let to = boot.join(format!("config-{r}"));
        if !distro_owns {
            written.push(to.clone());
        }
        copy_into(&upload(c)?, &to)?;
    }
    if let Some(tar_name) = &req.modules {
        let tar = upload(tar_name)?;
        modules_tar::check(r, &tar)?;
        if !distro_owns {
            written.push(layout.modules_dir.join(r));
        }
        install_modules(r, &tar, layout, log).await?;
    }
    let made = make_initramfs(r, layout, log).await?;
    Ok((kernel, made))
}

async fn install_modules(r: &str, tar: &Path, layout: &Layout, log: &mut String) -> Result<(), StepError> {
    let mods = layout.modules_dir.clone();
    let (release, archive) = (r.to_string(), tar.to_path_buf());
    let dest = tokio::task::spawn_blocking(move || super::modules_tar::unpack(&release, &archive, &mods))
        .await
        .map_err(|e| err(ErrorKind::Io, format!("unpacking the modules: {e}")))??;
    log.push_str(&format!("modules unpacked into {}\n", dest.display()));
    let mods = &layout.modules_dir;
    // depmod's base is the folder that holds lib/modules.
    if let Some(depmod) = find_program(&["depmod"]) {
        let mut argv = vec![depmod.display().to_string()];
        if mods.ends_with("lib/modules") && mods != Path::new("/lib/modules") {
            if let Some(base) = mods.parent().and_then(|p| p.parent()) {
                argv.extend(["-b".to_string(), base.display().to_string()]);
            }
        }
        argv.extend(["-a".to_string(), r.to_string()]);
        if mods.ends_with("lib/modules") {
            run(argv, 300, log).await?;
        } else {
            log.push_str("depmod skipped: the modules folder is not a lib/modules tree\n");
        }
    }
    Ok(())
}

/// An initramfs by the distribution's tool: update-initramfs (Debian, Ubuntu) or dracut
/// (Fedora, RHEL, SUSE). Without either, the kernel boots without one.
async fn make_initramfs(
    r: &str,
    layout: &Layout,
    log: &mut String,
) -> Result<(Option<PathBuf>, Option<String>), StepError> {
    let home = layout.kernel_dir(r);
    let out = home.join("initrd.img");
    let system_modules = layout.modules_dir == Path::new("/lib/modules");
    if !system_modules {
        log.push_str("no initramfs: the modules are not in /lib/modules, where the tools look\n");
        return Ok((None, None));
    }
    if !layout.modules_dir.join(r).is_dir() {
        log.push_str(&format!(
            "no initramfs: {r} has no modules installed, so it boots on what is built in\n"
        ));
        return Ok((None, None));
    }
    if let Some(tool) = find_program(&["update-initramfs"]) {
        // It writes initrd.img-RELEASE into the folder given with -b.
        let made = home.join(format!("initrd.img-{r}"));
        let _ = std::fs::remove_file(&made);
        run(
            vec![
                tool.display().to_string(),
                "-c".into(),
                "-k".into(),
                r.to_string(),
                "-b".into(),
                home.display().to_string(),
            ],
            1200,
            log,
        )
        .await?;
        std::fs::rename(&made, &out).map_err(|e| err(ErrorKind::Io, format!("{}: {e}", made.display())))?;
        return Ok((Some(out), Some("update-initramfs".into())));
    }
    if let Some(tool) = find_program(&["dracut"]) {
        run(
            vec![
                tool.display().to_string(),
                "--force".into(),
                "--kver".into(),
                r.to_string(),
                out.display().to_string(),
            ],
            1200,
            log,
        )
        .await?;
        return Ok((Some(out), Some("dracut".into())));
    }
    log.push_str("no initramfs tool (update-initramfs, dracut) on this machine: booting without an initramfs\n");
    Ok((None, None))
}

/// A kernel kreg installed, or the machine's own under /boot: (image, initramfs).
fn installed(release: &str, layout: &Layout) -> Result<(PathBuf, Option<PathBuf>), StepError> {
    check_release(release)?;
    let home = layout.kernel_dir(release);
    let ours = home.join("vmlinuz");
    if ours.is_file() {
        let initrd = home.join("initrd.img");
        return Ok((ours, initrd.is_file().then_some(initrd)));
    }
    let distro = layout.boot_dir.join(format!("vmlinuz-{release}"));
    if distro.is_file() {
        let initrd = [format!("initrd.img-{release}"), format!("initramfs-{release}.img")]
            .into_iter()
            .map(|n| layout.boot_dir.join(n))
            .find(|p| p.is_file());
        return Ok((distro, initrd));
    }
    Err(err(
        ErrorKind::NotFound,
        format!(
            "neither {} nor {} exists: the kernel is not installed",
            ours.display(),
            distro.display()
        ),
    ))
}

/// Command lines end up in GRUB's script: only characters that mean nothing to it.
pub fn check_cmdline(cmdline: &str) -> Result<(), StepError> {
    match cmdline
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || " ._,:=/+@%-~".contains(*c)))
    {
        None => Ok(()),
        Some(c) => Err(err(
            ErrorKind::BadRequest,
            format!("the kernel command line holds {c:?}; kreg passes only letters, digits, spaces and ._,:=/+@%-~"),
        )),
    }
}

pub async fn kexec_installed(release: &str, cmdline: &str, layout: &Layout) -> Result<StepOutput, StepError> {
    let (kernel, initrd) = installed(release, layout)?;
    super::kexec::load_files(&kernel, initrd.as_deref(), cmdline).await
}

/// Reboots after the answer went out: through systemd where it runs (services stop
/// cleanly), else sync and reboot(2).
pub fn reboot_now() {
    if Path::new("/run/systemd/system").is_dir() {
        if let Some(systemctl) = find_program(&["systemctl"]) {
            let status = std::process::Command::new(systemctl).arg("reboot").status();
            if matches!(status, Ok(s) if s.success()) {
                return;
            }
            tracing::warn!("systemctl reboot failed; rebooting directly");
        }
    }
    // SAFETY: sync and reboot take no pointers.
    unsafe {
        libc::sync();
        let rc = libc::reboot(libc::LINUX_REBOOT_CMD_RESTART);
        tracing::error!(rc, error = %std::io::Error::last_os_error(), "reboot failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_plain_names() {
        assert!(check_release("6.1.0-27-amd64").is_ok());
        assert!(check_release("6.12.117+deb12-amd64").is_ok());
        for bad in ["", "..", "../etc", "a/b", "6.1 x", ".hidden", "-v", "--help", "~x"] {
            assert!(check_release(bad).is_err(), "{bad}");
        }
    }
}
