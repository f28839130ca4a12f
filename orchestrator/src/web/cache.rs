//! What is made once per state of its run: a report is judged once for every page, download
//! and viewer of it and again only after its run changed, and a page is rendered once. An
//! entry's key is what it was made of (a page's path and query; a report's run, baseline and
//! settings); its version is what the database says of the run's state (its state and last
//! change, and while it runs its jobs done and failed and the last to finish), read on every
//! request (one indexed look-up), so nothing outlives a change. Callers asking at once wait
//! for the one making it. Failures are not kept.

use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

/// The most pages kept; past it the oldest go first.
pub const PAGES_KEPT: usize = 64;
/// The most judged reports kept (one of 100,000 samples holds a few MB).
pub const REPORTS_KEPT: usize = 8;

type Cell<T> = Arc<OnceCell<Arc<T>>>;

/// Rendered pages.
pub type PageCache = Cache<String>;

/// ((key, version), the entry).
type Entry<T> = ((String, String), Cell<T>);

pub struct Cache<T> {
    kept: usize,
    /// ((key, version), the entry), in the order made.
    pages: Mutex<Vec<Entry<T>>>,
}

impl<T> Cache<T> {
    /// A cache of at most `kept` entries.
    pub fn new(kept: usize) -> Cache<T> {
        Cache {
            kept,
            pages: Mutex::new(Vec::new()),
        }
    }

    /// The entry at `key` in `version`, made by `make` unless made already (or being made:
    /// then this waits for it).
    pub async fn page<E>(
        &self,
        key: String,
        version: String,
        make: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<Arc<T>, E> {
        let cell = {
            let mut pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
            let wanted = (key, version);
            match pages.iter().find(|(v, _)| *v == wanted) {
                Some((_, c)) => c.clone(),
                None => {
                    // Other versions of this page are of no use any more.
                    pages.retain(|(v, _)| v.0 != wanted.0);
                    if pages.len() >= self.kept.max(1) {
                        pages.remove(0);
                    }
                    let c: Cell<T> = Arc::default();
                    pages.push((wanted, c.clone()));
                    c
                }
            }
        };
        cell.get_or_try_init(|| async { make.await.map(Arc::new) })
            .await
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_page_is_made_once_per_version() {
        let cache = PageCache::new(PAGES_KEPT);
        let made = AtomicUsize::new(0);
        let make = |text: &'static str| {
            let made = &made;
            async move {
                made.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(text.to_string())
            }
        };
        let page = |v: &str, text| cache.page("/runs/1/report".into(), v.into(), make(text));
        assert_eq!(*page("v1", "a").await.unwrap(), "a");
        assert_eq!(*page("v1", "b").await.unwrap(), "a");
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(*page("v2", "c").await.unwrap(), "c");
        // A failure is not kept.
        let failed: Result<_, String> = cache
            .page("x".into(), "v".into(), async { Err("no".to_string()) })
            .await;
        assert!(failed.is_err());
        assert_eq!(*cache.page("x".into(), "v".into(), make("f")).await.unwrap(), "f");
        // Many asking at once: made once.
        let before = made.load(Ordering::SeqCst);
        let all = futures_util::future::join_all((0..20).map(|_| page("v3", "g"))).await;
        assert!(all.iter().all(|p| p.as_deref().map(String::as_str) == Ok("g")));
        assert_eq!(made.load(Ordering::SeqCst), before + 1);
    }
}
