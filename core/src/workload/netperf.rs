//! netperf omni tests as kreg runs them: request/response (TCP_RR, UDP_RR) with keyval
//! output selectors `-- -k THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY`
//! (latencies in microseconds), bulk transfer (TCP_STREAM, TCP_MAERTS) with
//! `-- -k THROUGHPUT,THROUGHPUT_UNITS` (throughput in the unit netperf prints, 10^6bits/s
//! unless `-f` says otherwise). `kreg parse netperf` also reads the outputs users paste:
//! netperf's default table and its `-o` CSV.

use super::common::{ip_address, Count};
use super::HostRefs;
use crate::parse::{number, perr, unique, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};
use crate::yaml::Section;

/// Where a netperf workload's netserver runs.
pub const SERVER: Section = Section::new("workloads[].server (netperf)", "scenario", &["on", "address", "port"]);

/// The keys of a netperf workload, besides the common ones.
pub const KEYS: &[&str] = &["test", "clients", "duration", "server"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetTest {
    UdpRr,
    TcpRr,
    TcpStream,
    TcpMaerts,
}

/// The tests kreg runs, by netperf's name.
pub const TESTS: &[(&str, NetTest)] = &[
    ("UDP_RR", NetTest::UdpRr),
    ("TCP_RR", NetTest::TcpRr),
    ("TCP_STREAM", NetTest::TcpStream),
    ("TCP_MAERTS", NetTest::TcpMaerts),
];

impl NetTest {
    pub fn name(self) -> &'static str {
        TESTS.iter().find(|(_, t)| *t == self).map(|(n, _)| *n).unwrap_or("?")
    }

    /// The `-k` output selectors kreg asks for: latencies only where a transaction is one
    /// (a stream test's "latency" is the time of a send call).
    pub fn selectors(self) -> &'static str {
        match self {
            NetTest::UdpRr | NetTest::TcpRr => SELECTORS,
            NetTest::TcpStream | NetTest::TcpMaerts => STREAM_SELECTORS,
        }
    }
}

/// netperf request/response: `netserver` on the server host, clients on the workload's host.
#[derive(Debug, Clone, PartialEq)]
pub struct Netperf {
    pub test: NetTest,
    pub clients: Count,
    pub duration_secs: u32,
    pub server_on: String,
    pub server_address: String,
    pub server_port: u16,
}

impl Netperf {
    /// One netperf client; kreg starts `clients` of them at once.
    pub fn client_argv(&self) -> Vec<String> {
        vec![
            "netperf".into(),
            "-H".into(),
            self.server_address.clone(),
            "-p".into(),
            self.server_port.to_string(),
            "-t".into(),
            self.test.name().into(),
            "-l".into(),
            self.duration_secs.to_string(),
            "-P".into(),
            "0".into(),
            "--".into(),
            "-k".into(),
            self.test.selectors().into(),
        ]
    }

    /// `netserver` in the foreground (-D) on the server's address and port.
    pub fn server_argv(&self) -> Vec<String> {
        vec![
            "netserver".into(),
            "-D".into(),
            "-L".into(),
            self.server_address.clone(),
            "-p".into(),
            self.server_port.to_string(),
        ]
    }

    pub(crate) fn load(cx: &mut Cx, f: &Fields, what: &str, refs: &mut HostRefs) -> Option<Netperf> {
        let test = cx.required(f, "test", what).and_then(|n| {
            let name = cx.string(n, "test")?;
            match TESTS.iter().find(|(t, _)| *t == name) {
                Some((_, t)) => Some(*t),
                None => {
                    let known: Vec<&str> = TESTS.iter().map(|(t, _)| *t).collect();
                    cx.error(
                        n,
                        format!("test: `{name}` is not supported; expected one of {}", known.join(", ")),
                    );
                    None
                }
            }
        });
        let clients = match f.get("clients") {
            Some(n) => Count::load(cx, n, "clients", false),
            None => Some(Count::Fixed(1)),
        };
        let duration = cx.uint_or(f, "duration", "duration (-l)", (1, 86400), 30);
        let server = cx.required(f, "server", what).and_then(|n| {
            let sf = cx.map(n, "the netperf server", &SERVER)?;
            let on_node = cx.required(&sf, "on", "the netperf server")?;
            let on = cx.name(on_node, "on")?;
            refs.push((on.clone(), on_node.line, on_node.col));
            let address = cx
                .required(&sf, "address", "the netperf server")
                .and_then(|a| ip_address(cx, a, "address"));
            let port = cx.uint_or(&sf, "port", "port", (1, 65535), 12865);
            Some((on, address?, port? as u16))
        });
        let (server_on, server_address, server_port) = server?;
        Some(Netperf {
            test: test?,
            clients: clients?,
            duration_secs: duration?,
            server_on,
            server_address,
            server_port,
        })
    }
}

const TOOL: &str = "netperf";

/// The output selectors kreg asks netperf for in a request/response test.
pub const SELECTORS: &str = "THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY";
/// … and in a stream test.
pub const STREAM_SELECTORS: &str = "THROUGHPUT,THROUGHPUT_UNITS";

/// One netperf run's output: `-k` keyval lines, `-o` CSV, or the default table.
pub fn parse(text: &str) -> Result<Vec<Metric>, ParseError> {
    let banners = text.lines().filter(|l| is_banner(l)).count();
    if banners > 1 {
        return Err(perr(
            TOOL,
            format!("{banners} test banners: the output holds more than one run; give one run per file"),
        ));
    }
    if text.lines().any(|l| l.trim_start().starts_with("THROUGHPUT=")) {
        return parse_keyval(text);
    }
    if text.lines().any(|l| l.contains(',')) {
        return parse_csv(text);
    }
    if banners == 1 {
        if let Some(columns) = human_columns(text) {
            return parse_human(&columns);
        }
        return parse_table(text);
    }
    Err(perr(
        TOOL,
        "no result: neither `-k` KEY=VALUE lines, `-o` CSV, `-O` columns nor netperf's table after its test banner (truncated, or run with -P 0, which drops the headings that say which number is which)",
    ))
}

/// netperf's first line: `MIGRATED TCP STREAM TEST from …` (or without MIGRATED).
fn is_banner(line: &str) -> bool {
    line.contains(" TEST from ")
}

/// The unit as `-k` prints it: `per sec` (a table's transaction rate) is `Trans/s`,
/// `10^6bits/sec` is `10^6bits/s`.
fn unit(text: &str) -> String {
    let t = text.trim();
    if t.eq_ignore_ascii_case("per sec") {
        return "Trans/s".into();
    }
    match t.strip_suffix("/sec") {
        Some(head) => format!("{head}/s"),
        None => t.to_string(),
    }
}

/// The throughput metric first, then the rest; a transaction rate is
/// `transactions_per_s`, anything else `throughput`.
fn finish(throughput: f64, units: &str, mut rest: Vec<Metric>) -> Result<Vec<Metric>, ParseError> {
    let name = if units.to_ascii_lowercase().starts_with("trans") {
        "transactions_per_s"
    } else {
        "throughput"
    };
    rest.insert(0, Metric::new(name, throughput, units, true, MetricKind::Throughput));
    unique(TOOL, rest)
}

/// A latency selector's metric (`MEAN_LATENCY` → `lat_mean_us`), for -k keys and -o
/// column names alike.
fn latency(key: &str) -> Option<(String, MetricKind)> {
    let k = key.to_ascii_uppercase();
    if k == "MEAN_LATENCY" || k == "MEAN LATENCY MICROSECONDS" {
        return Some(("lat_mean_us".into(), MetricKind::Mean));
    }
    for p in ["50", "90", "99"] {
        if k == format!("P{p}_LATENCY") || k == format!("{p}TH PERCENTILE LATENCY MICROSECONDS") {
            return Some((format!("lat_p{p}_us"), MetricKind::Latency));
        }
    }
    None
}

fn parse_keyval(text: &str) -> Result<Vec<Metric>, ParseError> {
    let mut out = Vec::new();
    let mut units = String::from("Trans/s");
    let mut throughput: Option<f64> = None;
    for (n, line) in text.lines().enumerate() {
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        match key {
            "THROUGHPUT" => {
                if throughput.is_some() {
                    return Err(perr(
                        TOOL,
                        format!(
                            "line {}: a second THROUGHPUT=: the output holds more than one run; give one run per file",
                            n + 1
                        ),
                    ));
                }
                throughput = Some(number(TOOL, n + 1, "THROUGHPUT", value)?)
            }
            "THROUGHPUT_UNITS" => units = unit(value),
            _ => {
                if let Some((name, kind)) = latency(key) {
                    out.push(Metric::new(name, number(TOOL, n + 1, key, value)?, "us", false, kind));
                }
            }
        }
    }
    let t = throughput.ok_or_else(|| {
        perr(
            TOOL,
            "no THROUGHPUT= line (truncated, or netperf ran without `-k` selectors)",
        )
    })?;
    finish(t, &units, out)
}

/// `-o` output: a line of column names and a line of values (both comma-separated), or the
/// values alone (`-P 0`) of the default selection, which ends with throughput and its unit.
fn parse_csv(text: &str) -> Result<Vec<Metric>, ParseError> {
    let rows: Vec<(usize, Vec<&str>)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(','))
        .map(|(n, l)| (n + 1, l.split(',').map(str::trim).collect()))
        .collect();
    let header = rows
        .iter()
        .position(|(_, r)| r.iter().any(|c| c.eq_ignore_ascii_case("Throughput")));
    let Some(h) = header else {
        // The default selection without its names: …,THROUGHPUT,THROUGHPUT_UNITS.
        let (n, r) = match rows.as_slice() {
            [one] => one,
            _ => {
                return Err(perr(
                    TOOL,
                    "CSV without a Throughput column name (run with `-o` but without -P 0, so that netperf names its columns)",
                ))
            }
        };
        let units = r.last().copied().unwrap_or("");
        if r.len() < 2 || !units.ends_with("/s") {
            return Err(perr(
                TOOL,
                format!("line {n}: CSV without column names whose last field is not a unit (run -o without -P 0)"),
            ));
        }
        let t = number(TOOL, *n, "Throughput", r[r.len() - 2])?;
        return finish(t, &unit(units), Vec::new());
    };
    let (hn, names) = &rows[h];
    let Some((n, values)) = rows.get(h + 1) else {
        return Err(perr(
            TOOL,
            format!("line {hn}: column names without a line of values (truncated)"),
        ));
    };
    if values.len() != names.len() {
        return Err(perr(
            TOOL,
            format!(
                "line {n}: {} values for {} column names (truncated?)",
                values.len(),
                names.len()
            ),
        ));
    }
    let mut throughput = None;
    let mut units = String::from("Trans/s");
    let mut out = Vec::new();
    for (name, value) in names.iter().zip(values) {
        if name.eq_ignore_ascii_case("Throughput") {
            throughput = Some(number(TOOL, *n, "Throughput", value)?);
        } else if name.eq_ignore_ascii_case("Throughput Units") {
            units = unit(value);
        } else if let Some((m, kind)) = latency(name) {
            out.push(Metric::new(m, number(TOOL, *n, name, value)?, "us", false, kind));
        }
    }
    finish(throughput.unwrap_or_default(), &units, out)
}

/// `-O` output (omni's human-readable selection): after the banner, column headings whose
/// words stack over up to four lines, each column starting where its first word does, and
/// the values on the line right below, in the same columns; no blank line between. Each
/// column as (its name, its words joined; its value; the value's line), or `None` when the
/// text after the banner is not in that form (netperf's default table has a blank line
/// between its headings and its numbers).
fn human_columns(text: &str) -> Option<Vec<(String, String, usize)>> {
    let lines: Vec<&str> = text.lines().collect();
    let b = lines.iter().position(|l| is_banner(l))?;
    let block: Vec<(usize, &str)> = lines[b + 1..]
        .iter()
        .enumerate()
        .map(|(i, l)| (b + 2 + i, l.trim_end()))
        .take_while(|(_, l)| !l.is_empty())
        .collect();
    if lines[b + 1 + block.len()..].iter().any(|l| !l.trim().is_empty()) || block.len() < 2 {
        return None;
    }
    let (values_at, values) = *block.last()?;
    let heads = &block[..block.len() - 1];
    let first = heads[0].1;
    let starts: Vec<usize> = first
        .char_indices()
        .filter(|(i, c)| !c.is_whitespace() && (*i == 0 || first[..*i].ends_with(char::is_whitespace)))
        .map(|(i, _)| i)
        .collect();
    let cut = |line: &str, k: usize| -> String {
        let from = starts[k].min(line.len());
        let to = starts.get(k + 1).copied().unwrap_or(usize::MAX).min(line.len());
        line.get(from..to).unwrap_or("").trim().to_string()
    };
    let columns: Vec<(String, String, usize)> = (0..starts.len())
        .map(|k| {
            let name: Vec<String> = heads.iter().map(|(_, l)| cut(l, k)).filter(|w| !w.is_empty()).collect();
            (name.join(" "), cut(values, k), values_at)
        })
        .collect();
    // The form is told by its names: a Throughput column, as netperf names THROUGHPUT.
    columns
        .iter()
        .any(|(n, _, _)| n.eq_ignore_ascii_case("Throughput"))
        .then_some(columns)
}

/// `-O` columns read by their names, as `-o`'s: the throughput with its unit, the latencies.
fn parse_human(columns: &[(String, String, usize)]) -> Result<Vec<Metric>, ParseError> {
    let mut throughput = None;
    let mut units = None;
    let mut out = Vec::new();
    for (name, value, n) in columns {
        if name.eq_ignore_ascii_case("Throughput") {
            throughput = Some(number(TOOL, *n, "Throughput", value)?);
        } else if name.eq_ignore_ascii_case("Throughput Units") {
            units = Some(unit(value));
        } else if let Some((m, kind)) = latency(name) {
            out.push(Metric::new(m, number(TOOL, *n, name, value)?, "us", false, kind));
        }
    }
    let units = units.ok_or_else(|| {
        perr(
            TOOL,
            "`-O` output without a `Throughput Units` column: add THROUGHPUT_UNITS to -O's selectors so that the rate's unit is known",
        )
    })?;
    finish(throughput.expect("told by its Throughput column"), &units, out)
}

/// The layout of the default table, from the banner.
#[derive(Clone, Copy)]
enum Table {
    /// Socket sizes, request and response sizes, elapsed, rate (`per sec`).
    RequestResponse,
    /// Socket sizes, message size, elapsed, throughput.
    Stream,
    /// A send line (…, messages, errors, throughput) and a receive line.
    UdpStream,
}

/// The table a banner (line `n`) announces.
fn table_of(banner: &str, n: usize) -> Result<Table, ParseError> {
    let upper = banner.to_ascii_uppercase();
    if upper.contains("REQUEST/RESPONSE") {
        Ok(Table::RequestResponse)
    } else if upper.contains("UDP STREAM") || upper.contains("UDP MAERTS") {
        Ok(Table::UdpStream)
    } else if upper.contains("STREAM") || upper.contains("MAERTS") {
        Ok(Table::Stream)
    } else {
        Err(perr(
            TOOL,
            format!("line {n}: a test whose table kreg does not read: {}", banner.trim()),
        ))
    }
}

/// netperf's default output: the banner, column headings ending with a line of units, a
/// blank line, then the numbers; columns past the throughput (CPU use) are left aside.
fn parse_table(text: &str) -> Result<Vec<Metric>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let b = lines.iter().position(|l| is_banner(l)).unwrap_or(0);
    let table = table_of(lines[b], b + 1)?;
    let blank = lines[b..]
        .iter()
        .position(|l| l.trim().is_empty())
        .map(|i| b + i)
        .ok_or_else(|| perr(TOOL, "the table has no numbers after its headings (truncated)"))?;
    let units_line = lines[b + 1..blank].last().copied().unwrap_or("");
    let data: Vec<(usize, Vec<&str>)> = lines[blank..]
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (blank + i + 1, l.split_whitespace().collect()))
        .collect();
    let cell = |row: usize, col: usize, what: &str| -> Result<f64, ParseError> {
        let Some((n, r)) = data.get(row) else {
            return Err(perr(
                TOOL,
                format!("the table lacks its line {} of numbers (truncated)", row + 1),
            ));
        };
        let v = r
            .get(col)
            .ok_or_else(|| perr(TOOL, format!("line {n}: {} columns, no {what} (truncated)", r.len())))?;
        number(TOOL, *n, what, v)
    };
    let units: Vec<&str> = units_line.split_whitespace().collect();
    match table {
        Table::RequestResponse => {
            if !units_line.contains("per sec") {
                return Err(perr(
                    TOOL,
                    format!("line {blank}: request/response headings without the rate's `per sec`"),
                ));
            }
            finish(cell(0, 5, "the transaction rate")?, "Trans/s", Vec::new())
        }
        Table::Stream => {
            let u = units.get(4).map(|u| unit(u)).unwrap_or_default();
            if !u.contains("/s") {
                return Err(perr(
                    TOOL,
                    format!("line {blank}: stream headings without a throughput unit"),
                ));
            }
            finish(cell(0, 4, "the throughput")?, &u, Vec::new())
        }
        Table::UdpStream => {
            let u = units.get(5).map(|u| unit(u)).unwrap_or_default();
            if !u.contains("/s") {
                return Err(perr(
                    TOOL,
                    format!("line {blank}: stream headings without a throughput unit"),
                ));
            }
            let sent = cell(0, 5, "the sender's throughput")?;
            let received = cell(1, 3, "the receiver's throughput")?;
            let send = Metric::new("send_throughput", sent, &u, true, MetricKind::Throughput);
            finish(received, &u, vec![send])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netperf_commands() {
        let n = Netperf {
            test: NetTest::UdpRr,
            clients: Count::PercentOfCpus(25),
            duration_secs: 30,
            server_on: "sut".into(),
            server_address: "192.0.2.1".into(),
            server_port: 12865,
        };
        assert_eq!(
            n.client_argv().join(" "),
            "netperf -H 192.0.2.1 -p 12865 -t UDP_RR -l 30 -P 0 -- -k THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY"
        );
        assert_eq!(n.server_argv().join(" "), "netserver -D -L 192.0.2.1 -p 12865");
        assert_eq!(
            (
                Count::PercentOfCpus(25).resolve(240),
                Count::PercentOfCpus(25).resolve(2)
            ),
            (60, 1)
        );
    }
}
