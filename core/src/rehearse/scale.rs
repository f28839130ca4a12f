//! A workload cut down for a rehearsal: the same tool, options and metrics, at a size a lab
//! VM runs in seconds to a minute. Every cut is said (what, from, to), so the rehearsal's
//! sheet lists it beside the figures.

use crate::workload::{common::Flags, WorkloadKind};

/// One size the rehearsal changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub workload: String,
    /// The scenario's key ("warehouses", "runtime").
    pub key: String,
    pub from: String,
    pub to: String,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} {} -> {}", self.workload, self.key, self.from, self.to)
    }
}

/// `value` capped at `most`, the cut recorded when it was above.
fn cap(cuts: &mut Vec<Cut>, workload: &str, key: &str, value: &mut u32, most: u32, unit: &str) {
    if *value > most {
        cuts.push(Cut {
            workload: workload.into(),
            key: key.into(),
            from: format!("{value}{unit}"),
            to: format!("{most}{unit}"),
        });
        *value = most;
    }
}

/// A flag of a tool's validated flags capped at `most`.
fn cap_flag(cuts: &mut Vec<Cut>, workload: &str, flags: &mut Flags, key: (&str, &str), most: u64, unit: &str) {
    let (name, flag) = key;
    for (f, value) in flags.iter_mut() {
        let Some(v) = value.as_ref().and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        if f == flag && v > most {
            cuts.push(Cut {
                workload: workload.into(),
                key: name.into(),
                from: format!("{v}{unit}"),
                to: format!("{most}{unit}"),
            });
            *value = Some(most.to_string());
        }
    }
}

/// The rehearsal's sizes: hackbench 100 loops of at most 4 groups, schbench 5 seconds (no
/// warm-up beyond 1 s), sysbench 10 s on one table of 1,000 rows, netperf 5 s, HammerDB
/// one warehouse, no rampup and one minute; a `command` runs as written (kreg cannot know
/// what sizes it).
pub fn scale(name: &str, kind: &mut WorkloadKind) -> Vec<Cut> {
    let mut cuts = Vec::new();
    let c = &mut cuts;
    match kind {
        WorkloadKind::Hackbench(h) => {
            cap(c, name, "loops", &mut h.loops, 100, "");
            cap(c, name, "groups", &mut h.groups, 4, "");
        }
        WorkloadKind::Schbench(s) => {
            cap_flag(c, name, &mut s.flags, ("runtime", "-r"), 5, " s");
            cap_flag(c, name, &mut s.flags, ("warmuptime", "-w"), 1, " s");
            cap_flag(c, name, &mut s.flags, ("message_threads", "-m"), 2, "");
            cap_flag(c, name, &mut s.flags, ("threads", "-t"), 4, "");
        }
        WorkloadKind::PerfBench(p) => {
            cap_flag(c, name, &mut p.flags, ("loops", "-l"), 1000, "");
            cap_flag(c, name, &mut p.flags, ("groups", "-g"), 4, "");
        }
        WorkloadKind::Sysbench(s) => {
            cap(c, name, "time", &mut s.time_secs, 10, " s");
            cap(c, name, "tables", &mut s.tables, 1, "");
            cap(c, name, "table_size", &mut s.table_size, 1000, "");
            cap(c, name, "threads", &mut s.threads, 4, "");
        }
        WorkloadKind::Netperf(n) => {
            cap(c, name, "duration", &mut n.duration_secs, 5, " s");
        }
        WorkloadKind::Hammerdb(h) => {
            cap(c, name, "warehouses", &mut h.warehouses, 1, "");
            cap(c, name, "rampup", &mut h.rampup_min, 0, " min");
            cap(c, name, "duration", &mut h.duration_min, 1, " min");
        }
        WorkloadKind::Command(_) => {}
    }
    cuts
}
