//! Fencing: a controller that holds a machine's lease sends its lease's epoch with every
//! request (`X-Kreg-Epoch`); epochs only grow, each take-over of the lease having a higher
//! one. The agent keeps the highest it has seen (on disk, so a restart or a reboot of the
//! machine keeps it) and refuses any request with a lower one — and, once it has seen one,
//! any request without — with 409 and both epochs: a controller that stalled and lost its
//! lease cannot reboot, tune or measure the machine its successor drives.

use std::path::{Path, PathBuf};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::{reply_error, AppState};
use crate::wire::ErrorKind;

use kreg_protocol::EPOCH_HEADER as HEADER;

/// The highest epoch a lease can have: PostgreSQL's sequences (`lease_epochs`) are bigints.
/// A larger one would fence the machine for good, every real epoch being lower.
pub const MAX_EPOCH: u64 = i64::MAX as u64;

/// The highest epoch seen, and where it is kept.
#[derive(Debug)]
pub struct Fence {
    path: PathBuf,
    highest: tokio::sync::Mutex<u64>,
}

impl Fence {
    /// The fence kept under `data_dir` (0 when no epoch was ever seen). A file that does not
    /// hold a number is an error: the agent does not start without knowing its fence.
    pub fn load(data_dir: &Path) -> Result<Fence, crate::Error> {
        let path = data_dir.join("epoch");
        let highest = match std::fs::read_to_string(&path) {
            Ok(text) => text
                .trim()
                .parse()
                .ok()
                .filter(|e| *e <= MAX_EPOCH)
                .ok_or_else(|| crate::Error::Own(format!("{}: not an epoch: {:?}", path.display(), text.trim())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(crate::Error::Own(format!("{}: {e}", path.display()))),
        };
        Ok(Fence {
            path,
            highest: tokio::sync::Mutex::new(highest),
        })
    }

    /// Whether a request with `epoch` may go on; a higher epoch than any before is kept
    /// (on disk first) before the request goes on.
    pub async fn admit(&self, epoch: Option<u64>) -> Result<(), (ErrorKind, String)> {
        let mut highest = self.highest.lock().await;
        let fenced = |why: String| Err((ErrorKind::Fenced, why));
        match epoch {
            None if *highest == 0 => Ok(()),
            None => fenced(format!(
                "this machine is fenced at epoch {}: a request without an epoch is refused",
                *highest
            )),
            Some(e) if e < *highest => fenced(format!(
                "stale epoch {e}: this machine's lease is at epoch {}; the controller that sent it no longer holds the machine",
                *highest
            )),
            Some(e) if e == *highest => Ok(()),
            Some(e) => {
                self.keep(e).await.map_err(|why| (ErrorKind::Io, why.to_string()))?;
                *highest = e;
                Ok(())
            }
        }
    }

    /// Writes `epoch` durably: a new file, synced, renamed over the old one.
    async fn keep(&self, epoch: u64) -> Result<(), crate::Error> {
        let tmp = self.path.with_extension("tmp");
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            writeln!(f, "{epoch}")?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            if let Some(dir) = path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        })
        .await
        .map_err(|e| crate::Error::Own(format!("keeping epoch {epoch}: {e}")))?
        .map_err(|e| crate::Error::Own(format!("keeping epoch {epoch} in {}: {e}", self.path.display())))
    }
}

/// Runs after the token check: a request whose epoch is stale is answered 409 and logged.
pub async fn require_epoch(State(state): State<std::sync::Arc<AppState>>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(HEADER)
        .map(|v| v.to_str().ok().and_then(|s| s.trim().parse::<u64>().ok()));
    let epoch = match given {
        None => None,
        Some(Some(e)) if (1..=MAX_EPOCH).contains(&e) => Some(e),
        Some(Some(e)) => {
            return reply_error(
                ErrorKind::BadRequest,
                format!("{HEADER} {e}: an epoch is from 1 to {MAX_EPOCH} (the lease sequence's range); refused, the fence is unchanged"),
            )
        }
        Some(None) => return reply_error(ErrorKind::BadRequest, format!("{HEADER} is not a whole number")),
    };
    match state.fence.admit(epoch).await {
        Ok(()) => next.run(req).await,
        Err((ErrorKind::Fenced, why)) => {
            tracing::warn!(path = %req.uri().path(), epoch = ?epoch, "refused a stale request: {why}");
            reply_error(ErrorKind::Fenced, why)
        }
        Err((kind, why)) => {
            tracing::error!(path = %req.uri().path(), "fencing: {why}");
            reply_error(kind, why)
        }
    }
}
