//! sysbench (1.0) OLTP and other Lua tests: transactions and queries per second, latency
//! min/avg/max and the requested percentile (`--percentile`, 95 by default), errors.

use super::common::uints;
use super::db::DbServer;
use super::HostRefs;
use crate::parse::{number, perr, unique, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};
use crate::Error;

/// The keys of a sysbench workload, besides the common ones.
pub const KEYS: &[&str] = &[
    "test",
    "threads",
    "time",
    "tables",
    "table_size",
    "percentile",
    "server",
];

/// sysbench OLTP against a MySQL/MariaDB server.
#[derive(Debug, Clone, PartialEq)]
pub struct Sysbench {
    /// oltp_read_write, oltp_read_only, oltp_point_select, …
    pub test: String,
    pub threads: u32,
    pub time_secs: u32,
    pub tables: u32,
    pub table_size: u32,
    pub percentile: u32,
    pub server: DbServer,
}

impl Sysbench {
    /// The options file that carries the password (`name=value` lines, as sysbench reads
    /// `--config-file`); a password with a line end cannot be written in it.
    pub fn config_text(password: &str) -> Result<String, Error> {
        if password.contains(['\n', '\r']) {
            return Err(Error::invalid("a sysbench password may not hold a line end"));
        }
        Ok(format!("mysql-password={password}\n"))
    }

    /// `sysbench TEST … PHASE` (prepare, run, cleanup). The password is never on the
    /// command line (every user of the host sees that): it is in `config`, a file of
    /// sysbench options ([`Sysbench::config_text`]) readable by root only.
    pub fn argv(&self, config: &str, phase: &str) -> Vec<String> {
        let s = &self.server;
        let mut v = vec![
            "sysbench".to_string(),
            self.test.clone(),
            "--db-driver=mysql".into(),
            format!("--mysql-host={}", s.address),
            format!("--mysql-port={}", s.port),
            format!("--mysql-user={}", s.user),
            format!("--config-file={config}"),
            format!("--mysql-db={}", s.database),
            format!("--tables={}", self.tables),
            format!("--table-size={}", self.table_size),
        ];
        if phase == "run" {
            v.extend([
                format!("--threads={}", self.threads),
                format!("--time={}", self.time_secs),
                format!("--percentile={}", self.percentile),
            ]);
        } else {
            v.push(format!("--threads={}", self.threads.min(self.tables)));
        }
        v.push(phase.into());
        v
    }

    pub(crate) fn load(cx: &mut Cx, f: &Fields, what: &str, refs: &mut HostRefs) -> Option<Sysbench> {
        let test = cx.required(f, "test", what).and_then(|n| {
            let t = cx.string(n, "test")?;
            if !t.starts_with("oltp_") || !t.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                cx.error(n, format!("test: {t:?} is not a sysbench OLTP test (oltp_read_write, oltp_read_only, oltp_point_select, …)"));
                return None;
            }
            Some(t)
        });
        let [threads, time, tables, table_size, percentile] = uints(
            cx,
            f,
            [
                ("threads", "threads", 1, 4096, 1),
                ("time", "time", 1, 86400, 60),
                ("tables", "tables", 1, 1000, 1),
                ("table_size", "table_size", 1, 1_000_000_000, 10_000),
                ("percentile", "percentile", 1, 100, 95),
            ],
        );
        let server = DbServer::required(cx, f, what, refs);
        Some(Sysbench {
            test: test?,
            threads: threads?,
            time_secs: time?,
            tables: tables?,
            table_size: table_size?,
            percentile: percentile?,
            server: server?,
        })
    }
}

const TOOL: &str = "sysbench";

/// "822    (273.44 per sec.)" → 273.44
fn per_sec(line_no: usize, what: &str, rest: &str) -> Result<f64, ParseError> {
    let inner = rest
        .split_once('(')
        .and_then(|(_, r)| r.split_once("per sec."))
        .map(|(n, _)| n)
        .ok_or_else(|| perr(TOOL, format!("line {line_no}: {what} has no `(N per sec.)`")))?;
    number(TOOL, line_no, what, inner)
}

/// The metric a line of the report carries, if any (`no`: its 1-based number).
fn line_metric(in_latency: bool, key: &str, rest: &str, no: usize) -> Result<Option<Metric>, ParseError> {
    use MetricKind::*;
    let rate = |name: &str, what: &str, unit: &str, hib: bool, kind: MetricKind| {
        Ok(Some(Metric::new(name, per_sec(no, what, rest)?, unit, hib, kind)))
    };
    let ms =
        |name: String, kind: MetricKind| Ok(Some(Metric::new(name, number(TOOL, no, key, rest)?, "ms", false, kind)));
    match (in_latency, key) {
        (false, "transactions") => rate("tps", "transactions", "tx/s", true, Throughput),
        (false, "queries") => rate("qps", "queries", "queries/s", true, Throughput),
        (false, "ignored errors") => rate("errors_per_s", "ignored errors", "errors/s", false, Count),
        (false, "events/s (eps)") => Ok(Some(Metric::new(
            "eps",
            number(TOOL, no, "events/s", rest)?,
            "events/s",
            true,
            Throughput,
        ))),
        (true, "avg") => ms("lat_avg_ms".into(), Mean),
        (true, "min" | "max") => ms(format!("lat_{key}_ms"), Latency),
        (true, k) if k.ends_with("th percentile") => {
            let p = crate::parse::pct_label(TOOL, &format!("line {no}"), k.trim_end_matches("th percentile"))?;
            ms(format!("lat_{p}_ms"), Latency)
        }
        _ => Ok(None),
    }
}

pub fn parse(text: &str) -> Result<Vec<Metric>, ParseError> {
    if let Some((n, l)) = text.lines().enumerate().find(|(_, l)| l.starts_with("FATAL:")) {
        return Err(perr(TOOL, format!("line {}: the run failed: {}", n + 1, l.trim())));
    }
    let mut out = Vec::new();
    let mut in_latency = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let no = n + 1;
        if line.starts_with("Latency (ms):") {
            in_latency = true;
            continue;
        }
        if line.is_empty() {
            in_latency = false;
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        out.extend(line_metric(in_latency, key, rest, no)?);
    }
    let has_rate = out.iter().any(|m| m.name == "tps" || m.name == "eps");
    let has_latency = out.iter().any(|m| m.name == "lat_avg_ms");
    if !has_rate || !has_latency {
        return Err(perr(
            TOOL,
            "no throughput or no `Latency (ms):` section in the output (truncated, or the run failed)",
        ));
    }
    unique(TOOL, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::db::{tests::db, DbKind};

    #[test]
    fn sysbench_phases() {
        let sb = Sysbench {
            test: "oltp_read_write".into(),
            threads: 8,
            time_secs: 30,
            tables: 4,
            table_size: 1000,
            percentile: 99,
            server: db(DbKind::Mariadb),
        };
        let run = sb.argv("/tmp/x/sysbench.conf", "run").join(" ");
        assert_eq!(run, "sysbench oltp_read_write --db-driver=mysql --mysql-host=192.0.2.1 --mysql-port=3307 --mysql-user=bench --config-file=/tmp/x/sysbench.conf --mysql-db=tpcc --tables=4 --table-size=1000 --threads=8 --time=30 --percentile=99 run");
        assert_eq!(Sysbench::config_text("s3cret").unwrap(), "mysql-password=s3cret\n");
        assert!(Sysbench::config_text("a\nthreads=999").is_err());
        let prep = sb.argv("/tmp/x/sysbench.conf", "prepare");
        assert_eq!(prep[prep.len() - 2..], ["--threads=4", "prepare"]);
    }
}
