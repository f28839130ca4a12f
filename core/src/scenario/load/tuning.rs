//! `tuning:` of a host or a variant: each setting checked for its form here (whether the
//! machine has it is known only once it is reached), `optional:` naming settings given.

use super::Cx;
use crate::scenario::keys;
use crate::tuning::{Knob, Offline, Setting, Tuning};
use crate::yaml::{Kind, Node};

/// A word of lowercase letters, digits and `_`: a governor or a scheduler knob's name.
fn word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A sysctl's dotted name: segments of letters, digits, `_` and `-`.
fn sysctl_name(s: &str) -> bool {
    s.len() <= 128
        && s.split('.').count() >= 2
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
}

impl<'a> Cx<'a> {
    pub(super) fn tuning(&mut self, node: &Node, what: &str) -> Option<Tuning> {
        let what = format!("the tuning of {what}");
        let f = self.map(node, &what, &keys::TUNING)?;
        let mut settings = Vec::new();
        let mut ok = true;
        for (key, n) in &f.entries {
            let knobs = match *key {
                "optional" => continue,
                "governor" => self
                    .checked(n, "governor", word, "a cpufreq governor such as performance")
                    .map(|g| vec![Knob::Governor(g)]),
                "turbo" => self.on_off(n, "turbo").map(|b| vec![Knob::Turbo(b)]),
                "deep_idle" => self.on_off(n, "deep_idle").map(|b| vec![Knob::DeepIdle(b)]),
                "dma_latency" => self
                    .uint(n, "dma_latency (microseconds)", 0, i32::MAX as u64)
                    .map(|us| vec![Knob::DmaLatency(us as u32)]),
                "smt" => self.on_off(n, "smt").map(|b| vec![Knob::Smt(b)]),
                "numa_balancing" => self.on_off(n, "numa_balancing").map(|b| vec![Knob::NumaBalancing(b)]),
                "cpus_offline" => self.offline(n).map(|o| vec![Knob::CpusOffline(o)]),
                "llc" => self.string(n, "llc").and_then(|v| match v.as_str() {
                    "one" => Some(vec![Knob::OneLlc]),
                    other => {
                        self.error(
                            n,
                            format!(
                                "llc: `{other}`: the one value is `one` (the workload within one last-level cache)"
                            ),
                        );
                        None
                    }
                }),
                "thp" => self.string(n, "thp").and_then(|v| match v.as_str() {
                    "always" | "madvise" | "never" => Some(vec![Knob::Thp(v)]),
                    other => {
                        self.error(n, format!("thp: `{other}`: expected always, madvise or never"));
                        None
                    }
                }),
                "sched" => self
                    .pairs(n, "sched", word, "a scheduler knob such as base_slice_ns")
                    .map(|p| p.into_iter().map(|(name, value)| Knob::Sched { name, value }).collect()),
                "sysctl" => self
                    .pairs(n, "sysctl", sysctl_name, "a dotted sysctl name such as vm.swappiness")
                    .map(|p| {
                        p.into_iter()
                            .map(|(name, value)| Knob::Sysctl { name, value })
                            .collect()
                    }),
                _ => unreachable!("keys are checked by map"),
            };
            match knobs {
                Some(k) => settings.extend(k.into_iter().map(|knob| Setting { knob, optional: false })),
                None => ok = false,
            }
        }
        if let Some(n) = f.get("optional") {
            ok &= self.optional(n, &mut settings);
        }
        ok.then_some(Tuning { settings })
    }

    fn checked(&mut self, node: &Node, what: &str, good: fn(&str) -> bool, expected: &str) -> Option<String> {
        let s = self.string(node, what)?;
        if good(&s) {
            Some(s)
        } else {
            self.error(node, format!("{what}: {s:?} is not {expected}"));
            None
        }
    }

    fn on_off(&mut self, node: &Node, what: &str) -> Option<bool> {
        match &node.kind {
            Kind::Scalar(s, _) if s == "on" || s == "true" => Some(true),
            Kind::Scalar(s, _) if s == "off" || s == "false" => Some(false),
            _ => {
                self.expected(node, what, "on or off");
                None
            }
        }
    }

    fn offline(&mut self, node: &Node) -> Option<Offline> {
        if let Kind::Seq(items) = &node.kind {
            let cpus: Option<Vec<u32>> = items
                .iter()
                .map(|i| self.uint(i, "a CPU number", 0, 8191).map(|c| c as u32))
                .collect();
            let cpus = cpus?;
            if cpus.is_empty() {
                self.error(node, "cpus_offline: name at least one CPU");
                return None;
            }
            return Some(Offline::Cpus(cpus));
        }
        let s = self.string(node, "cpus_offline")?;
        match s.as_str() {
            "other-nodes" => Some(Offline::OtherNodes),
            "other-sockets" => Some(Offline::OtherSockets),
            text => match crate::tuning::parse_cpu_list(text) {
                Some(cpus) => Some(Offline::Cpus(cpus)),
                None => {
                    self.error(
                        node,
                        format!("cpus_offline: {text:?}: expected a CPU list like 2-3,6, other-nodes or other-sockets"),
                    );
                    None
                }
            },
        }
    }

    /// `NAME: VALUE` pairs (the values plain scalars written as they are).
    fn pairs(
        &mut self,
        node: &Node,
        what: &str,
        good: fn(&str) -> bool,
        expected: &str,
    ) -> Option<Vec<(String, String)>> {
        let Kind::Map(entries) = &node.kind else {
            self.expected(node, what, "a mapping of names to values");
            return None;
        };
        let mut out: Vec<(String, String)> = Vec::new();
        let mut ok = true;
        for (k, v) in entries {
            let name = self.checked(k, &format!("a name in {what}"), good, expected);
            let value = match &v.kind {
                Kind::Scalar(s, _) if !s.is_empty() && !s.contains(['\n', '\0']) && s.len() <= 256 => Some(s.clone()),
                _ => {
                    self.expected(v, &format!("the value of {what}"), "a number or a word on one line");
                    None
                }
            };
            match (name, value) {
                (Some(n), Some(_)) if out.iter().any(|(seen, _)| *seen == n) => {
                    self.error(k, format!("{what}: `{n}` appears twice"));
                    ok = false;
                }
                (Some(n), Some(v)) => out.push((n, v)),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// Marks the settings `optional:` names; each must be set in the same tuning.
    fn optional(&mut self, node: &Node, settings: &mut [Setting]) -> bool {
        let Some(items) = self.seq(node, "optional") else {
            return false;
        };
        let mut ok = true;
        for item in items {
            let Some(key) = self.string(item, "an optional setting") else {
                ok = false;
                continue;
            };
            // `sched` or `sysctl` alone: every knob of that group.
            let mut hit = false;
            for s in settings.iter_mut() {
                let k = s.knob.key();
                if k == key || k.strip_prefix(&key).is_some_and(|rest| rest.starts_with('.')) {
                    s.optional = true;
                    hit = true;
                }
            }
            if !hit {
                let keys: Vec<String> = settings.iter().map(|s| s.knob.key()).collect();
                self.error(
                    item,
                    format!("optional: `{key}` is not set in this tuning (set: {})", keys.join(", ")),
                );
                ok = false;
            }
        }
        ok
    }
}
