//! A kernel's modules archive (a `RELEASE/…` tree, plain or gzipped), checked member by
//! member before anything is written, then unpacked into a staging folder and renamed into
//! place. No `tar` or `gzip` program is needed on the host.
//!
//! Refused: members outside `RELEASE/`, `..` or absolute names, a `RELEASE` member that is
//! not a folder, links where depmod writes (`RELEASE/modules.*`), hard links leaving the
//! tree, devices and FIFOs. Symbolic links below `RELEASE/` (the kernel's `build` and
//! `source`) are kept; nothing is ever written through one.

use std::path::{Component, Path, PathBuf};

use tar::EntryType;

use crate::wire::{ErrorKind, StepError};

fn bad(message: String) -> StepError {
    super::common::err(ErrorKind::BadRequest, format!("the modules archive {message}"))
}

fn io(what: &Path, e: std::io::Error) -> StepError {
    super::common::err(ErrorKind::Io, format!("{}: {e}", what.display()))
}

/// A member's name as plain parts (a leading `./` dropped), or `None` when it has `..`,
/// a root, or nothing.
fn parts(path: &Path) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir if out.is_empty() => {}
            Component::Normal(p) => out.push(p.to_str()?.to_string()),
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

fn check_member(release: &str, path: &Path, kind: EntryType, link: Option<&Path>) -> Result<(), StepError> {
    let shown = path.display();
    let p = parts(path).ok_or_else(|| bad(format!("holds {shown:?}: absolute, empty or with `..`")))?;
    if p[0] != release {
        return Err(bad(format!("holds {shown:?}, outside {release}/")));
    }
    let top = p.len() == 1;
    match kind {
        EntryType::Directory => Ok(()),
        _ if top => Err(bad(format!(
            "holds {shown:?} as a {kind:?}, where the folder {release}/ belongs"
        ))),
        EntryType::Regular | EntryType::Continuous => Ok(()),
        EntryType::Symlink | EntryType::Link if p.len() == 2 && p[1].starts_with("modules.") => Err(bad(format!(
            "holds {shown:?} as a link: depmod writes there, and would write through it"
        ))),
        EntryType::Symlink => Ok(()),
        EntryType::Link => {
            let target = link.and_then(parts);
            match target {
                Some(t) if t[0] == release && t.len() > 1 => Ok(()),
                _ => Err(bad(format!("holds {shown:?}, a hard link leaving {release}/"))),
            }
        }
        other => Err(bad(format!(
            "holds {shown:?}, a {other:?}: only files, folders and links belong there"
        ))),
    }
}

/// The archive's bytes, gunzipped when they start with gzip's magic number.
fn open(tar: &Path) -> Result<Box<dyn std::io::Read>, StepError> {
    use std::io::Read;
    let mut file = std::fs::File::open(tar).map_err(|e| io(tar, e))?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(|e| io(tar, e))?;
    let file = std::fs::File::open(tar).map_err(|e| io(tar, e))?;
    let reader = std::io::BufReader::new(file);
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(flate2::read::GzDecoder::new(reader))
    } else {
        Box::new(reader)
    })
}

/// Checks every member of `tar` (a path on this host); returns how many there are.
pub fn check(release: &str, tar: &Path) -> Result<usize, StepError> {
    let mut archive = tar::Archive::new(open(tar)?);
    let mut n = 0;
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("is not a tar (plain or gzipped): {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| bad(format!("is not a tar (plain or gzipped): {e}")))?;
        let path = entry
            .path()
            .map_err(|e| bad(format!("has a member whose name cannot be read: {e}")))?;
        let link = entry
            .link_name()
            .map_err(|e| bad(format!("has a link that cannot be read: {e}")))?;
        check_member(release, &path, entry.header().entry_type(), link.as_deref())?;
        n += 1;
    }
    if n == 0 {
        return Err(bad("is empty".into()));
    }
    Ok(n)
}

/// Unpacks a checked archive into `modules_dir/RELEASE`, replacing what was there.
pub fn unpack(release: &str, tar: &Path, modules_dir: &Path) -> Result<PathBuf, StepError> {
    check(release, tar)?;
    std::fs::create_dir_all(modules_dir).map_err(|e| io(modules_dir, e))?;
    let staging = modules_dir.join(format!(".kreg-unpack-{release}-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io(&staging, e))?;
    }
    std::fs::create_dir(&staging).map_err(|e| io(&staging, e))?;
    let result = unpack_into(release, tar, &staging, modules_dir);
    let _ = std::fs::remove_dir_all(&staging);
    result
}

fn unpack_into(release: &str, tar: &Path, staging: &Path, modules_dir: &Path) -> Result<PathBuf, StepError> {
    let mut archive = tar::Archive::new(open(tar)?);
    archive.set_preserve_permissions(true);
    archive.set_preserve_ownerships(false);
    archive.set_preserve_mtime(true);
    archive
        .unpack(staging)
        .map_err(|e| super::common::err(ErrorKind::Io, format!("unpacking the modules archive: {e}")))?;
    let tree = staging.join(release);
    let meta = std::fs::symlink_metadata(&tree).map_err(|e| io(&tree, e))?;
    if !meta.is_dir() {
        return Err(bad(format!("did not make {release}/ a folder")));
    }
    let dest = modules_dir.join(release);
    if std::fs::symlink_metadata(&dest).is_ok() {
        let gone = if std::fs::symlink_metadata(&dest).map(|m| m.is_dir()).unwrap_or(false) {
            std::fs::remove_dir_all(&dest)
        } else {
            std::fs::remove_file(&dest)
        };
        gone.map_err(|e| io(&dest, e))?;
    }
    std::fs::rename(&tree, &dest).map_err(|e| io(&dest, e))?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check1(path: &str, kind: EntryType, link: Option<&str>) -> Result<(), StepError> {
        check_member("6.1.0-kreg", Path::new(path), kind, link.map(Path::new))
    }

    #[test]
    fn a_gzipped_archive_is_unpacked_into_place() {
        let dir = std::env::temp_dir().join(format!("kreg-modules-tar-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        b.append_data(&mut h, "6.1.0-kreg/", std::io::empty()).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(3);
        b.append_data(&mut h, "6.1.0-kreg/kernel/a.ko", &b"abc"[..]).unwrap();
        let bytes = b.into_inner().unwrap().finish().unwrap();
        std::fs::write(dir.join("m.tar.gz"), bytes).unwrap();
        let dest = unpack("6.1.0-kreg", &dir.join("m.tar.gz"), &dir.join("lib/modules")).unwrap();
        assert_eq!(std::fs::read(dest.join("kernel/a.ko")).unwrap(), b"abc");
        std::fs::write(dir.join("junk.tar.gz"), [0x1f, 0x8b, 1, 2, 3]).unwrap();
        let e = check("6.1.0-kreg", &dir.join("junk.tar.gz")).unwrap_err();
        assert!(e.message.contains("is not a tar (plain or gzipped)"), "{e:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn members_stay_in_the_release_tree() {
        use EntryType::*;
        assert!(check1("6.1.0-kreg", Directory, None).is_ok());
        assert!(check1("./6.1.0-kreg/kernel/a.ko", Regular, None).is_ok());
        assert!(check1("6.1.0-kreg/build", Symlink, Some("/usr/src/linux")).is_ok());
        assert!(check1("6.1.0-kreg/kernel/b.ko", Link, Some("6.1.0-kreg/kernel/a.ko")).is_ok());
        for (path, kind, link) in [
            ("6.1.0-kreg", Symlink, Some("/etc")),
            ("6.1.0-kreg", Regular, None),
            ("6.1.0-kreg/modules.dep", Symlink, Some("/etc/passwd")),
            ("6.1.0-kreg/modules.alias", Link, Some("6.1.0-kreg/x")),
            ("6.1.0-kreg/../etc/x", Regular, None),
            ("/6.1.0-kreg/x", Regular, None),
            ("other/x", Regular, None),
            ("6.1.0-kreg/x", Link, Some("/etc/shadow")),
            ("6.1.0-kreg/x", Link, Some("6.1.0-kreg/../../etc/shadow")),
            ("6.1.0-kreg/dev", Char, None),
            ("6.1.0-kreg/fifo", Fifo, None),
        ] {
            assert!(check1(path, kind, link).is_err(), "{path} {kind:?}");
        }
    }
}
