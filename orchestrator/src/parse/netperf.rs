//! netperf omni tests (TCP_RR, UDP_RR, …) run with keyval output selectors, as kreg runs
//! them: `-- -k THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY`.
//! Each line is `KEY=VALUE`; latencies are in microseconds.

use super::{number, perr, unique, Metric, ParseError};

const TOOL: &str = "netperf";

/// The output selectors kreg asks netperf for.
pub const NETPERF_SELECTORS: &str = "THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY";

pub fn netperf(text: &str) -> Result<Vec<Metric>, ParseError> {
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
            )),
            "P50_LATENCY" | "P90_LATENCY" | "P99_LATENCY" => {
                let p = &key[1..3];
                out.push(Metric::new(
                    format!("lat_p{p}_us"),
                    number(TOOL, n + 1, key, value)?,
                    "us",
                    false,
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
    out.insert(0, Metric::new(name, t, &units, true));
    unique(TOOL, out)
}
