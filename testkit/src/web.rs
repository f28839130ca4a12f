//! The dashboard's tests share: a real `kreg serve` on a free loopback port, and
//! `kreg report --format json` to compare its pages with.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use super::{assert_ok, kreg, TestDb};

/// `kreg serve` on a free loopback port, killed on drop.
pub struct Server {
    child: Child,
    pub base: String,
}

impl Server {
    pub fn start(db: &TestDb, dir: &std::path::Path) -> Server {
        Server::start_on(db, dir, "127.0.0.1:0")
    }

    /// On a given address (a server started again where a page still points).
    pub fn start_on(db: &TestDb, dir: &std::path::Path, listen: &str) -> Server {
        let mut child = kreg(db, dir)
            .args(["serve", "--listen", listen])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("kreg: dashboard on ")
            .unwrap_or_else(|| panic!("kreg serve said {line:?}"))
            .trim_end_matches('/')
            .to_string();
        Server { child, base }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn report_json(db: &TestDb, dir: &std::path::Path, run: i64) -> serde_json::Value {
    let out = kreg(db, dir)
        .args(["report", &run.to_string(), "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out, "report");
    serde_json::from_slice(&out.stdout).unwrap()
}
