//! /proc/interrupts around a job: the count of each interrupt on each CPU before and after,
//! their differences per CPU (kept as a table) and in total, with the rescheduling (RES)
//! and function-call (CAL) IPIs as metrics of their own.

use crate::parse::{Metric, MetricKind};
use crate::Error;

/// One snapshot: the CPU columns as headed ("CPU0"…) and each row's counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub cpus: Vec<String>,
    /// (name, counts per CPU column, description).
    pub rows: Vec<(String, Vec<u64>, String)>,
}

/// Reads /proc/interrupts as the kernel prints it. Rows with fewer counts than CPUs (ERR
/// and MIS, machine-wide) keep what they have.
pub fn parse(text: &str) -> Result<Snapshot, Error> {
    let mut lines = text.lines();
    let header = lines.next().ok_or(Error::unreadable("empty /proc/interrupts"))?;
    let cpus: Vec<String> = header.split_whitespace().map(str::to_string).collect();
    if cpus.is_empty() || !cpus.iter().all(|c| c.starts_with("CPU")) {
        return Err(Error::unreadable(format!(
            "/proc/interrupts: unexpected header {header:?}"
        )));
    }
    let mut rows = Vec::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::new();
        while counts.len() < cpus.len() {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push(n);
                    words.next();
                }
                None => break,
            }
        }
        let desc = words.collect::<Vec<_>>().join(" ");
        rows.push((name.trim().to_string(), counts, desc));
    }
    Ok(Snapshot { cpus, rows })
}

/// What a job's interrupts come to: the per-CPU table and the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// One line per interrupt that fired: name, per-CPU deltas, total, description.
    pub table: String,
    pub metrics: Vec<Metric>,
}

/// The counts between two snapshots, by CPU name (a CPU in only one of them is left out,
/// and said in the table).
pub fn delta(before: &Snapshot, after: &Snapshot) -> Delta {
    let cpus: Vec<&String> = after.cpus.iter().filter(|c| before.cpus.contains(c)).collect();
    let col = |s: &Snapshot, cpu: &String| s.cpus.iter().position(|c| c == cpu);
    let mut table = format!(
        "{:>6} {} {:>12}\n",
        "",
        cpus.iter().map(|c| format!("{c:>10}")).collect::<String>(),
        "total"
    );
    let (mut total, mut res, mut cal) = (0u64, None, None);
    for (name, counts, desc) in &after.rows {
        let Some((_, old, _)) = before.rows.iter().find(|(n, _, _)| n == name) else {
            continue;
        };
        let per_cpu: Vec<u64> = cpus
            .iter()
            .map(|cpu| {
                let now = col(after, cpu).and_then(|i| counts.get(i)).copied().unwrap_or(0);
                let was = col(before, cpu).and_then(|i| old.get(i)).copied().unwrap_or(0);
                // A counter that went down was reset (a CPU that went offline and back).
                now.saturating_sub(was)
            })
            .collect();
        // A row with one count for the whole machine (ERR, MIS) has no per-CPU columns.
        let machine_wide = counts.len() < after.cpus.len();
        let sum: u64 = if machine_wide {
            counts.iter().sum::<u64>().saturating_sub(old.iter().sum())
        } else {
            per_cpu.iter().sum()
        };
        match name.as_str() {
            "RES" => res = Some(sum),
            "CAL" => cal = Some(sum),
            _ => {}
        }
        // ERR and MIS count errors, not interrupts.
        if !matches!(name.as_str(), "ERR" | "MIS") {
            total += sum;
        }
        if sum > 0 {
            let cells = if machine_wide {
                format!("{:>w$}", "(whole machine)", w = 10 * cpus.len())
            } else {
                per_cpu.iter().map(|v| format!("{v:>10}")).collect::<String>()
            };
            table.push_str(&format!("{name:>6}: {cells} {sum:>12}  {desc}\n"));
        }
    }
    let missing: Vec<&String> = before
        .cpus
        .iter()
        .chain(&after.cpus)
        .filter(|c| !cpus.contains(c))
        .collect();
    if !missing.is_empty() {
        table.push_str(&format!(
            "(not in both snapshots, left out: {})\n",
            missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
        ));
    }
    let mut metrics = vec![Metric::new("interrupts", total as f64, "", false, MetricKind::Count)];
    if let Some(r) = res {
        metrics.push(Metric::new("ipi_resched", r as f64, "", false, MetricKind::Count));
    }
    if let Some(c) = cal {
        metrics.push(Metric::new("ipi_call", c as f64, "", false, MetricKind::Count));
    }
    Delta { table, metrics }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "           CPU0       CPU1       CPU2       CPU3       \n  0:         36          0          0          0   IO-APIC   2-edge      timer\n 24:          1          0          0          5  PCI-MSI 65536-edge      virtio0-input.0\nNMI:          0          0          0          0   Non-maskable interrupts\nLOC:   10890210   11232426       500        600   Local timer interrupts\nRES:    1621675    1875530        10         20   Rescheduling interrupts\nCAL:   11302135    8335815        30         40   Function call interrupts\nERR:          0\nMIS:          0\n";

    #[test]
    fn counts_per_cpu_and_in_total_with_the_ipis_named() {
        let after = BEFORE
            .replace(
                "10890210   11232426       500        600",
                "10890310   11232436       501        600",
            )
            .replace(
                "1621675    1875530        10         20",
                "1621775    1875530        12         20",
            )
            .replace(
                "11302135    8335815        30         40",
                "11302135    8335825        30         41",
            )
            .replace("ERR:          0", "ERR:          3");
        let (b, a) = (parse(BEFORE).unwrap(), parse(&after).unwrap());
        assert_eq!(b.cpus.len(), 4);
        assert_eq!(
            b.rows[2],
            ("NMI".into(), vec![0, 0, 0, 0], "Non-maskable interrupts".into())
        );
        assert_eq!(b.rows[6], ("ERR".into(), vec![0], String::new()));
        let d = delta(&b, &a);
        let m: Vec<(String, f64)> = d.metrics.iter().map(|m| (m.name.clone(), m.value)).collect();
        assert_eq!(
            m,
            [
                ("interrupts".into(), 224.0),
                ("ipi_resched".into(), 102.0),
                ("ipi_call".into(), 11.0)
            ]
        );
        assert!(
            d.table
                .contains("   RES:        100         0         2         0          102  Rescheduling interrupts"),
            "{}",
            d.table
        );
        assert!(
            d.table
                .contains("   ERR:                          (whole machine)            3"),
            "{}",
            d.table
        );
        assert!(!d.table.contains("NMI"), "rows that did not fire are left out");
    }

    #[test]
    fn a_cpu_taken_offline_is_left_out_and_said() {
        // CPU1 offline in the second snapshot: its column is gone.
        let after = "           CPU0       CPU2       CPU3       \nRES:    1621680        10         25   Rescheduling interrupts\n";
        let d = delta(&parse(BEFORE).unwrap(), &parse(after).unwrap());
        assert_eq!(d.metrics[1].value, 10.0);
        assert!(d.table.contains("left out: CPU1"), "{}", d.table);
        assert!(parse("garbage\n").is_err());
    }
}
