//! Cross-references between the sections, checked against the names the file declares
//! (so that a problem inside one entry does not hide a wrong reference to it), the size of
//! the job matrix, and suggestions for names that are nearly right.

use super::super::*;
use super::{Cx, Diagnostic, Fields, PendingWorkload, MAX_JOBS};
use crate::yaml::{Kind, Node};

impl<'a> Cx<'a> {
    /// The job matrix is refused above [`MAX_JOBS`] before anything expands it: the sizes
    /// are counted on the file itself.
    pub(super) fn matrix_size(&mut self, f: &Fields<'_>, iterations: Option<u32>) {
        let count = |n: Option<&Node>| match n.map(|n| &n.kind) {
            Some(Kind::Seq(items)) => items.len().max(1) as u64,
            _ => 1,
        };
        let (k, v, w) = (
            count(f.get("kernels")),
            count(f.get("variants")),
            count(f.get("workloads")),
        );
        let i = u64::from(iterations.unwrap_or(1));
        let jobs = k.saturating_mul(v).saturating_mul(w).saturating_mul(i);
        if jobs > MAX_JOBS {
            let at = f.get("iterations").or(f.get("variants")).unwrap_or(f.node);
            self.error(
                at,
                format!(
                    "the job matrix is {k} kernels × {v} variants × {w} workloads × {i} iterations = {jobs} jobs; kreg runs at most {MAX_JOBS} jobs per scenario (split it, or lower iterations)"
                ),
            );
        }
    }

    /// Workloads with their hosts resolved (`on` defaults to the SUT); unknown hosts reported.
    pub(super) fn resolve_workloads(
        &mut self,
        workloads: Vec<(&Node, PendingWorkload)>,
        hosts: &Option<Vec<Host>>,
        host_names: &[String],
    ) -> Vec<Workload> {
        let sut_name = hosts
            .as_ref()
            .and_then(|hs| hs.iter().find(|h| h.role == Role::Sut))
            .map(|h| h.name.clone());
        let mut resolved = Vec::new();
        for (item, w) in workloads {
            let on = match w.on {
                Some(on) => {
                    if !host_names.contains(&on) {
                        self.error(
                            item,
                            format!("workload `{}` runs on `{on}`, which is not a host", w.name),
                        );
                    }
                    on
                }
                None => sut_name.clone().unwrap_or_default(),
            };
            for (host, line, col) in &w.host_refs {
                if !host_names.contains(host) {
                    self.diags.push(Diagnostic {
                        line: *line,
                        col: *col,
                        message: format!(
                            "workload `{}`: its server runs on `{host}`, which is not a host",
                            w.name
                        ),
                    });
                }
            }
            resolved.push(Workload {
                name: w.name,
                on,
                timeout_secs: w.timeout_secs,
                kind: w.kind,
                collect: w.collect,
                cgroup: w.cgroup,
            });
        }
        resolved
    }

    /// A kernel built on a host names a host that can compile.
    pub(super) fn check_build_hosts(
        &mut self,
        kernels: &[Kernel],
        items: &[Node],
        hosts: &Option<Vec<Host>>,
        host_names: &[String],
    ) {
        for (k, item) in kernels.iter().zip(items) {
            if let KernelSource::Build(BuildSpec {
                build_on: Some(_),
                perf: true,
                ..
            }) = &k.source
            {
                self.error(
                    item,
                    format!(
                        "kernel `{}`: `perf: tree` builds perf on the controller, with the kernel: build the kernel there too (no `build_on`)",
                        k.name
                    ),
                );
            }
            if let KernelSource::Build(BuildSpec { build_on: Some(h), .. }) = &k.source {
                if !host_names.contains(h) {
                    self.error(
                        item,
                        format!(
                            "kernel `{}` builds on `{h}`, which is neither `controller` nor a host",
                            k.name
                        ),
                    );
                } else if hosts
                    .iter()
                    .flatten()
                    .any(|x| &x.name == h && matches!(x.transport, Transport::Lab { .. }))
                {
                    self.error(
                        item,
                        format!(
                            "kernel `{}`: a lab host has no compiler; build on the controller or on a machine",
                            k.name
                        ),
                    );
                }
            }
        }
    }
}

/// The names a section declares, read from the file as written: a mapping's keys (hosts),
/// or each list item's `name` (kernels, variants, workloads).
pub(super) fn declared_names(node: Option<&Node>) -> Vec<String> {
    let scalar = |n: &Node| match &n.kind {
        Kind::Scalar(s, _) => Some(s.clone()),
        _ => None,
    };
    match node.map(|n| &n.kind) {
        Some(Kind::Map(entries)) => entries.iter().filter_map(|(k, _)| scalar(k)).collect(),
        Some(Kind::Seq(items)) => items
            .iter()
            .filter_map(|i| match &i.kind {
                Kind::Map(entries) => entries
                    .iter()
                    .find(|(k, _)| scalar(k).as_deref() == Some("name"))
                    .and_then(|(_, v)| scalar(v)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
