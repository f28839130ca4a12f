//! `perf stat`, system-wide on the SUT, bracketing the measured phase: started before it in
//! interval mode (its first interval line says the counters are open), interrupted after it
//! (perf prints the last, partial interval), and the intervals summed per event. An event
//! the machine cannot count (`<not supported>`, `<not counted>`) is said so and gives no
//! metric: never a zero.

use crate::Error;
use std::collections::BTreeMap;

use crate::parse::{Metric, MetricKind};

/// The events counted.
pub const EVENTS: &[&str] = &[
    "context-switches",
    "cpu-migrations",
    "cycles",
    "instructions",
    "cache-misses",
];

/// Milliseconds between perf's interval lines.
pub const INTERVAL_MS: u32 = 250;

/// The command: system-wide, CSV, interval mode.
pub fn argv() -> Vec<String> {
    let mut v: Vec<String> = ["perf", "stat", "-a", "-x", ","]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.push("-I".into());
    v.push(INTERVAL_MS.to_string());
    v.push("-e".into());
    v.push(EVENTS.join(","));
    v
}

/// Whether perf has printed an interval line (its counters are open).
pub fn counting(stderr: &str) -> bool {
    stderr.lines().any(|l| parse_line(l).is_some())
}

/// What one event came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Count {
    Counted(u64),
    /// What perf printed instead of a number (`<not supported>`, `<not counted>`).
    Unavailable(String),
}

/// An interval line `time,value,unit,event,run time,percent,…`.
fn parse_line(line: &str) -> Option<(String, Count)> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() < 4 || f[0].trim().parse::<f64>().is_err() {
        return None;
    }
    let event = f[3].trim();
    if event.is_empty() {
        return None;
    }
    let value = f[1].trim();
    let count = match value.parse::<f64>() {
        Ok(v) if v >= 0.0 => Count::Counted(v.round() as u64),
        _ if value.starts_with('<') => Count::Unavailable(value.to_string()),
        _ => return None,
    };
    Some((event.to_string(), count))
}

/// Each event's total over the intervals, in the order perf printed them first. An event
/// unavailable in any interval is unavailable.
pub fn totals(stderr: &str) -> Result<Vec<(String, Count)>, Error> {
    let mut order = Vec::new();
    let mut sums: BTreeMap<String, Count> = BTreeMap::new();
    for (event, count) in stderr.lines().filter_map(parse_line) {
        let slot = sums.entry(event.clone()).or_insert_with(|| {
            order.push(event.clone());
            Count::Counted(0)
        });
        *slot = match (&*slot, count) {
            (Count::Counted(a), Count::Counted(b)) => Count::Counted(a + b),
            (Count::Unavailable(u), _) => Count::Unavailable(u.clone()),
            (_, Count::Unavailable(u)) => Count::Unavailable(u),
        };
    }
    if order.is_empty() {
        let said = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("nothing");
        return Err(Error::unreadable(format!(
            "perf stat printed no counts (it said: {said})"
        )));
    }
    Ok(order
        .into_iter()
        .map(|e| {
            let c = sums.remove(&e).expect("summed");
            (e, c)
        })
        .collect())
}

/// The metric name of an event: `perf_context_switches`.
pub fn metric_name(event: &str) -> String {
    let clean: String = event
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("perf_{}", clean.trim_matches('_'))
}

/// What a job keeps of `perf stat`: the table of every event, the metrics of the events
/// counted, and the events it could not count (`cycles <not supported>`).
pub struct Summary {
    pub table: String,
    pub metrics: Vec<Metric>,
    pub uncounted: Vec<String>,
}

/// The table kept with the job, the metrics of the events counted, the others named.
pub fn summarize(totals: &[(String, Count)]) -> Summary {
    let mut table = String::from("event                    total\n");
    let (mut metrics, mut uncounted) = (Vec::new(), Vec::new());
    for (event, count) in totals {
        match count {
            Count::Counted(n) => {
                table.push_str(&format!("{event:<24} {n}\n"));
                metrics.push(Metric::new(metric_name(event), *n as f64, "", false, MetricKind::Count));
            }
            Count::Unavailable(why) => {
                table.push_str(&format!("{event:<24} {why} (no metric)\n"));
                uncounted.push(format!("{event} {why}"));
            }
        }
    }
    Summary {
        table,
        metrics,
        uncounted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "     0.250902134,1151,,context-switches,502160017,100.00,,\n\
                       \x20    0.250902134,9,,cpu-migrations,502159308,100.00,,\n\
                       \x20    0.250902134,<not supported>,,cycles,0,100.00,,\n\
                       \x20    0.501241962,1189,,context-switches,500662224,100.00,,\n\
                       \x20    0.501241962,11,,cpu-migrations,500661708,100.00,,\n\
                       \x20    0.501241962,<not supported>,,cycles,0,100.00,,\n\
                       \x20    0.587939241,382,,context-switches,173408822,100.00,,1.23,M/sec\n\
                       \x20    0.587939241,3,,cpu-migrations,173409365,100.00,,\n\
                       \x20    0.587939241,<not supported>,,cycles,0,100.00,,\n";

    #[test]
    fn intervals_are_summed_and_unsupported_events_give_no_metric() {
        let t = totals(OUT).unwrap();
        assert_eq!(
            t,
            vec![
                ("context-switches".to_string(), Count::Counted(2722)),
                ("cpu-migrations".to_string(), Count::Counted(23)),
                ("cycles".to_string(), Count::Unavailable("<not supported>".into())),
            ]
        );
        let Summary {
            table,
            metrics,
            uncounted,
        } = summarize(&t);
        assert!(
            table.contains("cycles                   <not supported> (no metric)"),
            "{table}"
        );
        assert_eq!(uncounted, ["cycles <not supported>"]);
        let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["perf_context_switches", "perf_cpu_migrations"]);
        assert_eq!(metrics[0].value, 2722.0);
    }

    #[test]
    fn nothing_counted_is_an_error_with_what_perf_said() {
        let e = totals("Error:\nNo permission to enable cycles event.\n").unwrap_err();
        assert!(e.to_string().contains("No permission"), "{e}");
        assert!(!counting("Error:\n"));
        assert!(counting(OUT));
    }

    #[test]
    fn event_names_become_metric_names() {
        assert_eq!(metric_name("context-switches"), "perf_context_switches");
        assert_eq!(metric_name("cpu/cache-misses/"), "perf_cpu_cache_misses");
    }
}
