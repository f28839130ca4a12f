//! `grub_reboot`: kreg's kernels get a submenu of their own at the end of GRUB's menu
//! (written by `/etc/grub.d/45_kreg`), and `grub-reboot` makes one entry the next boot
//! only. GRUB_DEFAULT is never touched, so the boot after that one is the machine's own.

use std::path::{Path, PathBuf};

use super::install::{check_cmdline, check_release, find_program, run, Layout};
use crate::wire::{ErrorKind, ExecRequest, StepError, StepOutput};

fn err(kind: ErrorKind, message: impl Into<String>) -> StepError {
    super::common::err(kind, message)
}

/// GRUB's programs under Debian's names or Fedora's.
fn grub_program(debian: &str, fedora: &str) -> Option<PathBuf> {
    find_program(&[debian, fedora])
}

/// `/etc/grub.d/45_kreg`: a submenu with one entry per kernel under /boot/kreg, after
/// every entry of the distribution's, so that no default by position ever points at one.
const GRUB_SCRIPT: &str = r#"#!/bin/sh
# Written by kreg-agent: entries for the kernels kreg installed under /boot/kreg. They sit
# at the end of the menu and are booted once each, with grub-reboot; the default entry
# stays the machine's own.
set -e
prefix=/usr
exec_prefix=/usr
datarootdir=/usr/share
. "$datarootdir/grub/grub-mkconfig_lib"
found=
for dir in /boot/kreg/*; do
  [ -f "$dir/vmlinuz" ] || continue
  rel=${dir##*/}
  if [ -z "$found" ]; then
    echo "submenu 'kreg kernels' \$menuentry_id_option 'kreg' {"
    found=1
  fi
  device=$(${grub_probe} --target=device "$dir")
  path=$(make_system_path_relative_to_its_root "$dir")
  echo "	menuentry 'kreg $rel' \$menuentry_id_option 'kreg-$rel' {"
  prepare_grub_to_access_device "$device" | sed 's/^/		/'
  echo "		linux	$path/vmlinuz $(cat "$dir/cmdline" 2>/dev/null || true)"
  if [ -f "$dir/initrd.img" ]; then
    echo "		initrd	$path/initrd.img"
  fi
  echo "	}"
done
if [ -n "$found" ]; then
  echo "}"
fi
"#;

fn install_grub_script() -> Result<(), StepError> {
    let path = Path::new("/etc/grub.d/45_kreg");
    if std::fs::read_to_string(path).ok().as_deref() == Some(GRUB_SCRIPT) {
        return Ok(());
    }
    let tmp = path.with_extension("kreg-partial");
    let io = |e: std::io::Error| err(ErrorKind::Io, format!("{}: {e}", path.display()));
    std::fs::write(&tmp, GRUB_SCRIPT).map_err(io)?;
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o755)).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

pub async fn grub_reboot(release: &str, cmdline: &str, layout: &Layout) -> Result<StepOutput, StepError> {
    check_release(release)?;
    check_cmdline(cmdline)?;
    let home = layout.kernel_dir(release);
    if !home.join("vmlinuz").is_file() {
        return Err(err(
            ErrorKind::NotFound,
            format!("{}/vmlinuz does not exist: the kernel is not installed", home.display()),
        ));
    }
    let has_grub = find_program(&["update-grub", "grub-mkconfig", "grub2-mkconfig"]).is_some();
    if !has_grub {
        return Err(err(
            ErrorKind::Spawn,
            "GRUB is not installed here (no update-grub or grub-mkconfig); boot by kexec instead",
        ));
    }
    std::fs::write(home.join("cmdline"), cmdline)
        .map_err(|e| err(ErrorKind::Io, format!("{}/cmdline: {e}", home.display())))?;
    install_grub_script()?;
    let mut log = String::new();
    let cfg = if let Some(update) = find_program(&["update-grub"]) {
        run(vec![update.display().to_string()], 300, &mut log).await?;
        layout.boot_dir.join("grub/grub.cfg")
    } else if let Some(mk) = grub_program("grub-mkconfig", "grub2-mkconfig") {
        let dir = if mk.ends_with("grub2-mkconfig") {
            "grub2"
        } else {
            "grub"
        };
        let cfg = layout.boot_dir.join(dir).join("grub.cfg");
        run(
            vec![mk.display().to_string(), "-o".into(), cfg.display().to_string()],
            300,
            &mut log,
        )
        .await?;
        cfg
    } else {
        unreachable!("checked above")
    };
    let text = std::fs::read_to_string(&cfg).map_err(|e| err(ErrorKind::Io, format!("{}: {e}", cfg.display())))?;
    let entry = grub_entry(&text, release).ok_or_else(|| {
        err(
            ErrorKind::NotFound,
            format!(
                "{} has no menu entry for {release} after regenerating it",
                cfg.display()
            ),
        )
    })?;
    let reboot_prog = grub_program("grub-reboot", "grub2-reboot")
        .ok_or_else(|| err(ErrorKind::Spawn, "grub-reboot is not installed"))?;
    run(vec![reboot_prog.display().to_string(), entry.clone()], 60, &mut log).await?;
    // Read back what GRUB will see.
    let editenv = grub_program("grub-editenv", "grub2-editenv")
        .ok_or_else(|| err(ErrorKind::Spawn, "grub-editenv is not installed"))?;
    let env = super::exec::run(ExecRequest {
        argv: vec![editenv.display().to_string(), "list".into()],
        timeout_secs: 30,
        ..Default::default()
    })
    .await?;
    let want = format!("next_entry={entry}");
    if !env.stdout.lines().any(|l| l.trim() == want) {
        return Err(err(
            ErrorKind::Io,
            format!("grub-reboot did not take: grubenv shows {:?}", env.stdout.trim()),
        ));
    }
    Ok(StepOutput::Rebooting { entry: Some(entry) })
}

/// The menu entry that boots `release` (not its recovery entry), as `grub-reboot` takes
/// it: the entry's id, prefixed by its submenu's id and `>` when it sits in one.
pub fn grub_entry(cfg: &str, release: &str) -> Option<String> {
    // Open blocks: Some(id) for a submenu or menuentry, None for any other `{`.
    let mut stack: Vec<(bool, Option<String>, String)> = Vec::new(); // (is_menuentry, id, title)
    let image_suffix = format!("/kreg/{release}/vmlinuz");
    for raw in cfg.lines() {
        let line = raw.trim();
        let opens = line.ends_with('{');
        if opens {
            let word = line.split_whitespace().next().unwrap_or("");
            if word == "menuentry" || word == "submenu" {
                let title = first_quoted(line).unwrap_or_default();
                let id = line
                    .split("$menuentry_id_option")
                    .nth(1)
                    .and_then(first_quoted)
                    .or_else(|| (!title.is_empty()).then(|| title.clone()));
                stack.push((word == "menuentry", id, title));
            } else {
                stack.push((false, None, String::new()));
            }
            continue;
        }
        if line == "}" {
            stack.pop();
            continue;
        }
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("");
        if !matches!(cmd, "linux" | "linux16" | "linuxefi") {
            continue;
        }
        let image = words.next().unwrap_or("");
        if !image.ends_with(&image_suffix) {
            continue;
        }
        let Some(pos) = stack.iter().rposition(|(is_entry, _, _)| *is_entry) else {
            continue;
        };
        let (_, id, title) = &stack[pos];
        if title.contains("recovery mode") || line.split_whitespace().any(|w| w == "single") {
            continue;
        }
        let mut path: Vec<String> = stack[..pos].iter().filter_map(|(_, id, _)| id.clone()).collect();
        path.push(id.clone()?);
        return Some(path.join(">"));
    }
    None
}

fn first_quoted(s: &str) -> Option<String> {
    let start = s.find(['\'', '"'])?;
    let q = s[start..].chars().next()?;
    let rest = &s[start + 1..];
    let end = rest.find(q)?;
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_CFG: &str = r#"
function load_video {
  insmod all_video
}
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-1234' {
	load_video
	insmod ext2
	echo	'Loading Linux 6.1.0-27-amd64 ...'
	linux	/boot/vmlinuz-6.1.0-27-amd64 root=UUID=1234 ro  console=ttyS0
	initrd	/boot/initrd.img-6.1.0-27-amd64
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-1234' {
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-27-amd64 (recovery mode)' --class debian $menuentry_id_option 'gnulinux-6.1.0-27-amd64-recovery-1234' {
		linux	/boot/vmlinuz-6.1.0-27-amd64 root=UUID=1234 ro single
	}
}
### BEGIN /etc/grub.d/45_kreg ###
submenu 'kreg kernels' $menuentry_id_option 'kreg' {
	menuentry 'kreg 6.12.9-kreg-ab12' $menuentry_id_option 'kreg-6.12.9-kreg-ab12' {
		insmod part_msdos
		if [ x$feature_platform_search_hint = xy ]; then
		  search --no-floppy --fs-uuid --set=root  1234
		fi
		linux	/boot/kreg/6.12.9-kreg-ab12/vmlinuz root=UUID=1234 ro console=ttyS0
		initrd	/boot/kreg/6.12.9-kreg-ab12/initrd.img
	}
	menuentry 'kreg 6.12.9-kreg-ab1' $menuentry_id_option 'kreg-6.12.9-kreg-ab1' {
		linux	/kreg/6.12.9-kreg-ab1/vmlinuz root=UUID=1234 ro
	}
}
### END /etc/grub.d/45_kreg ###
"#;

    #[test]
    fn finds_kregs_entry_in_its_submenu() {
        assert_eq!(
            grub_entry(DEBIAN_CFG, "6.12.9-kreg-ab12").as_deref(),
            Some("kreg>kreg-6.12.9-kreg-ab12")
        );
        // A separate /boot partition: the GRUB path has no /boot.
        assert_eq!(
            grub_entry(DEBIAN_CFG, "6.12.9-kreg-ab1").as_deref(),
            Some("kreg>kreg-6.12.9-kreg-ab1")
        );
        // The distribution's kernels are not kreg's to boot this way.
        assert_eq!(grub_entry(DEBIAN_CFG, "6.1.0-27-amd64"), None);
        assert_eq!(grub_entry(DEBIAN_CFG, "6.12.9"), None);
    }

    #[test]
    fn command_lines_that_grub_would_interpret_are_refused() {
        assert!(check_cmdline("root=UUID=ab-12 ro console=ttyS0,115200 panic=5 init=/sbin/x").is_ok());
        for bad in ["a;b", "x$y", "a\nb", "'q'", "{", "a\\b", "`id`"] {
            assert!(check_cmdline(bad).is_err(), "{bad:?}");
        }
    }
}
