//! The agent's HTTP API. `GET /v1/version` answers anyone; every other route needs
//! `Authorization: Bearer TOKEN` (the scheme in any case), compared in constant time and
//! never logged. [`listen`] holds the accept loop and its limits, [`files`] the uploads.

mod fence;
mod files;
pub use kreg_protocol::listen;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use tokio::net::TcpListener;

pub use files::MAX_UPLOAD;
pub use listen::Limits;

use crate::steps;
pub use crate::wire::Token;
use crate::wire::{Envelope, ErrorKind, Step, StepError, StepOutput, VersionInfo};

/// Everything the server needs; built by `main` from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    pub token: Token,
    /// Where uploaded files go.
    pub data_dir: PathBuf,
    /// Where kernels get installed.
    pub layout: steps::install::Layout,
    pub limits: Limits,
    /// Serve TLS with this acceptor (see [`crate::tls`]) instead of plain HTTP.
    pub tls: Option<kreg_protocol::listen::Acceptor>,
}

struct AppState {
    config: Config,
    limits: Limits,
    procs: steps::process::Table,
    /// Bytes of step bodies held in memory at once, in KiB.
    body_budget: tokio::sync::Semaphore,
    /// The highest lease epoch seen (see `fence`).
    fence: fence::Fence,
}

/// Serves the API on `listener` until `shutdown` completes.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tokio::fs::create_dir_all(&config.data_dir).await?;
    files::remove_stale_temps(&config.data_dir);
    let fence = fence::Fence::load(&config.data_dir).map_err(std::io::Error::other)?;
    let limits = config.limits.clone();
    let tls = config.tls.clone();
    let budget_kib = (limits.max_step_body * 4 / 1024).max(64);
    let state = Arc::new(AppState {
        limits: limits.clone(),
        config,
        procs: steps::process::Table::default(),
        body_budget: tokio::sync::Semaphore::new(budget_kib),
        fence,
    });
    let authed = Router::new()
        .route("/v1/step", post(step))
        .route("/v1/files/{name}", put(files::upload).get(files::download))
        .layer(middleware::from_fn_with_state(state.clone(), fence::require_epoch))
        .layer(middleware::from_fn_with_state(state.clone(), require_token));
    let app = Router::new()
        .route("/v1/version", get(version))
        .merge(authed)
        .with_state(state);
    listen::serve(listener, app, limits, tls, shutdown).await
}

async fn version() -> Json<VersionInfo> {
    Json(VersionInfo {
        protocol: crate::PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// The token of an `Authorization` header, whatever the case of its scheme (RFC 9110).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at(value.iter().position(|b| *b == b' ')?);
    scheme.eq_ignore_ascii_case(b"bearer").then(|| rest.trim_ascii())
}

async fn require_token(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| bearer(v.as_bytes()));
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

/// A request's declared Content-Length.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::Timeout => StatusCode::REQUEST_TIMEOUT,
        ErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Fenced => StatusCode::CONFLICT,
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

/// Reads a step's body within the limits: its size (refused up front when declared), the
/// pause between its pieces, and the memory all step bodies may hold at once. A body is
/// counted twice: the bytes and the step parsed from them live at once (an exec's stdin,
/// the largest part of a large step, is then handed on, not copied). The permit is held
/// until the step has run.
async fn read_step_body<'a>(
    state: &'a AppState,
    headers: &HeaderMap,
    mut body: Body,
) -> Result<(Vec<u8>, tokio::sync::SemaphorePermit<'a>), StepError> {
    let max = state.limits.max_step_body;
    let too_large = |n: u64| {
        steps::common::err(
            ErrorKind::TooLarge,
            format!("a step body of {n} bytes is larger than the {max} bytes allowed"),
        )
    };
    let declared = declared_length(headers);
    if let Some(n) = declared.filter(|n| *n > max as u64) {
        return Err(too_large(n));
    }
    // Reserve what is declared, or the most a body may be, twice.
    let kib = (2 * declared.unwrap_or(max as u64) as usize).div_ceil(1024).max(1) as u32;
    let idle = state.limits.body_idle_timeout;
    let permit = tokio::time::timeout(idle, state.body_budget.acquire_many(kib))
        .await
        .map_err(|_| steps::common::err(ErrorKind::Busy, "too many large steps in progress; try again"))?
        .map_err(|_| steps::common::err(ErrorKind::Busy, "the agent is shutting down"))?;
    let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(max as u64) as usize);
    while let Some(data) = next_data(&mut body, idle, "the step").await? {
        if buf.len() + data.len() > max {
            return Err(too_large((buf.len() + data.len()) as u64));
        }
        buf.extend_from_slice(&data);
    }
    Ok((buf, permit))
}

/// The next piece of a request body, `None` at its end; an error when nothing came for
/// `idle` or the connection broke. `what` names the body in messages.
async fn next_data(body: &mut Body, idle: std::time::Duration, what: &str) -> Result<Option<Bytes>, StepError> {
    use http_body_util::BodyExt;
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => {
                return Err(steps::common::err(
                    ErrorKind::Timeout,
                    format!("{what}: nothing received for {} s", idle.as_secs()),
                ))
            }
            Ok(None) => return Ok(None),
            Ok(Some(f)) => f.map_err(|e| steps::common::err(ErrorKind::Io, format!("receiving {what}: {e}")))?,
        };
        // Trailers carry no data: read on.
        if let Ok(data) = frame.into_data() {
            return Ok(Some(data));
        }
    }
}

async fn step(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    let (bytes, _permit) = match read_step_body(&state, &headers, body).await {
        Ok(x) => x,
        Err(e) => return reply::<StepOutput>(Err(e)),
    };
    let step: Step = match serde_json::from_slice(&bytes) {
        Ok(s) => s,
        Err(e) => return reply_error(ErrorKind::BadRequest, format!("malformed step: {e}")),
    };
    drop(bytes);
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
