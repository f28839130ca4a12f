//! `/runs/{id}/bundle`: the run's bundle, as `kreg export` writes it (`view::bundle`),
//! made into a file of its own for each request and sent from there a piece at a time.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncReadExt;

use super::{id_of, AppState, PageError};
use crate::view::{self, ViewError};

/// Each request's own folder (two downloads at once do not share one).
static NEXT: AtomicU64 = AtomicU64::new(0);

fn io(e: std::io::Error) -> ViewError {
    ViewError::Other(anyhow::anyhow!("the bundle's file: {e}"))
}

pub async fn download(State(st): State<AppState>, Path(id): Path<String>) -> Result<Response, PageError> {
    let run = id_of("run", &id)?;
    let dir = crate::config::temp_dir().join(format!(
        "kreg-bundle-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let made = made(&st, run, &dir).await;
    // Open, the file is read to its end after its folder is gone.
    let _ = std::fs::remove_dir_all(&dir);
    let file = made?;
    let len = file.metadata().map_err(io)?.len();
    let body = futures_util::stream::try_unfold(tokio::fs::File::from_std(file), |mut f| async move {
        let mut buf = vec![0; 256 << 10];
        let n = f.read(&mut buf).await?;
        if n == 0 {
            return Ok::<_, std::io::Error>(None);
        }
        buf.truncate(n);
        Ok(Some((Bytes::from(buf), f)))
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-tar".to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"run-{run}.tar\""),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

/// The bundle written into `dir`, opened for reading.
async fn made(st: &AppState, run: i64, dir: &std::path::Path) -> Result<std::fs::File, ViewError> {
    std::fs::create_dir_all(dir).map_err(io)?;
    let path = dir.join("bundle.tar");
    let file = std::fs::File::create(&path).map_err(io)?;
    view::bundle::write(&st.db, run, &dir.join("blobs"), file).await?;
    std::fs::File::open(&path).map_err(io)
}
