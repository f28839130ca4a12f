//! What the steps share: their error, the names an upload may take in the data folder (and
//! the agent's own files no upload may name), reading an uploaded file, and owners' names.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::wire::{ErrorKind, StepError};

/// A step's error: its kind and what happened.
pub(crate) fn err(kind: ErrorKind, message: impl Into<String>) -> StepError {
    StepError {
        kind,
        message: message.into(),
    }
}

/// The agent's own files in its data folder, which no upload may name (or replace): the
/// fence's epoch, its temporary, the TLS identity's folder and the agent's id (with its
/// temporary).
pub const RESERVED: &[&str] = &["epoch", "epoch.tmp", "tls", "agent-id", "agent-id.tmp"];

/// Where an uploaded file named `name` lives. Names are plain: letters, digits, `.`, `_`,
/// `-`, `+`, starting with a letter or digit, and none of [`RESERVED`].
pub fn upload_path(dir: &Path, name: &str) -> Result<PathBuf, StepError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'));
    if !ok {
        return Err(err(
            ErrorKind::BadRequest,
            format!("bad file name {name:?}: use letters, digits, '.', '_', '-' and '+' only"),
        ));
    }
    if RESERVED.contains(&name) {
        return Err(err(
            ErrorKind::Forbidden,
            format!("{name:?} is the agent's own file in its data folder (its fence, TLS identity or id): upload under another name"),
        ));
    }
    Ok(dir.join(name))
}

/// Opens an uploaded file for reading: a regular file, never through a link.
pub fn open_regular(path: &Path) -> Result<std::fs::File, StepError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                err(ErrorKind::Forbidden, format!("{} is a link", path.display()))
            } else {
                err(ErrorKind::NotFound, format!("{}: {e}", path.display()))
            }
        })?;
    let meta = file
        .metadata()
        .map_err(|e| err(ErrorKind::Io, format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(err(
            ErrorKind::Forbidden,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

/// An owner is a plain name: it becomes an environment value and is matched exactly.
pub fn check_owner(owner: &str) -> Result<(), StepError> {
    let ok = !owner.is_empty()
        && owner.len() <= 128
        && owner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    if ok {
        Ok(())
    } else {
        Err(err(
            ErrorKind::BadRequest,
            format!("bad owner {owner:?}: use letters, digits, '-', '_', '.', '+'"),
        ))
    }
}
