//! A workload entry: the keys every kind has here; the kind's own options are read by its
//! module in `workload`.

use super::super::*;
use super::{Cx, PendingWorkload};
use crate::yaml::Node;

impl<'a> Cx<'a> {
    pub(super) fn workload(&mut self, node: &Node) -> Option<PendingWorkload> {
        let keys = crate::workload::all_keys();
        let f = self.map(node, "a workload", &keys)?;
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
        let kind_node = self.required(&f, "kind", &what)?;
        let mut host_refs = Vec::new();
        let kind = WorkloadKind::load(self, kind_node, &f, &what, &mut host_refs)?;
        Some(PendingWorkload {
            name: name?,
            on,
            timeout_secs,
            kind,
            host_refs,
        })
    }
}
