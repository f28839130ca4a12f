//! The agent's HTTP API. `GET /v1/version` answers anyone; every other route needs
//! `Authorization: Bearer TOKEN`, compared in constant time and never logged.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

use crate::steps;
use crate::wire::{Envelope, ErrorKind, Step, StepError, StepOutput, Uploaded, VersionInfo};

/// A bearer token. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Takes the first line of a token file's text; an empty token is refused.
    pub fn from_file_text(text: &str) -> Result<Token, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("the token file is empty".into());
        }
        if t.len() < 16 {
            return Err("the token is shorter than 16 characters".into());
        }
        Ok(Token(t.to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(presented).into()
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}

/// Everything the server needs; built by `main` from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    pub token: Token,
    /// Where uploaded files go.
    pub data_dir: PathBuf,
    /// Where kernels get installed.
    pub layout: steps::install::Layout,
}

struct AppState {
    config: Config,
    procs: steps::process::Table,
}

/// Serves the API on `listener` until `shutdown` completes.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tokio::fs::create_dir_all(&config.data_dir).await?;
    let state = Arc::new(AppState {
        config,
        procs: steps::process::Table::default(),
    });
    let authed = Router::new()
        .route("/v1/step", post(step))
        .route("/v1/files/{name}", put(upload).get(download))
        // Steps are read whole (exec stdin may carry SQL); uploads stream and check their own size.
        .layer(DefaultBodyLimit::max(256 << 20))
        .layer(middleware::from_fn_with_state(state.clone(), require_token));
    let app = Router::new()
        .route("/v1/version", get(version))
        .merge(authed)
        .with_state(state);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

async fn version() -> Json<VersionInfo> {
    Json(VersionInfo {
        protocol: crate::PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

async fn require_token(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
    match presented {
        Some(t) if state.config.token.matches(t) => next.run(req).await,
        Some(_) => {
            tracing::warn!(path = %req.uri().path(), "request with a wrong token refused");
            reply_error(ErrorKind::Unauthorized, "wrong bearer token")
        }
        None => {
            tracing::warn!(path = %req.uri().path(), "request without a token refused");
            reply_error(ErrorKind::Unauthorized, "missing `Authorization: Bearer` header")
        }
    }
}

fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::Io | ErrorKind::Spawn | ErrorKind::Kernel => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn reply_error(kind: ErrorKind, message: impl Into<String>) -> Response {
    (status_of(kind), Json(Envelope::<()>::error(kind, message))).into_response()
}

fn reply<T: serde::Serialize>(result: Result<T, StepError>) -> Response {
    match result {
        Ok(v) => Json(Envelope::ok(v)).into_response(),
        Err(e) => {
            if status_of(e.kind).is_server_error() {
                tracing::error!(kind = ?e.kind, message = %e.message, "step failed");
            } else {
                tracing::warn!(kind = ?e.kind, message = %e.message, "step refused");
            }
            (status_of(e.kind), Json(Envelope::<T>::error(e.kind, e.message))).into_response()
        }
    }
}

async fn step(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let step: Step = match serde_json::from_slice(&body) {
        Ok(s) => s,
        Err(e) => return reply_error(ErrorKind::BadRequest, format!("malformed step: {e}")),
    };
    tracing::info!(step = step.name(), "step");
    let reboots = step.reboots();
    let result = steps::run(step, &state.config.data_dir, &state.config.layout, &state.procs).await;
    if reboots {
        match &result {
            // Answer first, then reboot: into the loaded kernel, or through the firmware.
            Ok(StepOutput::KexecStarted { .. }) => {
                tokio::spawn(async {
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                    steps::kexec::reboot_into_loaded();
                });
            }
            Ok(StepOutput::Rebooting { .. }) => {
                tokio::spawn(async {
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                    steps::install::reboot_now();
                });
            }
            _ => {}
        }
    }
    reply::<StepOutput>(result)
}

async fn upload(State(state): State<Arc<AppState>>, Path(name): Path<String>, body: Body) -> Response {
    reply(save_upload(&state.config.data_dir, &name, body).await)
}

/// Streams the body to a file, frame by frame: a kernel's modules are hundreds of MB, and
/// the agent runs on the machine being measured, often with little memory to spare.
async fn save_upload(dir: &std::path::Path, name: &str, mut body: Body) -> Result<Uploaded, StepError> {
    use http_body_util::BodyExt;
    use tokio::io::AsyncWriteExt;
    let path = steps::upload_path(dir, name)?;
    let tmp = path.with_extension("partial");
    let io = |e: std::io::Error| StepError {
        kind: ErrorKind::Io,
        message: format!("writing {name}: {e}"),
    };
    let mut file = tokio::fs::File::create(&tmp).await.map_err(io)?;
    let mut bytes = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| StepError {
            kind: ErrorKind::Io,
            message: format!("receiving {name}: {e}"),
        })?;
        if let Ok(data) = frame.into_data() {
            bytes += data.len() as u64;
            if bytes > MAX_UPLOAD {
                drop(file);
                let _ = tokio::fs::remove_file(&tmp).await;
                return Err(StepError {
                    kind: ErrorKind::BadRequest,
                    message: format!("{name} is larger than {} GiB", MAX_UPLOAD >> 30),
                });
            }
            file.write_all(&data).await.map_err(io)?;
        }
    }
    file.sync_all().await.map_err(io)?;
    drop(file);
    tokio::fs::rename(&tmp, &path).await.map_err(io)?;
    let abs = tokio::fs::canonicalize(&path).await.map_err(io)?;
    Ok(Uploaded {
        name: name.to_string(),
        bytes,
        path: abs.display().to_string(),
    })
}

/// A file of the data folder (a build's output packed there), streamed.
async fn download(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    let path = match steps::upload_path(&state.config.data_dir, &name) {
        Ok(p) => p,
        Err(e) => return reply_error(e.kind, e.message),
    };
    match tokio::fs::File::open(&path).await {
        Ok(file) => {
            let stream = tokio_util_stream(file);
            Response::builder()
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .body(Body::from_stream(stream))
                .unwrap_or_else(|e| reply_error(ErrorKind::Io, e.to_string()))
        }
        Err(e) => reply_error(ErrorKind::NotFound, format!("{name}: {e}")),
    }
}

/// A file as a stream of chunks, without another crate: each read is one chunk.
fn tokio_util_stream(file: tokio::fs::File) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> {
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

/// The largest upload the agent takes.
const MAX_UPLOAD: u64 = 4 << 30;
