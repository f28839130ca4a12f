//! Waiting for something that is not there yet: look, and look again after a pause, until
//! it is ready, it failed, or the time is up.

use std::time::Duration;

use tokio::time::Instant;

/// What one look found.
pub enum Look<T, E> {
    Ready(T),
    /// It will not become ready: stop waiting.
    Failed(E),
    /// Not yet; what was seen, for the message if time runs out.
    NotYet(String),
}

/// How a wait ended without its thing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Waited<E> {
    #[error("{0}")]
    Failed(E),
    /// The time ran out; the last look saw this.
    #[error("not ready within {}s (last: {last})", .limit.as_secs())]
    TimedOut { limit: Duration, last: String },
}

/// Calls `look` every `every` until it answers Ready or Failed, or `limit` has passed since
/// the first look (which is always made).
pub async fn until<T, E>(
    limit: Duration,
    every: Duration,
    mut look: impl AsyncFnMut() -> Look<T, E>,
) -> Result<T, Waited<E>> {
    let deadline = Instant::now() + limit;
    loop {
        let last = match look().await {
            Look::Ready(t) => return Ok(t),
            Look::Failed(e) => return Err(Waited::Failed(e)),
            Look::NotYet(seen) => seen,
        };
        if Instant::now() >= deadline {
            return Err(Waited::TimedOut { limit, last });
        }
        tokio::time::sleep(every.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_failed_and_timed_out() {
        let ms = Duration::from_millis;
        let mut n = 0;
        let r: Result<u32, Waited<String>> = until(ms(2000), ms(1), async || {
            n += 1;
            if n == 3 {
                Look::Ready(n)
            } else {
                Look::NotYet(format!("look {n}"))
            }
        })
        .await;
        assert_eq!(r, Ok(3));
        let r: Result<(), Waited<String>> = until(ms(2000), ms(1), async || Look::Failed("gone".into())).await;
        assert_eq!(r, Err(Waited::Failed("gone".into())));
        let start = Instant::now();
        let mut looks = 0;
        let r: Result<(), Waited<String>> = until(ms(100), ms(30), async || {
            looks += 1;
            Look::NotYet(format!("look {looks}"))
        })
        .await;
        assert_eq!(
            r.unwrap_err().to_string(),
            format!("not ready within 0s (last: look {looks})")
        );
        assert!(start.elapsed() >= ms(100) && (2..=5).contains(&looks), "{looks} looks");
    }
}
