//! `place_file`: copies an upload or a file of the host to an absolute destination with a
//! mode, through a temp file beside it that is renamed into place. The agent does it
//! itself: a host with only busybox (no `install`) gets its tools all the same.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::wire::{ErrorKind, FileSource, PlaceRequest, Placed, StepError};

fn bad(message: String) -> StepError {
    super::common::err(ErrorKind::BadRequest, message)
}

/// An absolute path with no `.`/`..` parts, no NUL, and a file name.
fn check_destination(to: &str) -> Result<PathBuf, StepError> {
    let p = Path::new(to);
    let plain = p.is_absolute()
        && !to.contains('\0')
        && p.file_name().is_some()
        && to.split('/').all(|part| part != "." && part != "..");
    if plain {
        Ok(p.to_path_buf())
    } else {
        Err(bad(format!(
            "destination {to:?} must be an absolute path to a file, without `.` or `..`"
        )))
    }
}

fn source(from: &FileSource, data_dir: &Path) -> Result<std::fs::File, StepError> {
    match from {
        FileSource::Upload(name) => super::common::open_regular(&super::common::upload_path(data_dir, name)?),
        FileSource::Path(p) => {
            if !Path::new(p).is_absolute() {
                return Err(bad(format!("source {p:?} must be an absolute path")));
            }
            let f = std::fs::File::open(p).map_err(|e| super::common::err(ErrorKind::NotFound, format!("{p}: {e}")))?;
            let meta = f
                .metadata()
                .map_err(|e| super::common::err(ErrorKind::Io, format!("{p}: {e}")))?;
            if !meta.is_file() {
                return Err(bad(format!("source {p} is not a regular file")));
            }
            Ok(f)
        }
    }
}

pub fn run(req: &PlaceRequest, data_dir: &Path) -> Result<Placed, StepError> {
    if req.mode > 0o7777 {
        return Err(bad(format!("mode {:o} is not a permission mode", req.mode)));
    }
    let to = check_destination(&req.to)?;
    let mut from = source(&req.from, data_dir)?;
    let dir = to.parent().expect("checked: has a file name");
    let io = |what: &Path, e: std::io::Error| super::common::err(ErrorKind::Io, format!("{}: {e}", what.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let name = to.file_name().expect("checked").to_string_lossy();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.kreg-{}-{n}.partial", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .map_err(|e| io(&temp, e))?;
    let written = std::io::copy(&mut from, &mut out)
        .and_then(|n| {
            out.flush()?;
            out.set_permissions(std::fs::Permissions::from_mode(req.mode))?;
            out.sync_all()?;
            Ok(n)
        })
        .and_then(|n| std::fs::rename(&temp, &to).map(|_| n));
    match written {
        Ok(bytes) => Ok(Placed {
            path: to.display().to_string(),
            bytes,
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(io(&to, e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_plain_absolute_paths() {
        assert!(check_destination("/usr/local/bin/schbench").is_ok());
        for bad in ["", "rel/x", "/a/../b", "/a/./b", "/", "/a/b\0c"] {
            assert!(check_destination(bad).is_err(), "{bad:?}");
        }
    }
}
