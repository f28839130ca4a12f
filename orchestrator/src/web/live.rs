//! Live pages: one LISTEN on `kreg_changes` (announced by triggers from the engine's own
//! transactions, migration 0007) fanned out to every open page as server-sent events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::broadcast;

use super::params::Params;
use super::{ApiError, AppState};

/// Sent when changes may have been missed (the listener reconnected, or a page fell
/// behind): pages reload their live parts.
const RESYNC: &str = r#"{"resync":true}"#;

/// Forwards every notification to `tx` for as long as the server runs, reconnecting after
/// a lost connection.
pub async fn listen(db: PgPool, tx: broadcast::Sender<String>) {
    loop {
        match follow(&db, &tx).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!("dashboard: listening for changes: {e}; again in 1 s");
                let _ = tx.send(RESYNC.to_string());
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn follow(db: &PgPool, tx: &broadcast::Sender<String>) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(db).await?;
    listener.listen("kreg_changes").await?;
    tracing::info!("dashboard: following the database's changes");
    // Changes made while there was no listener.
    let _ = tx.send(RESYNC.to_string());
    loop {
        let n = listener.recv().await?;
        let _ = tx.send(n.payload().to_string());
    }
}

/// Whether a change concerns the run a page follows.
fn concerns(payload: &str, run: Option<i64>) -> bool {
    let Some(run) = run else { return true };
    match serde_json::from_str::<serde_json::Value>(payload) {
        Ok(v) => v.get("resync").is_some() || v.get("run").and_then(|r| r.as_i64()) == Some(run),
        Err(_) => false,
    }
}

fn changes(rx: broadcast::Receiver<String>, run: Option<i64>) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(rx, move |mut rx| async move {
        loop {
            let payload = match rx.recv().await {
                Ok(p) => p,
                Err(broadcast::error::RecvError::Lagged(_)) => RESYNC.to_string(),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            if concerns(&payload, run) {
                return Some((Ok(Event::default().event("change").data(payload)), rx));
            }
        }
    })
}

/// `GET /api/v1/events[?run=N]`: each change of a job's or run's state as an event
/// `change` with `{"run":…, "job":…, "state":…}`, or `{"resync":true}`.
pub async fn events(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> Response {
    let run = match Params::new(q, &["run"]).and_then(|p| p.int("run")) {
        Ok(r) => r,
        Err(e) => return ApiError(e).into_response(),
    };
    let rx = st.changes.subscribe();
    Sse::new(changes(rx, run))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_page_hears_its_run_and_resyncs() {
        assert!(super::concerns(r#"{"run":3,"job":9,"state":"done"}"#, Some(3)));
        assert!(!super::concerns(r#"{"run":4,"state":"done"}"#, Some(3)));
        assert!(super::concerns(super::RESYNC, Some(3)));
        assert!(super::concerns(r#"{"run":4}"#, None));
    }
}
