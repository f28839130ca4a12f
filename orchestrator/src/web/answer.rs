//! What every answer goes through on its way out: its weak ETag (a hash of its body; an
//! unchanged page asked again with `If-None-Match` is a 304 with no body), gzip for clients
//! that accept it (each body compressed once and kept by its ETag, so that a page read from
//! the page cache is not compressed again), and `Server-Timing: app;dur=ms` counting all of
//! it: the handler, the hash and the compression.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The most a page may weigh for its ETag to be computed (bigger ones go as they are).
const ETAG_LIMIT: usize = 32 << 20;
/// Bodies smaller than this go plain: gzip's header would outweigh the saving.
const GZIP_FROM: usize = 860;
/// Compressed bodies kept, and the bytes they may hold in all.
const KEPT: usize = 64;
const KEPT_BYTES: usize = 64 << 20;

/// Compressed bodies by ETag, oldest first.
#[derive(Default)]
pub struct Gzipped {
    kept: Mutex<Vec<(String, axum::body::Bytes)>>,
}

impl Gzipped {
    fn get_or_make(&self, tag: &str, plain: &[u8]) -> axum::body::Bytes {
        if let Some((_, gz)) = self.lock().iter().find(|(t, _)| t == tag) {
            return gz.clone();
        }
        let gz = axum::body::Bytes::from(gzip(plain));
        let mut kept = self.lock();
        kept.retain(|(t, _)| t != tag);
        kept.push((tag.to_string(), gz.clone()));
        while kept.len() > KEPT || kept.iter().map(|(_, b)| b.len()).sum::<usize>() > KEPT_BYTES {
            kept.remove(0);
        }
        gz
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, axum::body::Bytes)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn gzip(plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(plain.len() / 4), flate2::Compression::new(5));
    e.write_all(plain).expect("writing to memory");
    e.finish().expect("writing to memory")
}

fn compressible(res: &Response) -> bool {
    res.headers().get(header::CONTENT_TYPE).is_some_and(|t| {
        let t = t.as_bytes();
        t.starts_with(b"text/") || t.starts_with(b"application/json") || t.starts_with(b"image/svg")
    })
}

fn accepts_gzip(req: &axum::extract::Request) -> bool {
    req.headers()
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|e| {
            let mut parts = e.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|q| matches!(q.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

fn timed(mut res: Response, started: std::time::Instant) -> Response {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Ok(v) = HeaderValue::from_str(&format!("app;dur={ms:.1}")) {
        res.headers_mut().insert("server-timing", v);
    }
    res
}

/// The layer (see the module's doc). The event stream goes through untouched but timed.
pub async fn answer(State(gz): State<Arc<Gzipped>>, req: axum::extract::Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let asked = req.headers().get(header::IF_NONE_MATCH).cloned();
    let gzip_ok = accepts_gzip(&req);
    let res = next.run(req).await;
    let streamed = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    if res.status() != StatusCode::OK || streamed {
        return timed(res, started);
    }
    let compress = gzip_ok && compressible(&res);
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ETAG_LIMIT).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the answer could not be read").into_response();
    };
    use sha2::Digest;
    let tag = format!("W/\"{}\"", hex::encode(&sha2::Sha256::digest(&bytes)[..12]));
    if !parts.headers.contains_key(header::CACHE_CONTROL) {
        parts
            .headers
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    parts
        .headers
        .insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Ok(value) = HeaderValue::from_str(&tag) {
        parts.headers.insert(header::ETAG, value);
    }
    let matches = asked.is_some_and(|a| {
        a.to_str()
            .is_ok_and(|a| a.split(',').any(|t| t.trim() == tag || t.trim() == "*"))
    });
    if matches {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_LENGTH);
        return timed(Response::from_parts(parts, axum::body::Body::empty()), started);
    }
    let body = if compress && bytes.len() >= GZIP_FROM {
        let gz = gz.get_or_make(&tag, &bytes);
        parts
            .headers
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        parts.headers.remove(header::CONTENT_LENGTH);
        gz
    } else {
        bytes
    };
    timed(Response::from_parts(parts, axum::body::Body::from(body)), started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_compressed_once_and_reads_back() {
        let g = Gzipped::default();
        let plain = "<p>kreg</p>".repeat(500);
        let a = g.get_or_make("t1", plain.as_bytes());
        let b = g.get_or_make("t1", b"not used: the tag is known");
        assert_eq!(a, b);
        let mut out = String::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(&a[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, plain);
        for i in 0..KEPT + 5 {
            g.get_or_make(&format!("x{i}"), b"y");
        }
        assert_eq!(g.lock().len(), KEPT);
    }
}
