//! A workload entry: the keys every kind has here; the kind's own options are read by its
//! module in `workload`.

use super::super::*;
use super::{Cx, PendingWorkload};
use crate::scenario::keys;
use crate::yaml::Node;

impl<'a> Cx<'a> {
    pub(super) fn workload(&mut self, node: &Node) -> Option<PendingWorkload> {
        let f = self.map(node, "a workload", &keys::WORKLOAD)?;
        let name = self
            .required(&f, "name", "a workload")
            .and_then(|n| self.name(n, "workload name"));
        let what = format!("workload `{}`", name.as_deref().unwrap_or("?"));
        let on = match f.get("on") {
            Some(n) => Some(self.name(n, "on")?),
            None => None,
        };
        let timeout_secs = match f.get("timeout") {
            Some(n) => self.duration(n, "timeout")?,
            None => 600,
        };
        let collect = match f.get("collect") {
            Some(n) => self.collect(n)?,
            None => Default::default(),
        };
        let cgroup = match f.get("cgroup") {
            Some(n) => Some(self.cgroup(n, &what)?),
            None => None,
        };
        let kind_node = self.required(&f, "kind", &what)?;
        let mut host_refs = Vec::new();
        let kind = WorkloadKind::load(self, kind_node, &f, &what, &mut host_refs)?;
        Some(PendingWorkload {
            name: name?,
            on,
            timeout_secs,
            kind,
            host_refs,
            collect,
            cgroup,
        })
    }

    /// `collect: [interrupts, …]`: collectors by name.
    pub(super) fn collect(&mut self, node: &Node) -> Option<crate::collect::Collect> {
        let items = self.seq(node, "collect")?;
        let mut out = crate::collect::Collect::default();
        let mut ok = true;
        for item in items {
            let Some(name) = self.string(item, "a collector") else {
                ok = false;
                continue;
            };
            match name.as_str() {
                "interrupts" => out.interrupts = true,
                "perf_stat" => out.perf_stat = true,
                "task_schedstat" => out.task_schedstat = true,
                "perf_sched_stats" => out.perf_sched_stats = true,
                other => {
                    let hint = crate::yaml::cx::closest(other, crate::collect::NAMES)
                        .map(|c| format!("did you mean `{c}`? "))
                        .unwrap_or_default();
                    self.error(
                        item,
                        format!(
                            "collect: unknown collector `{other}`; {hint}expected one of: {}",
                            crate::collect::NAMES.join(", ")
                        ),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }
}
