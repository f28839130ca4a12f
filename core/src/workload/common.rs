//! What several kinds share: tool flags checked against a table, CPU lists, and counts of
//! clients relative to the SUT's CPUs.

use crate::yaml::cx::{Cx, Fields};
use crate::yaml::{Kind, Node};

/// Validated command-line flags of a tool, in a fixed order: (flag, value).
pub type Flags = Vec<(String, Option<String>)>;

pub(crate) fn push_flags(argv: &mut Vec<String>, flags: &Flags) {
    for (flag, value) in flags {
        argv.push(flag.clone());
        if let Some(v) = value {
            argv.push(v.clone());
        }
    }
}

/// A numeric flag: (YAML key, tool flag, min, max).
pub(crate) type NumFlag = (&'static str, &'static str, u64, u64);

/// Each key of `table` present in `f`, checked against its range, as a flag and value.
pub(crate) fn num_flags(cx: &mut Cx, f: &Fields, table: &[NumFlag], out: &mut Flags) -> bool {
    let mut ok = true;
    for (key, flag, min, max) in table {
        if let Some(n) = f.get(key) {
            match cx.uint(n, &format!("{key} ({flag})"), *min, *max) {
                Some(v) => out.push((flag.to_string(), Some(v.to_string()))),
                None => ok = false,
            }
        }
    }
    ok
}

/// Each boolean key of `table` that is true in `f`, as a flag without a value.
pub(crate) fn bool_flags(cx: &mut Cx, f: &Fields, table: &[(&str, &str)], out: &mut Flags) -> bool {
    let mut ok = true;
    for (key, flag) in table {
        if let Some(n) = f.get(key) {
            match cx.boolean(n, &format!("{key} ({flag})")) {
                Some(true) => out.push((flag.to_string(), None)),
                Some(false) => {}
                None => ok = false,
            }
        }
    }
    ok
}

/// A CPU list as schbench and taskset take it ("0-3,8,10-11"), or `auto`.
pub(crate) fn is_cpu_list(s: &str) -> bool {
    s == "auto"
        || (!s.is_empty()
            && s.split(',').all(|part| {
                let mut ends = part.splitn(2, '-').map(|n| n.parse::<u32>());
                match (ends.next(), ends.next()) {
                    (Some(Ok(a)), Some(Ok(b))) => a <= b,
                    (Some(Ok(_)), None) => true,
                    _ => false,
                }
            }))
}

/// An IP address, or an error at the node.
pub(crate) fn ip_address(cx: &mut Cx, n: &Node, what: &str) -> Option<String> {
    let s = cx.string(n, what)?;
    if s.parse::<std::net::IpAddr>().is_err() {
        cx.error(n, format!("{what}: {s:?} is not an IP address"));
        return None;
    }
    Some(s)
}

/// A count of client processes or users, absolute or relative to the SUT's CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Fixed(u32),
    /// Percent of the SUT's CPUs (seed 002: 25/50/75/100%), at least 1.
    PercentOfCpus(u32),
    /// Per SUT CPU (HammerDB virtual users "per CPU").
    PerCpu(f64),
}

impl Count {
    /// `8 clients`, `clients: 50% of the SUT's CPUs`, `clients: 2 per SUT CPU`.
    pub fn describe(self, what: &str) -> String {
        match self {
            Count::Fixed(n) => format!("{n} {what}"),
            Count::PercentOfCpus(p) => format!("{what}: {p}% of the SUT's CPUs"),
            Count::PerCpu(f) => format!("{what}: {f} per SUT CPU"),
        }
    }

    pub fn resolve(self, sut_cpus: u32) -> u32 {
        let n = match self {
            Count::Fixed(n) => n as f64,
            Count::PercentOfCpus(p) => (sut_cpus as f64 * p as f64 / 100.0).round(),
            Count::PerCpu(f) => (sut_cpus as f64 * f).round(),
        };
        (n as u32).max(1)
    }

    /// `8`, `50%` (of the SUT's CPUs) or, where `allow_per_cpu`, `2/cpu` (per SUT CPU).
    pub(crate) fn load(cx: &mut Cx, node: &Node, what: &str, allow_per_cpu: bool) -> Option<Count> {
        let text = match &node.kind {
            Kind::Scalar(s, _) => s.trim().to_string(),
            _ => String::new(),
        };
        let parsed = if let Some(p) = text.strip_suffix('%') {
            p.trim()
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=1000).contains(p))
                .map(Count::PercentOfCpus)
        } else if let Some(f) = text.strip_suffix("/cpu").filter(|_| allow_per_cpu) {
            f.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| *f > 0.0 && *f <= 100.0)
                .map(Count::PerCpu)
        } else {
            text.parse::<u32>()
                .ok()
                .filter(|n| (1..=100_000).contains(n))
                .map(Count::Fixed)
        };
        if parsed.is_none() {
            let forms = if allow_per_cpu {
                "a count (8), a % of the SUT's CPUs (50%) or a number per CPU (2/cpu)"
            } else {
                "a count (8) or a % of the SUT's CPUs (50%)"
            };
            cx.expected(node, what, forms);
        }
        parsed
    }
}

/// A whole-number option: (key, what messages call it, min, max, default).
pub(crate) type UintOption = (&'static str, &'static str, u64, u64, u32);

/// Each option of `table`, as `Cx::uint_or` reads it.
pub(crate) fn uints<const N: usize>(cx: &mut Cx, f: &Fields, table: [UintOption; N]) -> [Option<u32>; N] {
    table.map(|(key, what, min, max, default)| cx.uint_or(f, key, what, (min, max), default))
}
