//! /proc/schedstat, versions 15, 16 and 17 (Documentation/scheduler/sched-stats.rst):
//! parsing, the difference between two snapshots (per CPU, per domain, summed over CPUs),
//! rates per second and the derived figures `perf sched stats` prints. Pure.

use crate::Error;
mod render;

pub use render::render_diff;

/// Per-CPU counters, in file order.
pub const CPU_FIELDS: [&str; 9] = [
    "yld_count",
    "array_exp",
    "sched_count",
    "sched_goidle",
    "ttwu_count",
    "ttwu_local",
    "rq_cpu_time",
    "run_delay",
    "pcount",
];

/// What a per-CPU counter counts and in what unit (the kernel's sched-stats.rst):
/// (unit, meaning). The two times are nanoseconds since 2.6.23.
pub fn cpu_field_meaning(field: &str) -> (&'static str, &'static str) {
    match field {
        "yld_count" => ("calls", "sched_yield() calls"),
        "array_exp" => ("events", "legacy, always 0"),
        "sched_count" => ("calls", "schedule() calls"),
        "sched_goidle" => ("calls", "schedule() calls that left the CPU idle"),
        "ttwu_count" => ("wakeups", "try_to_wake_up() calls"),
        "ttwu_local" => ("wakeups", "wakeups of a task last run on the waking CPU"),
        "rq_cpu_time" => ("ns", "time tasks ran on this CPU"),
        "run_delay" => ("ns", "time tasks waited on a runqueue to run"),
        "pcount" => ("timeslices", "timeslices run"),
        _ => ("", ""),
    }
}

/// Load-balance counters per idle type: v15 and v16.
const LB_V15: [&str; 8] = [
    "lb_count",
    "lb_balanced",
    "lb_failed",
    "lb_imbalance",
    "lb_gained",
    "lb_hot_gained",
    "lb_nobusyq",
    "lb_nobusyg",
];
/// v17 replaces lb_imbalance with four counters.
const LB_V17: [&str; 11] = [
    "lb_count",
    "lb_balanced",
    "lb_failed",
    "lb_imbalance_load",
    "lb_imbalance_util",
    "lb_imbalance_task",
    "lb_imbalance_misfit",
    "lb_gained",
    "lb_hot_gained",
    "lb_nobusyq",
    "lb_nobusyg",
];
const TAIL: [&str; 12] = [
    "alb_count",
    "alb_failed",
    "alb_pushed",
    "sbe_count",
    "sbe_balanced",
    "sbe_pushed",
    "sbf_count",
    "sbf_balanced",
    "sbf_pushed",
    "ttwu_wake_remote",
    "ttwu_move_affine",
    "ttwu_move_balance",
];

/// The idle types in the order a version prints them (v16 moved busy first).
fn idle_types(version: u32) -> [&'static str; 3] {
    if version >= 16 {
        ["busy", "idle", "newidle"]
    } else {
        ["idle", "busy", "newidle"]
    }
}

/// Names of a domain line's counters for `version`, e.g. "busy.lb_count", "alb_count".
pub fn domain_fields(version: u32) -> Vec<String> {
    let lb: &[&str] = if version >= 17 { &LB_V17 } else { &LB_V15 };
    let mut out = Vec::new();
    for t in idle_types(version) {
        out.extend(lb.iter().map(|f| format!("{t}.{f}")));
    }
    out.extend(TAIL.iter().map(|f| f.to_string()));
    out
}

#[derive(Debug, Clone, PartialEq)]
pub struct Domain {
    pub index: u32,
    /// The domain's name (v17: SMT, MC, PKG, NUMA…).
    pub name: Option<String>,
    pub cpumask: String,
    pub values: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cpu {
    pub cpu: u32,
    pub values: [u64; 9],
    pub domains: Vec<Domain>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub version: u32,
    /// Jiffies.
    pub timestamp: u64,
    pub cpus: Vec<Cpu>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("/proc/schedstat line {line}: {message}")]
pub struct SchedstatError {
    pub line: usize,
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> SchedstatError {
    SchedstatError {
        line,
        message: message.into(),
    }
}

fn numbers(line: usize, fields: &[&str]) -> Result<Vec<u64>, SchedstatError> {
    fields
        .iter()
        .map(|f| {
            f.parse::<u64>()
                .map_err(|_| err(line, format!("{f:?} is not a counter")))
        })
        .collect()
}

/// Line `n`, `cpuN` and its nine counters (`c`: what follows "cpu").
fn cpu_line(n: usize, c: &str, words: &[&str]) -> Result<Cpu, SchedstatError> {
    let cpu: u32 = c
        .parse()
        .map_err(|_| err(n, format!("{:?} is not cpuN", format!("cpu{c}"))))?;
    let vals = numbers(n, &words[1..])?;
    if vals.len() != 9 {
        return Err(err(n, format!("cpu{cpu} has {} counters, expected 9", vals.len())));
    }
    let mut values = [0u64; 9];
    values.copy_from_slice(&vals);
    Ok(Cpu {
        cpu,
        values,
        domains: Vec::new(),
    })
}

/// Line `n`, `domainN` of version `v` (`d`: what follows "domain"): its name (v17), its CPU
/// mask and its counters.
fn domain_line(n: usize, v: u32, d: &str, words: &[&str]) -> Result<Domain, SchedstatError> {
    let index: u32 = d
        .parse()
        .map_err(|_| err(n, format!("{:?} is not domainN", format!("domain{d}"))))?;
    let (name, cpumask, rest) = if v >= 17 {
        (
            words.get(1).map(|s| s.to_string()),
            words.get(2).unwrap_or(&""),
            words.get(3..).unwrap_or(&[]),
        )
    } else {
        (None, words.get(1).unwrap_or(&""), words.get(2..).unwrap_or(&[]))
    };
    let values = numbers(n, rest)?;
    let want = domain_fields(v).len();
    if values.len() != want {
        return Err(err(
            n,
            format!("domain{index} has {} counters, version {v} has {want}", values.len()),
        ));
    }
    Ok(Domain {
        index,
        name,
        cpumask: cpumask.to_string(),
        values,
    })
}

pub fn parse(text: &str) -> Result<Snapshot, SchedstatError> {
    let mut version = None;
    let mut timestamp = None;
    let mut cpus: Vec<Cpu> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let words: Vec<&str> = raw.split_whitespace().collect();
        let Some(first) = words.first() else { continue };
        if *first == "version" {
            let v: u32 = words
                .get(1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| err(n, "bad version line"))?;
            if !(15..=17).contains(&v) {
                return Err(err(n, format!("version {v} is not supported (15, 16, 17)")));
            }
            version = Some(v);
        } else if *first == "timestamp" {
            timestamp = Some(
                words
                    .get(1)
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| err(n, "bad timestamp line"))?,
            );
        } else if let Some(c) = first.strip_prefix("cpu") {
            cpus.push(cpu_line(n, c, &words)?);
        } else if let Some(d) = first.strip_prefix("domain") {
            let v = version.ok_or_else(|| err(n, "a domain line before the version line"))?;
            let domain = domain_line(n, v, d, &words)?;
            let cpu = cpus
                .last_mut()
                .ok_or_else(|| err(n, "a domain line before any cpu line"))?;
            cpu.domains.push(domain);
        } else {
            return Err(err(n, format!("unexpected line starting with {first:?}")));
        }
    }
    let version = version.ok_or_else(|| err(1, "no version line"))?;
    if cpus.is_empty() {
        return Err(err(1, "no cpu lines (truncated?)"));
    }
    Ok(Snapshot {
        version,
        timestamp: timestamp.unwrap_or(0),
        cpus,
    })
}

/// after − before, per CPU and per domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub version: u32,
    pub jiffies: u64,
    pub cpus: Vec<Cpu>,
}

pub fn diff(before: &Snapshot, after: &Snapshot) -> Result<Diff, Error> {
    if before.version != after.version {
        return Err(Error::unreadable(format!(
            "versions differ: {} before, {} after",
            before.version, after.version
        )));
    }
    if after.timestamp < before.timestamp {
        return Err(Error::unreadable("the second snapshot is older than the first"));
    }
    let mut cpus = Vec::new();
    for a in &after.cpus {
        let b = before
            .cpus
            .iter()
            .find(|c| c.cpu == a.cpu)
            .ok_or_else(|| Error::unreadable(format!("cpu{} is only in the second snapshot", a.cpu)))?;
        let mut values = [0u64; 9];
        for (i, v) in values.iter_mut().enumerate() {
            *v = a.values[i]
                .checked_sub(b.values[i])
                .ok_or_else(|| Error::unreadable(format!("cpu{} {} went backwards", a.cpu, CPU_FIELDS[i])))?;
        }
        let mut domains = Vec::new();
        for ad in &a.domains {
            let bd = b
                .domains
                .iter()
                .find(|d| d.index == ad.index)
                .ok_or_else(|| Error::unreadable(format!("cpu{} domain{} is new", a.cpu, ad.index)))?;
            let values = ad
                .values
                .iter()
                .zip(&bd.values)
                .map(|(x, y)| {
                    x.checked_sub(*y)
                        .ok_or_else(|| Error::unreadable(format!("cpu{} domain{} went backwards", a.cpu, ad.index)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            domains.push(Domain {
                index: ad.index,
                name: ad.name.clone(),
                cpumask: ad.cpumask.clone(),
                values,
            });
        }
        cpus.push(Cpu {
            cpu: a.cpu,
            values,
            domains,
        });
    }
    Ok(Diff {
        version: after.version,
        jiffies: after.timestamp - before.timestamp,
        cpus,
    })
}

impl Diff {
    /// Per-CPU counters summed over all CPUs.
    pub fn cpu_total(&self) -> [u64; 9] {
        let mut t = [0u64; 9];
        for c in &self.cpus {
            for (i, v) in c.values.iter().enumerate() {
                t[i] += v;
            }
        }
        t
    }

    /// Each domain level's counters summed over all CPUs: (index, name, values).
    pub fn domain_totals(&self) -> Vec<(u32, Option<String>, Vec<u64>)> {
        let mut out: Vec<(u32, Option<String>, Vec<u64>)> = Vec::new();
        for c in &self.cpus {
            for d in &c.domains {
                match out.iter_mut().find(|(i, _, _)| *i == d.index) {
                    Some((_, _, v)) => v.iter_mut().zip(&d.values).for_each(|(a, b)| *a += b),
                    None => out.push((d.index, d.name.clone(), d.values.clone())),
                }
            }
        }
        out.sort_by_key(|x| x.0);
        out
    }

    /// The figures `perf sched stats` derives, over all CPUs: (name, value, unit).
    pub fn derived(&self) -> Vec<(String, f64, &'static str)> {
        let t = self.cpu_total();
        let ratio = |a: u64, b: u64| if b == 0 { f64::NAN } else { a as f64 / b as f64 };
        let mut out = vec![
            ("avg wait per timeslice".to_string(), ratio(t[7], t[8]) / 1000.0, "us"),
            (
                "avg runtime per timeslice".to_string(),
                ratio(t[6], t[8]) / 1000.0,
                "us",
            ),
            (
                "schedule() left the CPU idle".to_string(),
                100.0 * ratio(t[3], t[2]),
                "%",
            ),
            ("wakeups on the waking CPU".to_string(), 100.0 * ratio(t[5], t[4]), "%"),
        ];
        let fields = domain_fields(self.version);
        for (index, name, v) in self.domain_totals() {
            let label = name.unwrap_or_else(|| format!("domain{index}"));
            for it in idle_types(self.version) {
                let get = |f: &str| {
                    fields
                        .iter()
                        .position(|x| x == &format!("{it}.{f}"))
                        .map(|i| v[i])
                        .unwrap_or(0)
                };
                out.push((
                    format!("{label} {it}: load-balance attempts that failed"),
                    100.0 * ratio(get("lb_failed"), get("lb_count")),
                    "%",
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

/// A derived figure: (name, value, unit).
pub type Derived = (String, f64, &'static str);

/// Per-CPU counters summed over CPUs and averaged over several diffs (one per job), and
/// the derived figures from the summed counters.
pub fn mean_totals(diffs: &[Diff]) -> Option<([f64; 9], Vec<Derived>)> {
    let first = diffs.first()?;
    let mut sum = [0f64; 9];
    let mut all = Diff {
        version: first.version,
        jiffies: 0,
        cpus: Vec::new(),
    };
    for d in diffs {
        for (i, v) in d.cpu_total().iter().enumerate() {
            sum[i] += *v as f64;
        }
        all.jiffies += d.jiffies;
        // Totals and domain totals do not look at CPU numbers: pooling all CPUs of all
        // diffs gives the summed counters the derived figures need.
        all.cpus.extend(d.cpus.iter().cloned());
    }
    let n = diffs.len() as f64;
    Some((sum.map(|v| v / n), all.derived()))
}
