//! A scenario's rehearsal: the same file cut down to run on the local lab before the real
//! machines are booked, so that a tool that does not install, a server option the server
//! refuses or a metric the workload never prints shows in minutes. This module is the pure
//! part: what the rehearsal runs (every workload on every kernel under every variant once,
//! sizes cut and each cut said), what a VM cannot rehearse and why (with the place in the
//! file that asked for it), and what the real run will cost.

mod estimate;
mod scale;
pub mod sheet;
#[cfg(test)]
mod tests;

pub use estimate::{estimate, Estimate};
pub use scale::{scale, Cut};

use crate::scenario::Scenario;
use crate::tuning::{Knob, Tuning};
use crate::yaml::{Kind, Node};

/// Something the scenario asks that a lab VM cannot do, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unrehearsable {
    /// "host sut: turbo", "variant batch: governor"
    pub what: String,
    pub why: String,
    /// Where the scenario asks for it (line, column), when the file says.
    pub at: Option<(usize, usize)>,
}

/// A scenario ready to rehearse.
#[derive(Debug, Clone)]
pub struct Rehearsal {
    /// The scenario as the lab runs it: one run of each cell on one boot of each kernel,
    /// sizes cut, what a VM lacks made optional (recorded as unavailable, not failed).
    pub scenario: Scenario,
    /// Each size cut.
    pub cuts: Vec<Cut>,
    /// What the plan changed ("iterations { min: 3, max: 6 } -> 1").
    pub plan: Vec<String>,
    pub not_rehearsable: Vec<Unrehearsable>,
    /// The real run's size, from the scenario as written.
    pub real: Estimate,
}

/// Why a VM of the lab cannot rehearse a knob, or `None` when it can.
fn vm_lacks(knob: &Knob) -> Option<&'static str> {
    match knob {
        Knob::Governor(_) => Some("a lab VM has no cpufreq driver, so no governor to set"),
        Knob::Turbo(_) => Some("a lab VM has no intel_pstate or cpufreq boost, so no turbo to switch"),
        Knob::DeepIdle(_) => Some("a lab VM's CPUs have no cpuidle states beyond polling (halt is the emulator's)"),
        _ => None,
    }
}

/// The node at `path` under `root`: a step is a mapping's key, or `name=X` for the item of
/// a list whose `name` is X.
pub fn locate<'a>(root: &'a Node, path: &[&str]) -> Option<&'a Node> {
    let mut at = root;
    for step in path {
        at = match (&at.kind, step.split_once('=')) {
            (Kind::Seq(items), Some(("name", want))) => items.iter().find(|item| {
                matches!(&item.kind, Kind::Map(m) if m.iter().any(|(k, v)| {
                    matches!(&k.kind, Kind::Scalar(s, _) if s == "name")
                        && matches!(&v.kind, Kind::Scalar(s, _) if s == want)
                }))
            })?,
            (Kind::Map(m), _) => m
                .iter()
                .find(|(k, _)| matches!(&k.kind, Kind::Scalar(s, _) if s == step))
                .map(|(_, v)| v)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Where `key` of a tuning mapping at `path` is written.
fn tuning_at(root: Option<&Node>, path: &[&str], key: &str) -> Option<(usize, usize)> {
    let tuning = locate(root?, path)?;
    let Kind::Map(m) = &tuning.kind else { return None };
    m.iter()
        .find(|(k, _)| matches!(&k.kind, Kind::Scalar(s, _) if s == key))
        .map(|(k, _)| (k.line, k.col))
}

/// The knobs of `t` a VM lacks, made optional (a machine without them records them as
/// unavailable), each said.
fn soften(t: &mut Tuning, owner: &str, root: Option<&Node>, path: &[&str], out: &mut Vec<Unrehearsable>) {
    for s in t.settings.iter_mut() {
        if let Some(why) = vm_lacks(&s.knob) {
            s.optional = true;
            let key = s.knob.key();
            out.push(Unrehearsable {
                what: format!("{owner}: {key}"),
                why: why.into(),
                at: tuning_at(root, path, &key),
            });
        }
    }
}

/// The rehearsal of `s`, whose text is `text` (for the places in the file; the scenario
/// as loaded from it).
pub fn rehearsal(s: &Scenario, text: &str) -> Rehearsal {
    let root = crate::yaml::parse(text).ok();
    let root = root.as_ref();
    let real = estimate(s);
    let mut r = s.clone();
    let mut plan = Vec::new();
    if s.iterations != 1 || s.max_iterations != 1 {
        let was = if s.max_iterations != s.iterations {
            format!("{{ min: {}, max: {} }}", s.iterations, s.max_iterations)
        } else {
            s.iterations.to_string()
        };
        plan.push(format!("iterations {was} -> 1"));
    }
    if s.boots != 1 {
        plan.push(format!("boots {} -> 1", s.boots));
    }
    if s.warmup != 0 {
        plan.push(format!("warmup {} -> 0", s.warmup));
    }
    (r.iterations, r.max_iterations, r.boots, r.warmup) = (1, 1, 1, 0);
    let mut cuts = Vec::new();
    for w in r.workloads.iter_mut() {
        cuts.extend(scale(&w.name, &mut w.kind));
    }
    let mut not = Vec::new();
    for h in r.hosts.iter_mut() {
        let owner = format!("host {}", h.name);
        soften(&mut h.tuning, &owner, root, &["hosts", &h.name, "tuning"], &mut not);
    }
    for v in r.variants.iter_mut() {
        let owner = format!("variant {}", v.name);
        let item = format!("name={}", v.name);
        soften(&mut v.tuning, &owner, root, &["variants", &item, "tuning"], &mut not);
    }
    Rehearsal {
        scenario: r,
        cuts,
        plan,
        not_rehearsable: not,
        real,
    }
}
