//! The agent's HTTP API. `GET /v1/version` answers anyone; every other route needs
//! `Authorization: Bearer TOKEN`, compared in constant time and never logged.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
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
        .route("/v1/files/{name}", put(upload))
        .layer(DefaultBodyLimit::max(1 << 30))
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
    let is_kexec = matches!(step, Step::Kexec(_));
    let result = steps::run(step, &state.config.data_dir, &state.procs).await;
    if is_kexec && result.is_ok() {
        // Answer first, then reboot into the loaded kernel.
        tokio::spawn(async {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            steps::kexec::reboot_into_loaded();
        });
    }
    reply::<StepOutput>(result)
}

async fn upload(State(state): State<Arc<AppState>>, Path(name): Path<String>, body: Bytes) -> Response {
    reply(save_upload(&state.config.data_dir, &name, &body).await)
}

async fn save_upload(dir: &std::path::Path, name: &str, body: &[u8]) -> Result<Uploaded, StepError> {
    let path = steps::upload_path(dir, name)?;
    let tmp = path.with_extension("partial");
    let io = |e: std::io::Error| StepError {
        kind: ErrorKind::Io,
        message: format!("writing {name}: {e}"),
    };
    tokio::fs::write(&tmp, body).await.map_err(io)?;
    tokio::fs::rename(&tmp, &path).await.map_err(io)?;
    let abs = tokio::fs::canonicalize(&path).await.map_err(io)?;
    Ok(Uploaded {
        name: name.to_string(),
        bytes: body.len() as u64,
        path: abs.display().to_string(),
    })
}
