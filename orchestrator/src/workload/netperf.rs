//! netperf omni tests (TCP_RR, UDP_RR, …) run with keyval output selectors, as kreg runs
//! them: `-- -k THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY`.
//! Each line is `KEY=VALUE`; latencies are in microseconds.

use super::common::{ip_address, Count};
use super::HostRefs;
use crate::parse::{number, perr, unique, Metric, MetricKind, ParseError};
use crate::yaml::cx::{Cx, Fields};

/// The keys of a netperf workload, besides the common ones.
pub const KEYS: &[&str] = &["test", "clients", "duration", "server"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetTest {
    UdpRr,
    TcpRr,
}

impl NetTest {
    pub fn name(self) -> &'static str {
        match self {
            NetTest::UdpRr => "UDP_RR",
            NetTest::TcpRr => "TCP_RR",
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
            SELECTORS.into(),
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
        let test = cx
            .required(f, "test", what)
            .and_then(|n| match cx.string(n, "test")?.as_str() {
                "UDP_RR" => Some(NetTest::UdpRr),
                "TCP_RR" => Some(NetTest::TcpRr),
                other => {
                    cx.error(
                        n,
                        format!("test: `{other}` is not supported; expected UDP_RR or TCP_RR"),
                    );
                    None
                }
            });
        let clients = match f.get("clients") {
            Some(n) => Count::load(cx, n, "clients", false),
            None => Some(Count::Fixed(1)),
        };
        let duration = cx.uint_or(f, "duration", "duration (-l)", (1, 86400), 30);
        let server = cx.required(f, "server", what).and_then(|n| {
            let sf = cx.map(n, "the netperf server", &["on", "address", "port"])?;
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

/// The output selectors kreg asks netperf for.
pub const SELECTORS: &str = "THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY";

pub fn parse(text: &str) -> Result<Vec<Metric>, ParseError> {
    let mut out = Vec::new();
    let mut units = String::from("trans/s");
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
            "THROUGHPUT_UNITS" => units = value.trim().to_string(),
            "MEAN_LATENCY" => out.push(Metric::new(
                "lat_mean_us",
                number(TOOL, n + 1, key, value)?,
                "us",
                false,
                MetricKind::Mean,
            )),
            "P50_LATENCY" | "P90_LATENCY" | "P99_LATENCY" => {
                let p = &key[1..3];
                out.push(Metric::new(
                    format!("lat_p{p}_us"),
                    number(TOOL, n + 1, key, value)?,
                    "us",
                    false,
                    MetricKind::Latency,
                ))
            }
            _ => {}
        }
    }
    let t = throughput.ok_or_else(|| {
        perr(
            TOOL,
            "no THROUGHPUT= line (truncated, or netperf ran without `-k` selectors)",
        )
    })?;
    let name = if units.to_ascii_lowercase().starts_with("trans") {
        "transactions_per_s"
    } else {
        "throughput"
    };
    out.insert(0, Metric::new(name, t, &units, true, MetricKind::Throughput));
    unique(TOOL, out)
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
