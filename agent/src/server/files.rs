//! `PUT` and `GET /v1/files/{name}`: uploads stream to a temp file of their own (created
//! exclusively, never through a link, removed if anything goes wrong) and are renamed into
//! place; downloads serve regular files only.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;

use super::{declared_length, reply, reply_error, AppState};
use crate::steps;
use crate::wire::{ErrorKind, StepError, Uploaded};

/// The largest upload the agent takes.
pub const MAX_UPLOAD: u64 = 4 << 30;

/// Temp files start with a dot, which no uploaded name may: they can never be asked for,
/// served, or mistaken for a finished upload.
const TEMP_PREFIX: &str = ".upload-";
const TEMP_SUFFIX: &str = ".partial";

fn io_err(what: &str, e: std::io::Error) -> StepError {
    steps::common::err(ErrorKind::Io, format!("{what}: {e}"))
}

/// Removes temp files that an earlier agent left behind (it was killed mid-upload).
pub fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A temp file created exclusively (`O_EXCL | O_NOFOLLOW`, mode 0600), removed when
/// dropped unless it was renamed into place.
struct Temp {
    path: PathBuf,
    kept: bool,
}

impl Temp {
    fn create(dir: &Path) -> Result<(Temp, std::fs::File), StepError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        for _ in 0..16 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(
                "{TEMP_PREFIX}{}-{n}-{nanos:x}{TEMP_SUFFIX}",
                std::process::id()
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
            {
                Ok(f) => return Ok((Temp { path, kept: false }, f)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err("creating a temp file", e)),
            }
        }
        Err(steps::common::err(
            ErrorKind::Io,
            "no free temp file name after 16 tries",
        ))
    }

    fn rename_to(mut self, to: &Path) -> Result<(), StepError> {
        std::fs::rename(&self.path, to).map_err(|e| io_err(&format!("renaming into {}", to.display()), e))?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

pub(super) async fn upload(
    State(state): State<Arc<AppState>>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(n) = declared_length(&headers) {
        if n > MAX_UPLOAD {
            return reply_error(
                ErrorKind::TooLarge,
                format!(
                    "{name}: {n} bytes declared, more than the {} GiB an upload may have",
                    MAX_UPLOAD >> 30
                ),
            );
        }
    }
    let idle = state.limits.body_idle_timeout;
    reply(save_upload(&state.config.data_dir, &name, body, idle).await)
}

/// Streams the body to a temp file, frame by frame (a kernel's modules are hundreds of MB,
/// and the agent runs on the machine being measured), then renames it into place.
async fn save_upload(dir: &Path, name: &str, mut body: Body, idle: std::time::Duration) -> Result<Uploaded, StepError> {
    use tokio::io::AsyncWriteExt;
    let path = steps::common::upload_path(dir, name)?;
    let (temp, file) = Temp::create(dir)?;
    let mut file = tokio::fs::File::from_std(file);
    let mut bytes = 0u64;
    while let Some(data) = super::next_data(&mut body, idle, name).await? {
        bytes += data.len() as u64;
        if bytes > MAX_UPLOAD {
            return Err(steps::common::err(
                ErrorKind::TooLarge,
                format!("{name} is larger than {} GiB", MAX_UPLOAD >> 30),
            ));
        }
        file.write_all(&data)
            .await
            .map_err(|e| io_err(&format!("writing {name}"), e))?;
    }
    file.sync_all()
        .await
        .map_err(|e| io_err(&format!("writing {name}"), e))?;
    drop(file);
    temp.rename_to(&path)?;
    let abs = std::fs::canonicalize(&path).map_err(|e| io_err(name, e))?;
    Ok(Uploaded {
        name: name.to_string(),
        bytes,
        path: abs.display().to_string(),
    })
}

/// A file of the data folder (a build's output packed there), streamed.
pub(super) async fn download(State(state): State<Arc<AppState>>, UrlPath(name): UrlPath<String>) -> Response {
    let opened =
        steps::common::upload_path(&state.config.data_dir, &name).and_then(|p| steps::common::open_regular(&p));
    let file = match opened {
        Ok(f) => tokio::fs::File::from_std(f),
        Err(e) => return reply_error(e.kind, e.message),
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from_stream(chunks(file)))
        .unwrap_or_else(|e| reply_error(ErrorKind::Io, e.to_string()))
}

/// A file as a stream of chunks, without another crate: each read is one chunk.
fn chunks(file: tokio::fs::File) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> {
    use tokio::io::AsyncReadExt;
    futures_util::stream::unfold(Some(file), |state| async move {
        let mut file = state?;
        let mut buf = vec![0u8; 1 << 20];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}
