//! `kreg serve`: the dashboard. An axum server on the run database, read-only (its pool's
//! transactions are read-only, and every route is a GET), that renders pages on the server
//! with SVG charts drawn here and a little JavaScript for live updates and filters. Every
//! asset is compiled in: a browser that reaches the server needs nothing else.
//!
//! Each page has its data under `/api/v1/` as JSON, from the same function that feeds the
//! page. Live pages follow server-sent events fed by PostgreSQL LISTEN/NOTIFY (`live`).

mod alerts;
mod answer;
mod bars;
mod bisect;
mod both;
mod bundle;
pub mod cache;
mod compare;
mod fleet;
pub mod guard;
mod history;
mod html;
mod job;
mod kernels;
mod live;
mod mail;
mod params;
mod runs;
mod samples;
mod schedstat;
mod svg;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use crate::view::ViewError;

/// What every handler shares: the read-only pool and the stream of changes.
#[derive(Clone)]
pub struct AppState {
    pub db: PgPool,
    pub changes: tokio::sync::broadcast::Sender<String>,
    /// Pages made once per state of their run (see `cache`).
    pub pages: std::sync::Arc<cache::PageCache>,
    /// Reports judged once per state of their run, for every page and download of them.
    pub judged: std::sync::Arc<cache::Cache<crate::view::Loaded>>,
}

impl AppState {
    /// A state on `db`, following its changes (LISTEN) for live pages and the page cache.
    pub fn listening(db: PgPool) -> AppState {
        let (changes, _) = tokio::sync::broadcast::channel(1024);
        let pages = std::sync::Arc::new(cache::PageCache::new(cache::PAGES_KEPT));
        let judged = std::sync::Arc::new(cache::Cache::new(cache::REPORTS_KEPT));
        tokio::spawn(live::listen(db.clone(), changes.clone()));
        tokio::spawn(crate::store::pages::warm(db.clone()));
        let st = AppState {
            db,
            changes,
            pages,
            judged,
        };
        tokio::spawn(compare::prepare_finished(st.clone()));
        st
    }
}

/// A pool whose every transaction is read-only: the dashboard cannot write, whatever a
/// handler does.
pub fn read_only_pool(options: PgConnectOptions) -> PgPool {
    PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .connect_lazy_with(options.options([("default_transaction_read_only", "on")]))
}

/// The dashboard's routes on a state (the listener for live pages is started by `serve`).
pub fn router(state: AppState, guard: guard::Guard) -> Router {
    Router::new()
        .route("/", get(runs::runs_page))
        .route("/runs/{id}", get(runs::run_page))
        .route("/runs/{id}/live", get(runs::run_live))
        .route("/alerts", get(alerts::page))
        .route("/runs/{id}/report", get(compare::report_page))
        .route("/runs/{id}/report/rows", get(compare::report_rows))
        .route("/runs/{id}/download/{file}", get(compare::report_download))
        .route("/runs/{id}/bundle", get(bundle::download))
        .route("/runs/{id}/samples", get(samples::samples_page))
        .route("/runs/{id}/schedstat", get(schedstat::page))
        .route("/runs/{id}/bisect", get(bisect::page))
        .route("/compare", get(both::compare_page))
        .route("/jobs/{id}", get(job::page))
        .route("/jobs/{id}/raw/{kind}", get(job::raw))
        .route("/kernels", get(kernels::list_page))
        .route("/kernels/diff", get(kernels::diff_page))
        .route("/kernels/{key}", get(kernels::page))
        .route("/history", get(history::page))
        .route("/fleet", get(fleet::page))
        .route("/api/v1/runs", get(runs::runs_api))
        .route("/api/v1/runs/{id}", get(runs::run_api))
        .route("/api/v1/runs/{id}/report", get(compare::report_api))
        .route("/api/v1/runs/{id}/samples", get(samples::samples_api))
        .route("/api/v1/runs/{id}/schedstat", get(schedstat::api))
        .route("/api/v1/runs/{id}/bisect", get(bisect::api))
        .route("/api/v1/compare", get(both::compare_api))
        .route("/api/v1/jobs/{id}", get(job::api))
        .route("/api/v1/kernels", get(kernels::list_api))
        .route("/api/v1/kernels/diff", get(kernels::diff_api))
        .route("/api/v1/kernels/{key}", get(kernels::api))
        .route("/api/v1/history", get(history::api))
        .route("/api/v1/alerts", get(alerts::api))
        .route("/api/v1/fleet", get(fleet::api))
        .route("/api/v1/events", get(live::events))
        .route("/assets/kreg.css", get(css))
        .route("/assets/kreg.js", get(js))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            std::sync::Arc::new(answer::Gzipped::default()),
            answer::answer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            std::sync::Arc::new(guard),
            guard::guard,
        ))
        .with_state(state)
}

/// Serves the dashboard on `listen` until the process ends: the agent's accept loop (a
/// header timeout that also closes idle and half-sent connections, and a connection cap),
/// answering to the hosts `guard` allows.
pub async fn serve(
    options: PgConnectOptions,
    listen: std::net::SocketAddr,
    guard: guard::Guard,
    header_timeout: std::time::Duration,
) -> anyhow::Result<()> {
    let app = router(AppState::listening(read_only_pool(options)), guard);
    let socket = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    eprintln!("kreg: dashboard on http://{}/", socket.local_addr()?);
    kreg_protocol::listen::raise_nofile_limit();
    let limits = kreg_protocol::listen::Limits {
        max_connections: 512,
        header_timeout,
        ..Default::default()
    };
    kreg_protocol::listen::serve(socket, app, limits, None, std::future::pending()).await?;
    Ok(())
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/kreg.css"))
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("assets/kreg.js"))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
        .into_response()
}

async fn not_found(uri: axum::http::Uri) -> Response {
    let e = ViewError::NotFound(format!("no page at {}", crate::parse::clip(uri.path())));
    if uri.path().starts_with("/api/") {
        ApiError(e).into_response()
    } else {
        PageError(e).into_response()
    }
}

fn status_of(e: &ViewError) -> StatusCode {
    match e {
        ViewError::NotFound(_) => StatusCode::NOT_FOUND,
        ViewError::Invalid(_) => StatusCode::BAD_REQUEST,
        ViewError::Other(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// What an answer says of a failure: the reason of a 404 or 400 (a value in it clipped),
/// and for a server error only that it happened (the log has the rest).
fn said(e: &ViewError) -> String {
    match e {
        ViewError::Other(_) => "the server could not answer this request; its log says why".into(),
        e => {
            let text = e.to_string();
            match text.char_indices().nth(300) {
                None => text,
                Some((at, _)) => format!("{}… (cut; {} bytes)", &text[..at], text.len()),
            }
        }
    }
}

fn log_server_error(e: &ViewError) {
    if let ViewError::Other(err) = e {
        tracing::error!("dashboard: {err:#}");
    }
}

/// A page's failure, as a page: 404 for what does not exist, 400 with the reason for a
/// malformed request, 500 otherwise.
pub struct PageError(pub ViewError);

impl<E: Into<ViewError>> From<E> for PageError {
    fn from(e: E) -> Self {
        PageError(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        log_server_error(&self.0);
        let status = status_of(&self.0);
        let title = match status {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::BAD_REQUEST => "Bad request",
            _ => "Server error",
        };
        let body = format!(
            "<p class=\"error\">{}</p><p><a href=\"/\">All runs</a></p>",
            html::esc(&said(&self.0))
        );
        (
            status,
            axum::response::Html(html::layout(title, &body, &html::Live::No)),
        )
            .into_response()
    }
}

/// An API call's failure, as JSON `{"error": "..."}` with the same status codes.
pub struct ApiError(pub ViewError);

impl<E: Into<ViewError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        log_server_error(&self.0);
        let body = serde_json::json!({ "error": said(&self.0) });
        (status_of(&self.0), axum::Json(body)).into_response()
    }
}

pub type PageResult = Result<axum::response::Html<String>, PageError>;
pub type ApiResult = Result<axum::Json<serde_json::Value>, ApiError>;

/// A value as the API's JSON.
fn json<T: serde::Serialize>(v: &T) -> ApiResult {
    Ok(axum::Json(
        serde_json::to_value(v).map_err(|e| ViewError::Other(e.into()))?,
    ))
}

/// A numeric id from a path: anything else names nothing.
fn id_of(what: &str, s: &str) -> Result<i64, ViewError> {
    s.parse()
        .map_err(|_| ViewError::NotFound(format!("{what} {s:?} does not exist")))
}
