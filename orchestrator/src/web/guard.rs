//! What every request meets before a handler: the `Host` it names must be one the dashboard
//! answers to (loopback names, the address it is bound to, and `--allow-host` names), so
//! that a page on another site cannot read it through a DNS name of its own pointed at
//! 127.0.0.1; a path or query with a control character (a NUL among them) is a 400 at
//! once; and every answer carries headers that keep browsers from guessing types, framing
//! the pages, or loading anything from elsewhere.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The host names (lowercase, without port) the dashboard answers to.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: Vec<String>,
}

impl Guard {
    /// Loopback names only.
    pub fn loopback() -> Guard {
        Guard {
            hosts: ["localhost", "127.0.0.1", "[::1]"].map(String::from).to_vec(),
        }
    }

    /// Loopback names, the address `listen` names (unless it is a wildcard), and `extra`.
    pub fn new(listen: SocketAddr, extra: &[String]) -> Guard {
        let mut g = Guard::loopback();
        let ip = listen.ip();
        if !ip.is_unspecified() {
            g.hosts.push(match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            });
        }
        g.hosts.extend(extra.iter().map(|h| host_of(h)));
        g.hosts.sort();
        g.hosts.dedup();
        g
    }

    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Whether a `Host` header's value names a host the dashboard answers to.
    pub fn allows(&self, host: &str) -> bool {
        let h = host_of(host);
        self.hosts.contains(&h)
    }
}

/// `Host`'s host part, lowercase, without the port or a final dot: `[::1]`, `localhost`.
fn host_of(value: &str) -> String {
    let v = value.trim().to_ascii_lowercase();
    let h = if v.starts_with('[') {
        v.split_inclusive(']').next().unwrap_or("").to_string()
    } else {
        v.split(':').next().unwrap_or("").to_string()
    };
    h.trim_end_matches('.').to_string()
}

/// Whether a path or query holds a control character, raw or percent-encoded.
fn has_control(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    b.iter().any(|c| c.is_ascii_control())
        || b.windows(3).any(|w| {
            w[0] == b'%'
                && match (hex(w[1]), hex(w[2])) {
                    (Some(h), Some(l)) => {
                        let v = h * 16 + l;
                        v < 0x20 || v == 0x7f
                    }
                    _ => false,
                }
        })
}

fn refuse(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

/// The content security policy: everything from the dashboard itself, inline style
/// attributes (the bars) allowed, nothing framed, no plugin.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let uri = req.uri();
    if has_control(uri.path()) || uri.query().is_some_and(has_control) {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the request's path or query holds a control character".into(),
        );
    }
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    match host {
        None => return refuse(StatusCode::BAD_REQUEST, "the request names no Host".into()),
        Some(h) if !g.allows(h) => {
            return refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "this dashboard answers to {} only; to reach it by another name, start it with `kreg serve --allow-host NAME`",
                    g.hosts.join(", ")
                ),
            )
        }
        Some(_) => {}
    }
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_matched_without_port_or_case() {
        let g = Guard::new("0.0.0.0:8080".parse().unwrap(), &["Perf-Lab.example:8080".into()]);
        for ok in [
            "localhost:8080",
            "LOCALHOST",
            "127.0.0.1:1",
            "[::1]:8080",
            "perf-lab.example",
            "localhost.",
        ] {
            assert!(g.allows(ok), "{ok}");
        }
        for no in ["evil.example", "127.0.0.1.evil.example", "0.0.0.0:8080", "", "[::2]"] {
            assert!(!g.allows(no), "{no}");
        }
        let bound = Guard::new("10.1.2.3:80".parse().unwrap(), &[]);
        assert!(bound.allows("10.1.2.3") && !Guard::loopback().allows("10.1.2.3"));
    }

    #[test]
    fn control_characters_are_found_raw_or_encoded() {
        assert!(has_control("/kernels/%00") && has_control("a=%1B") && has_control("x=%7f"));
        assert!(!has_control("/runs/1/report?show=all&a=%20%41"));
    }
}
