//! `cgroup:` of a variant or a workload: `{ quota: 50%, period_us: 100000, weight: 100,
//! cpus: "0-3", hierarchy: { fanout: [2, 100, 10], depth: 5 } }`.

use super::Cx;
use crate::cgroup::{Cgroup, Hierarchy, Quota};
use crate::scenario::keys;
use crate::yaml::Node;

/// Most leaves a generated hierarchy may have.
pub const MAX_LEAVES: u64 = 20_000;
/// Most groups in all (the agent's own bound).
pub const MAX_GROUPS: u64 = kreg_protocol::limits::MAX_GROUPS;

impl<'a> Cx<'a> {
    pub(super) fn cgroup(&mut self, node: &Node, what: &str) -> Option<Cgroup> {
        let what = format!("the cgroup of {what}");
        let f = self.map(node, &what, &keys::CGROUP)?;
        let quota = match f.get("quota") {
            Some(n) => self.quota(n).map(Some),
            None => Some(None),
        };
        let period_us = match f.get("period_us") {
            Some(n) => self.uint(n, "period_us", 1000, 1_000_000),
            None => Some(100_000),
        };
        let weight = match f.get("weight") {
            Some(n) => self.uint(n, "weight", 1, 10_000).map(|w| Some(w as u32)),
            None => Some(None),
        };
        let cpus = match f.get("cpus") {
            None => Some(None),
            Some(n) => self
                .string(n, "cpus")
                .and_then(|text| match crate::tuning::parse_cpu_list(&text) {
                    Some(list) => Some(Some(list)),
                    None => {
                        self.error(n, format!("cpus: {text:?} is not a CPU list like 0-3,8"));
                        None
                    }
                }),
        };
        let hierarchy = match f.get("hierarchy") {
            Some(n) => self.hierarchy(n).map(Some),
            None => Some(None),
        };
        let cg = Cgroup {
            quota: quota?,
            period_us: period_us?,
            weight: weight?,
            cpus: cpus?,
            hierarchy: hierarchy?,
        };
        let written = matches!(&node.kind, crate::yaml::Kind::Map(m) if !m.is_empty());
        if cg.quota.is_none() && cg.weight.is_none() && cg.cpus.is_none() && cg.hierarchy.is_none() {
            if written {
                // Its keys were all wrong, and each is reported.
                return None;
            }
            self.error(
                node,
                format!("{what}: give at least one of quota, weight, cpus, hierarchy"),
            );
            return None;
        }
        Some(cg)
    }

    /// `50%` (of the CPUs the job may use) or a number of CPUs such as `1.5`.
    fn quota(&mut self, node: &Node) -> Option<Quota> {
        let text = self.string(node, "quota")?;
        let t = text.trim();
        let parsed = match t.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && *v <= 100.0)
                .map(|v| Quota::Share(v / 100.0)),
            None => t
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && *v <= 65536.0)
                .map(Quota::Cpus),
        };
        if parsed.is_none() {
            self.error(
                node,
                format!("quota: {text:?}: expected a share of the job's CPUs such as 50% (more than 0, at most 100%), or a number of CPUs such as 1.5"),
            );
        }
        parsed
    }

    fn hierarchy(&mut self, node: &Node) -> Option<Hierarchy> {
        let f = self.map(node, "hierarchy", &keys::HIERARCHY)?;
        let fanout_node = self.required(&f, "fanout", "hierarchy")?;
        let items = self.seq(fanout_node, "fanout")?;
        let fanout: Option<Vec<u32>> = items
            .iter()
            .map(|i| self.uint(i, "a fanout", 1, 10_000).map(|v| v as u32))
            .collect();
        let fanout = fanout?;
        if fanout.is_empty() {
            self.error(fanout_node, "fanout: give the children per level, e.g. [2, 100, 10]");
            return None;
        }
        let depth = match f.get("depth") {
            Some(n) => self.uint(n, "depth", 1, 32)? as u32,
            None => fanout.len() as u32,
        };
        if (depth as usize) < fanout.len() {
            self.error(
                node,
                format!(
                    "hierarchy: depth {depth} is less than the {} levels of fanout",
                    fanout.len()
                ),
            );
            return None;
        }
        let h = Hierarchy { fanout, depth };
        if h.leaves() > MAX_LEAVES || h.groups() > MAX_GROUPS {
            self.error(
                node,
                format!(
                    "hierarchy: {} leaves and {} groups; at most {MAX_LEAVES} leaves and {MAX_GROUPS} groups",
                    h.leaves(),
                    h.groups()
                ),
            );
            return None;
        }
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const BASE: &str = "name: cg\nhosts:\n  sut: { role: sut, transport: { kind: lab, cpus: 2 } }\nkernels:\n  - { name: k, source: running }\nvariants:\n  - { name: default }\n  - VARIANT\nworkloads:\n  - { name: hb, kind: hackbench, groups: 1, loops: 50 }\n";

    fn diags(variant: &str) -> String {
        match crate::scenario::load::from_str(&BASE.replace("VARIANT", variant), Path::new("/scn")) {
            Ok(_) => "ok".into(),
            Err(d) => d.iter().map(|d| d.render("f.yaml")).collect::<Vec<_>>().join("\n"),
        }
    }

    #[test]
    fn cgroups_load_with_their_hierarchy() {
        let text = BASE.replace(
            "VARIANT",
            "{ name: deep, cgroup: { quota: 50%, weight: 200, cpus: \"0-1\", hierarchy: { fanout: [2, 100, 10], depth: 5 } } }",
        );
        let s = crate::scenario::load::from_str(&text, Path::new("/scn")).unwrap();
        let cg = s.variant("deep").unwrap().cgroup.clone().unwrap();
        assert_eq!(cg.quota, Some(crate::cgroup::Quota::Share(0.5)));
        assert_eq!(cg.period_us, 100_000);
        assert_eq!(
            cg.limits(2),
            [
                ("cpu.max".to_string(), "100000 100000".to_string()),
                ("cpu.weight".to_string(), "200".to_string()),
                ("cpuset.cpus".to_string(), "0-1".to_string()),
            ]
        );
        assert!(s.uses_cgroups());
        assert_eq!(diags("{ name: q, cgroup: { quota: \"1.5\" } }"), "ok");
    }

    #[test]
    fn cgroup_mistakes_are_reported_where_they_are() {
        assert_eq!(
            diags("{ name: q, cgroup: { quota: 150%, period_us: 10, hierarchy: { fanout: [2, 0], depth: 1 } } }"),
            "f.yaml:8:33: quota: \"150%\": expected a share of the job's CPUs such as 50% (more than 0, at most 100%), or a number of CPUs such as 1.5\n\
             f.yaml:8:50: period_us: 10 is out of range (1000 to 1000000)\n\
             f.yaml:8:79: a fanout: 0 is out of range (1 to 10000)"
        );
        assert_eq!(
            diags("{ name: q, cgroup: { hierarchy: { fanout: [2, 3], depth: 1 } } }"),
            "f.yaml:8:37: hierarchy: depth 1 is less than the 2 levels of fanout"
        );
        assert_eq!(
            diags("{ name: q, cgroup: { hierarchy: { fanout: [100, 100, 100] } } }"),
            "f.yaml:8:37: hierarchy: 1000000 leaves and 1010100 groups; at most 20000 leaves and 100000 groups"
        );
        assert_eq!(
            diags("{ name: q, cgroup: { quotas: 50% } }"),
            "f.yaml:8:26: unknown field `quotas` in the cgroup of variant `q`; did you mean `quota`? expected one of: quota, period_us, weight, cpus, hierarchy"
        );
        assert_eq!(
            diags("{ name: q, cgroup: {} }"),
            "f.yaml:8:24: the cgroup of variant `q`: give at least one of quota, weight, cpus, hierarchy"
        );
    }
}
