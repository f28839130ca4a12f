//! Turns workload output into named metrics. Malformed or truncated output is an error that
//! names the tool and what was missing, never a zero.

use crate::scenario::MetricPattern;

#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{tool}: {message}")]
pub struct ParseError {
    pub tool: String,
    pub message: String,
}

fn perr(tool: &str, message: impl Into<String>) -> ParseError {
    ParseError {
        tool: tool.into(),
        message: message.into(),
    }
}

/// rt-tests hackbench: the `Time: SECONDS` line.
pub fn hackbench(stdout: &str) -> Result<Vec<Metric>, ParseError> {
    let mut found = None;
    for (n, line) in stdout.lines().enumerate() {
        if let Some(rest) = line.trim().strip_prefix("Time:") {
            let v: f64 = rest.trim().parse().map_err(|_| {
                perr(
                    "hackbench",
                    format!(
                        "line {}: `Time:` is followed by {:?}, not a number of seconds",
                        n + 1,
                        rest.trim()
                    ),
                )
            })?;
            if !v.is_finite() || v < 0.0 {
                return Err(perr("hackbench", format!("line {}: impossible time {v}", n + 1)));
            }
            found = Some(v);
        }
    }
    let time = found.ok_or_else(|| {
        perr(
            "hackbench",
            "no `Time:` line in the output (truncated, or the run failed)",
        )
    })?;
    Ok(vec![Metric {
        name: "time".into(),
        value: time,
        unit: "s".into(),
        higher_is_better: false,
    }])
}

/// A `command` workload: each metric's regex is searched in stdout, then stderr.
pub fn command(patterns: &[MetricPattern], stdout: &str, stderr: &str) -> Result<Vec<Metric>, ParseError> {
    let mut out = Vec::new();
    for p in patterns {
        let re = regex::Regex::new(&p.regex).map_err(|e| perr("command", format!("metric {}: {e}", p.name)))?;
        let caps = re.captures(stdout).or_else(|| re.captures(stderr)).ok_or_else(|| {
            perr(
                "command",
                format!("metric {}: /{}/ matched nothing in the output", p.name, p.regex),
            )
        })?;
        let text = caps.get(1).map(|m| m.as_str()).unwrap_or("");
        let value: f64 = text.trim().parse().map_err(|_| {
            perr(
                "command",
                format!("metric {}: captured {text:?}, which is not a number", p.name),
            )
        })?;
        if !value.is_finite() {
            return Err(perr(
                "command",
                format!("metric {}: captured {text:?}, which is not finite", p.name),
            ));
        }
        out.push(Metric {
            name: p.name.clone(),
            value,
            unit: p.unit.clone(),
            higher_is_better: p.higher_is_better,
        });
    }
    Ok(out)
}

/// The `version N` line of /proc/schedstat.
pub fn schedstat_version(raw: &str) -> Option<u32> {
    raw.lines().next()?.strip_prefix("version ")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/");
        std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
    }

    fn check_hackbench(input: &str, expected: Result<f64, &str>) {
        let got = hackbench(input).map(|m| m[0].value).map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(|s| s.to_string()));
    }

    #[test]
    fn hackbench_real_outputs() {
        check_hackbench(&fixture("hackbench.6.12.txt"), Ok(11.786));
        let t61 = fixture("hackbench.6.1.txt");
        let want: f64 = t61
            .lines()
            .find_map(|l| l.strip_prefix("Time: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        check_hackbench(&t61, Ok(want));
        assert!(hackbench(&fixture("hackbench-threads-pipe.6.12.txt")).is_ok());
    }

    #[test]
    fn hackbench_truncated_and_garbled() {
        check_hackbench(
            "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\n",
            Err("hackbench: no `Time:` line in the output (truncated, or the run failed)"),
        );
        check_hackbench(
            "Time: 1.2.3\n",
            Err("hackbench: line 1: `Time:` is followed by \"1.2.3\", not a number of seconds"),
        );
        check_hackbench(
            "",
            Err("hackbench: no `Time:` line in the output (truncated, or the run failed)"),
        );
    }

    #[test]
    fn command_metrics() {
        let p = vec![MetricPattern {
            name: "rps".into(),
            regex: r"rps: ([0-9.]+)".into(),
            unit: "req/s".into(),
            higher_is_better: true,
        }];
        assert_eq!(command(&p, "x\nrps: 12.5\n", "").unwrap()[0].value, 12.5);
        assert_eq!(command(&p, "", "rps: 3\n").unwrap()[0].value, 3.0);
        assert!(command(&p, "nothing", "")
            .unwrap_err()
            .to_string()
            .contains("matched nothing"));
    }
}
