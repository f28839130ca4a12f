//! From YAML text to a validated [`Scenario`], collecting every problem with its position.

use crate::scenario::keys;
use std::path::Path;

use super::*;
use crate::yaml::cx::{closest, Cx, Fields};
use crate::yaml::{self, Node};
use refs::declared_names;

/// The most jobs one scenario may expand to (kernels × variants × workloads × iterations).
pub const MAX_JOBS: u64 = 100_000;

/// Parses and validates a scenario. Relative paths in it are taken from `base_dir`.
pub fn from_str(text: &str, base_dir: &Path) -> Result<Scenario, Vec<Diagnostic>> {
    let (mut s, files) = parse_with(text, base_dir, |cx, root| cx.scenario(root))?;
    s.files = files;
    Ok(s)
}

/// YAML text read by `read` (with the files it names), or every problem found, in order.
fn parse_with<T>(
    text: &str,
    base_dir: &Path,
    read: impl FnOnce(&mut Cx, &Node) -> Option<T>,
) -> Result<(T, Vec<FileRef>), Vec<Diagnostic>> {
    let root = yaml::parse(text).map_err(|e| {
        vec![Diagnostic {
            line: e.line,
            col: e.col,
            message: format!("YAML syntax: {}", e.message),
        }]
    })?;
    let mut cx = Cx {
        diags: Vec::new(),
        base_dir,
        files: Vec::new(),
    };
    match read(&mut cx, &root) {
        Some(x) if cx.diags.is_empty() => Ok((x, cx.files)),
        _ => {
            cx.diags.sort_by_key(|d| (d.line, d.col));
            Err(cx.diags)
        }
    }
}

/// The one variant of a scenario that declares none: the default policy, nothing changed.
fn default_variant() -> Variant {
    Variant {
        name: "default".into(),
        policy: Policy::Other,
        features: vec![],
        cpus: None,
        tuning: Default::default(),
        cgroup: None,
    }
}

impl<'a> Cx<'a> {
    fn scenario(&mut self, root: &Node) -> Option<Scenario> {
        let f = self.map(root, "the scenario", &keys::SCENARIO)?;
        let name = self
            .required(&f, "name", "the scenario")
            .and_then(|n| self.name(n, "name"));
        // Before the hosts: its method is their default.
        let boot = match f.get("boot") {
            Some(n) => self.boot(n),
            None => Some(Boot {
                timeout_secs: 300,
                method: BootVia::Kexec,
            }),
        };
        let default_boot = boot.map_or(BootVia::Kexec, |b| b.method);
        let hosts = self
            .required(&f, "hosts", "the scenario")
            .and_then(|n| self.hosts(n, default_boot));
        let kernels = self.kernels_with_perf(&f);
        let baseline_node = f.get("baseline");
        let baseline = baseline_node.and_then(|n| self.name(n, "baseline"));
        let variants = match f.get("variants") {
            Some(n) => self.variants(n),
            None => Some(vec![default_variant()]),
        };
        let workloads = match self.required(&f, "workloads", "the scenario") {
            Some(n) => self.workloads(n),
            None => (Vec::new(), false),
        };
        let iterations = self.iterations(f.get("iterations"));
        let boots = self.uint_or(&f, "boots", "boots", (1, 100), 1);
        let warmup = self.uint_or(&f, "warmup", "warmup", (0, 100), 0);
        let order = self.order(f.get("order"));
        let tools = match f.get("tools") {
            Some(n) => self.tools(n),
            None => Some(Vec::new()),
        };
        let collect = match f.get("collect") {
            Some(n) => self.collect(n),
            None => Some(Default::default()),
        };
        let bisect = match f.get("bisect") {
            Some(n) => self.bisect(n).map(Some),
            None => Some(None),
        };

        // Cross-references, checked against the names the file declares even where an
        // entry has problems of its own: every independent problem in one pass.
        let host_names = declared_names(f.get("hosts"));
        let kernel_names = declared_names(f.get("kernels"));
        self.matrix_size(&f, iterations.map(|i| i.1));
        self.check_boots(&f, boots, iterations, &kernels);
        let baseline = self.baseline(baseline, baseline_node, &kernel_names);
        let (workloads, workloads_ok) = workloads;
        let resolved = self.resolve_workloads(workloads, &hosts, &host_names);
        self.check_hosts(&f, &hosts, &kernels, &tools, &host_names);
        let (hosts, kernels, baseline) = (hosts?, kernels?, baseline?);
        if !workloads_ok {
            return None;
        }
        Some(Scenario {
            name: name?,
            hosts,
            kernels,
            baseline,
            boot: boot?,
            variants: variants?,
            workloads: resolved,
            iterations: iterations?.0,
            max_iterations: iterations?.1,
            boots: boots?,
            warmup: warmup?,
            tools: tools?,
            order: order?,
            collect: collect?,
            bisect: bisect?,
            files: Vec::new(),
        })
    }

    /// `iterations: N`, or `{ min: A, max: B }` for an adaptive run.
    fn iterations(&mut self, node: Option<&Node>) -> Option<(u32, u32)> {
        let Some(n) = node else {
            return Some((1, 1));
        };
        if !matches!(n.kind, crate::yaml::Kind::Map(_)) {
            return self.uint(n, "iterations", 1, 1000).map(|v| (v as u32, v as u32));
        }
        let f = self.map(n, "iterations", &keys::RANGE)?;
        let min = self
            .required(&f, "min", "iterations")
            .and_then(|m| self.uint(m, "iterations: min", 2, 1000));
        let max = self
            .required(&f, "max", "iterations")
            .and_then(|m| self.uint(m, "iterations: max", 2, 1000));
        let (min, max) = (min? as u32, max? as u32);
        if max < min {
            let at = f.get("max").unwrap_or(n);
            self.error(at, format!("iterations: max {max} is below min {min}"));
            return None;
        }
        Some((min, max))
    }

    /// Boots need kernels kreg can boot again, and a run in every boot.
    fn check_boots(
        &mut self,
        f: &Fields,
        boots: Option<u32>,
        iterations: Option<(u32, u32)>,
        kernels: &Option<Vec<Kernel>>,
    ) {
        let (Some(boots), Some(node)) = (boots, f.get("boots")) else {
            return;
        };
        if boots < 2 {
            return;
        }
        if let Some((min, _)) = iterations {
            if boots > min {
                self.error(node, format!("boots: {boots} boots need at least {boots} iterations (one run in each boot); iterations is {min}"));
            }
        }
        for k in kernels.iter().flatten() {
            if k.source == KernelSource::Running {
                self.error(
                    node,
                    format!(
                        "boots: {boots} boots each kernel {boots} times, but kernel `{}` is `source: running`, which kreg cannot boot again; give it as a deb, a path or a build",
                        k.name
                    ),
                );
            }
        }
    }

    fn order(&mut self, node: Option<&Node>) -> Option<Order> {
        let Some(n) = node else {
            return Some(Order::Blocked);
        };
        match self.string(n, "order").as_deref() {
            Some("blocked") => Some(Order::Blocked),
            Some("interleaved") => Some(Order::Interleaved),
            Some(other) => {
                self.error(
                    n,
                    format!("order: `{other}` is not an order; expected blocked or interleaved"),
                );
                None
            }
            None => None,
        }
    }

    /// The baseline kernel: the one named, checked against the kernels the file declares,
    /// or the first kernel.
    fn baseline(&mut self, baseline: Option<String>, node: Option<&Node>, kernel_names: &[String]) -> Option<String> {
        match (baseline, node) {
            (Some(b), Some(node)) => {
                if !kernel_names.is_empty() && !kernel_names.contains(&b) {
                    let hint = closest(&b, &kernel_names.iter().map(String::as_str).collect::<Vec<_>>())
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default();
                    self.error(
                        node,
                        format!(
                            "baseline `{b}` is not one of the kernels ({}){hint}",
                            kernel_names.join(", ")
                        ),
                    );
                }
                Some(b)
            }
            (None, Some(_)) => None,
            (_, None) => kernel_names.first().cloned(),
        }
    }

    /// One SUT; build hosts and tool hosts that exist.
    fn check_hosts(
        &mut self,
        f: &Fields,
        hosts: &Option<Vec<Host>>,
        kernels: &Option<Vec<Kernel>>,
        tools: &Option<Vec<Tool>>,
        host_names: &[String],
    ) {
        if let Some(hosts_node) = f.get("hosts") {
            if let Some(hosts) = hosts {
                let suts = hosts.iter().filter(|h| h.role == Role::Sut).count();
                if suts != 1 {
                    self.error(
                        hosts_node,
                        format!("hosts: exactly one host must have role `sut`, found {suts}"),
                    );
                }
            }
        }
        if let (Some(kernels), Some(kernels_node)) = (kernels, f.get("kernels")) {
            let items = self.seq(kernels_node, "kernels").unwrap_or(&[]);
            self.check_build_hosts(kernels, items, hosts, host_names);
        }
        if let (Some(tools), Some(tools_node)) = (tools, f.get("tools")) {
            for (t, item) in tools.iter().zip(self.seq(tools_node, "tools").unwrap_or(&[])) {
                for h in &t.on {
                    if !host_names.contains(h) {
                        self.error(item, format!("tool `{}` goes on `{h}`, which is not a host", t.name));
                    }
                }
            }
        }
    }

    /// Reads every item of a list with `read` (a problem in one does not hide the next),
    /// and reports a name declared twice at the item that repeats it. Returns the items
    /// read with their nodes, and whether every item was read.
    fn named_items<'n, T>(
        &mut self,
        items: &'n [Node],
        what: &str,
        read: impl Fn(&mut Self, &'n Node) -> Option<T>,
        name: impl Fn(&T) -> &str,
    ) -> (Vec<(&'n Node, T)>, bool) {
        let mut out: Vec<(&Node, T)> = Vec::new();
        let mut ok = true;
        for item in items {
            let Some(t) = read(self, item) else {
                ok = false;
                continue;
            };
            if out.iter().any(|(_, o)| name(o) == name(&t)) {
                self.error(item, format!("{what} `{}` is declared twice", name(&t)));
                ok = false;
                continue;
            }
            out.push((item, t));
        }
        (out, ok)
    }

    fn variants(&mut self, node: &Node) -> Option<Vec<Variant>> {
        let items = self.seq(node, "variants")?;
        if items.is_empty() {
            self.error(node, "variants: declare at least one variant, e.g. { name: default }");
            return None;
        }
        let (out, ok) = self.named_items(items, "variant", Self::variant, |v| &v.name);
        ok.then(|| out.into_iter().map(|(_, v)| v).collect())
    }

    fn variant(&mut self, node: &Node) -> Option<Variant> {
        let f = self.map(node, "a variant", &keys::VARIANT)?;
        let name = self
            .required(&f, "name", "a variant")
            .and_then(|n| self.name(n, "variant name"));
        let policy = match f.get("policy") {
            None => Some(Policy::Other),
            Some(n) => match self.string(n, "policy")?.as_str() {
                "other" | "normal" | "default" => Some(Policy::Other),
                "batch" => Some(Policy::Batch),
                "idle" => Some(Policy::Idle),
                p => {
                    self.error(
                        n,
                        format!("policy: unknown policy `{p}`; expected other, batch or idle"),
                    );
                    None
                }
            },
        };
        let features = match f.get("features") {
            None => Some(Vec::new()),
            Some(n) => self.features(n),
        };
        let cpus = match f.get("cpus") {
            None => Some(None),
            Some(n) => self.string(n, "cpus").and_then(|text| match parse_cpu_list(&text) {
                Some(list) => Some(Some(list)),
                None => {
                    self.error(n, format!("cpus: {text:?} is not a CPU list like 0-3,8"));
                    None
                }
            }),
        };
        let tuning = match f.get("tuning") {
            Some(n) => self.tuning(n, &format!("variant `{}`", name.as_deref().unwrap_or("?"))),
            None => Some(Default::default()),
        };
        let cgroup = match f.get("cgroup") {
            Some(n) => self
                .cgroup(n, &format!("variant `{}`", name.as_deref().unwrap_or("?")))
                .map(Some),
            None => Some(None),
        };
        Some(Variant {
            cgroup: cgroup?,
            name: name?,
            policy: policy?,
            features: features?,
            cpus: cpus?,
            tuning: tuning?,
        })
    }

    /// `features: [NO_PLACE_LAG, …]`: sched feature names.
    fn features(&mut self, n: &Node) -> Option<Vec<String>> {
        let items = self.seq(n, "features")?;
        let mut out = Vec::new();
        let mut ok = true;
        for item in items {
            let Some(s) = self.string(item, "a sched feature") else {
                ok = false;
                continue;
            };
            if s.is_empty()
                || !s
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                self.error(
                    item,
                    format!("{s:?} is not a sched feature name (like PLACE_LAG or NO_RUN_TO_PARITY)"),
                );
                ok = false;
                continue;
            }
            out.push(s);
        }
        ok.then_some(out)
    }

    /// The workloads read, each with its node (some may be missing: see the flag), and
    /// whether all were read.
    fn workloads<'n>(&mut self, node: &'n Node) -> (Vec<(&'n Node, PendingWorkload)>, bool) {
        let Some(items) = self.seq(node, "workloads") else {
            return (Vec::new(), false);
        };
        if items.is_empty() {
            self.error(node, "workloads: declare at least one workload");
            return (Vec::new(), false);
        }
        self.named_items(items, "workload", Self::workload, |w| &w.name)
    }
}

pub use crate::tuning::parse_cpu_list;

/// A workload before its host is resolved against the hosts section.
struct PendingWorkload {
    name: String,
    collect: crate::collect::Collect,
    cgroup: Option<crate::cgroup::Cgroup>,
    on: Option<String>,
    timeout_secs: u64,
    kind: WorkloadKind,
    /// Other hosts the workload names (a server's `on`), with where they are named.
    host_refs: Vec<(String, usize, usize)>,
}

mod bisect;
mod cgroup;
mod hosts;
mod kernel;
pub(crate) mod pool;
mod refs;
pub(crate) mod ssh;
mod tools;
mod tuning;
mod workload;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_files;
#[cfg(test)]
mod tests_pool;
#[cfg(test)]
mod tests_setup;
