//! What the fleet's tests run: agents on loopback (or on a bridge the workers reach from
//! network namespaces of their own), pool files, and `kreg worker` processes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kreg_testkit::{agent_bin, kreg_bin, TOKEN};

/// A kreg-agent listening on `addr` (port 0: any), its log (stderr) in `dir/NAME.log`, its
/// data in `dir/NAME`, with `env` added to its environment (the commands it runs inherit it).
pub struct LoggedAgent {
    pub child: Child,
    pub url: String,
    pub log: PathBuf,
    pub data: PathBuf,
}

impl LoggedAgent {
    pub fn start(dir: &Path, name: &str, addr: &str, env: &[(&str, String)]) -> LoggedAgent {
        let token = dir.join("token");
        if !token.exists() {
            std::fs::write(&token, TOKEN).unwrap();
        }
        let log = dir.join(format!("{name}.log"));
        let data = dir.join(name);
        let mut cmd = Command::new(agent_bin());
        cmd.args(["--listen", &format!("{addr}:0"), "--token-file"])
            .arg(&token)
            .arg("--data-dir")
            .arg(&data)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let bound = line
            .trim()
            .strip_prefix("kreg-agent listening on ")
            .unwrap_or_else(|| panic!("agent said {line:?}"));
        LoggedAgent {
            child,
            url: format!("http://{bound}"),
            log,
            data,
        }
    }

    /// The lines of its log that say it refused a stale request.
    pub fn refusals(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("refused a stale request"))
            .map(String::from)
            .collect()
    }

    /// The epoch it keeps on disk (0: none seen).
    pub fn epoch(&self) -> u64 {
        std::fs::read_to_string(self.data.join("epoch"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for LoggedAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pool file's entry for a machine served by `agent` (plain http: `insecure` when not on
/// loopback), with its labels and load generator.
pub fn pool_entry(name: &str, role: &str, agent: &LoggedAgent, labels: &str, loadgen: Option<&str>) -> String {
    let insecure = if agent.url.contains("127.0.0.1") {
        ""
    } else {
        ", insecure: true"
    };
    let ldg = loadgen.map(|l| format!(", loadgen: {l}")).unwrap_or_default();
    format!(
        "  {name}: {{ role: {role}{ldg}, labels: {{ {labels} }}, transport: {{ kind: http, url: \"{}\", token_file: token{insecure} }} }}\n",
        agent.url
    )
}

/// `kreg` against `url` with a data folder of its own.
pub fn kreg_at(url: &str, data: &Path) -> Command {
    let mut c = Command::new(kreg_bin());
    c.env("DATABASE_URL", url)
        .env("KREG_DATA_DIR", data)
        .env("KREG_AGENT_BIN", agent_bin());
    c
}

/// Runs `kreg ARGS`; its exit status and its stdout and stderr together.
pub fn kreg_out(url: &str, data: &Path, args: &[&str]) -> (bool, String) {
    let out = kreg_at(url, data).args(args).output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A `kreg worker` process (in network namespace `ns` when given), its output in `log`.
pub struct Worker {
    pub child: Child,
    pub log: PathBuf,
}

impl Worker {
    pub fn start(url: &str, dir: &Path, name: &str, ns: Option<&str>, args: &[&str]) -> Worker {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(kreg_bin());
                c
            }
            None => Command::new(kreg_bin()),
        };
        cmd.env("DATABASE_URL", url)
            .env("KREG_DATA_DIR", dir.join(name))
            .env("KREG_AGENT_BIN", agent_bin())
            .args(["worker", "--name", name])
            .args(args)
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        Worker {
            child: cmd.spawn().unwrap(),
            log,
        }
    }

    pub fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status();
    }

    pub fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until every run in the database has finished (done or failed), up to `secs`.
pub async fn until_finished(db: &sqlx::PgPool, secs: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let open: Result<i64, _> =
            sqlx::query_scalar("SELECT count(*) FROM runs WHERE state IN ('running', 'interrupted')")
                .fetch_one(db)
                .await;
        if matches!(open, Ok(0)) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}
