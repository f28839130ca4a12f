//! From YAML text to a validated [`Scenario`], collecting every problem with its position.

use std::path::{Path, PathBuf};

use super::yaml::{self, Kind, Node};
use super::*;
use refs::{closest, declared_names};

/// One problem in a scenario file, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl Diagnostic {
    /// `FILE:LINE:COL: message`, the form editors and compilers use.
    pub fn render(&self, file: &str) -> String {
        format!("{file}:{}:{}: {}", self.line, self.col, self.message)
    }
}

/// The most jobs one scenario may expand to (kernels × variants × workloads × iterations).
pub const MAX_JOBS: u64 = 100_000;

/// The longest message a diagnostic carries: a value quoted in it is cut, not echoed whole.
const MAX_MESSAGE: usize = 400;

/// Parses and validates a scenario. Relative paths in it are taken from `base_dir`.
pub fn from_str(text: &str, base_dir: &Path) -> Result<Scenario, Vec<Diagnostic>> {
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
        default_boot: BootVia::Kexec,
        files: Vec::new(),
    };
    let scenario = cx.scenario(&root);
    match scenario {
        Some(mut s) if cx.diags.is_empty() => {
            s.files = cx.files;
            Ok(s)
        }
        _ => {
            cx.diags.sort_by_key(|d| (d.line, d.col));
            Err(cx.diags)
        }
    }
}

struct Cx<'a> {
    diags: Vec<Diagnostic>,
    base_dir: &'a Path,
    /// The scenario's `boot.method`, for http hosts that do not name their own.
    default_boot: BootVia,
    /// Every file the scenario names, with where.
    files: Vec<FileRef>,
}

/// `message`, cut to [`MAX_MESSAGE`] characters when a quoted value made it long.
fn clip_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE) {
        None => message,
        Some((at, _)) => format!("{}… (cut; the message is {} bytes)", &message[..at], message.len()),
    }
}

/// The entries of a mapping whose keys were all checked against the allowed list.
struct Fields<'n> {
    node: &'n Node,
    entries: Vec<(&'n str, &'n Node)>,
}

impl<'n> Fields<'n> {
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

impl<'a> Cx<'a> {
    fn error(&mut self, node: &Node, message: impl Into<String>) {
        self.diags.push(Diagnostic {
            line: node.line,
            col: node.col,
            message: clip_message(message.into()),
        });
    }

    /// A file the scenario names, taken from its folder when relative, and noted with its
    /// position so that `kreg validate` can check it exists.
    fn file(&mut self, node: &Node, what: &str) -> Option<PathBuf> {
        let s = self.string(node, what)?;
        if s.is_empty() || s.contains('\0') {
            self.error(node, format!("{what}: {s:?} is not a file name"));
            return None;
        }
        let path = self.base_dir.join(&s);
        self.files.push(FileRef {
            path: path.clone(),
            line: node.line,
            col: node.col,
            what: what.to_string(),
        });
        Some(path)
    }

    fn expected(&mut self, node: &Node, what: &str, expected: &str) {
        let found = node.type_name();
        self.error(node, format!("{what}: expected {expected}, found {found}"));
    }

    fn map<'n>(&mut self, node: &'n Node, what: &str, allowed: &[&str]) -> Option<Fields<'n>> {
        let Kind::Map(entries) = &node.kind else {
            self.expected(node, what, "a mapping");
            return None;
        };
        let mut out = Vec::new();
        for (k, v) in entries {
            let Kind::Scalar(key, _) = &k.kind else {
                self.expected(k, &format!("a key of {what}"), "a plain name");
                continue;
            };
            if !allowed.contains(&key.as_str()) {
                let hint = closest(key, allowed)
                    .map(|c| format!("did you mean `{c}`? "))
                    .unwrap_or_default();
                self.error(
                    k,
                    format!(
                        "unknown field `{key}` in {what}; {hint}expected one of: {}",
                        allowed.join(", ")
                    ),
                );
                continue;
            }
            if out.iter().any(|(seen, _)| seen == key) {
                self.error(k, format!("field `{key}` appears twice in {what}"));
                continue;
            }
            out.push((key.as_str(), v));
        }
        Some(Fields { node, entries: out })
    }

    fn required<'n>(&mut self, f: &Fields<'n>, key: &str, what: &str) -> Option<&'n Node> {
        let v = f.get(key);
        if v.is_none() {
            self.error(f.node, format!("missing field `{key}` in {what}"));
        }
        v
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.kind {
            Kind::Scalar(s, quoted) if *quoted || !node.is_null() => Some(s.clone()),
            _ => {
                self.expected(node, what, "a string");
                None
            }
        }
    }

    fn name(&mut self, node: &Node, what: &str) -> Option<String> {
        let s = self.string(node, what)?;
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'));
        if !ok {
            self.error(
                node,
                format!("{what}: {s:?} is not a valid name (1 to 64 of letters, digits, '.', '_', '-', '+')"),
            );
            return None;
        }
        Some(s)
    }

    fn uint(&mut self, node: &Node, what: &str, min: u64, max: u64) -> Option<u64> {
        let parsed = match &node.kind {
            Kind::Scalar(s, false) => s.parse::<u64>().ok(),
            _ => None,
        };
        match parsed {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(n) => {
                self.error(node, format!("{what}: {n} is out of range ({min} to {max})"));
                None
            }
            None => {
                self.expected(node, what, &format!("a whole number from {min} to {max}"));
                None
            }
        }
    }

    fn boolean(&mut self, node: &Node, what: &str) -> Option<bool> {
        match &node.kind {
            Kind::Scalar(s, false) if s == "true" => Some(true),
            Kind::Scalar(s, false) if s == "false" => Some(false),
            _ => {
                self.expected(node, what, "true or false");
                None
            }
        }
    }

    /// A non-empty list of strings: a program and its arguments, never a shell line.
    fn argv(&mut self, node: &Node, what: &str) -> Option<Vec<String>> {
        let items = self.seq(node, what)?;
        if items.is_empty() {
            self.error(
                node,
                format!("{what}: give a program and its arguments, e.g. [ipmitool, …]"),
            );
            return None;
        }
        let out: Vec<Option<String>> = items
            .iter()
            .map(|i| self.string(i, &format!("an element of {what}")))
            .collect();
        out.into_iter().collect()
    }

    fn seq<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        match &node.kind {
            Kind::Seq(items) => Some(items),
            _ => {
                self.expected(node, what, "a list");
                None
            }
        }
    }

    /// A duration: a number of seconds, or a number followed by `s`, `m` or `h`.
    fn duration(&mut self, node: &Node, what: &str) -> Option<u64> {
        let text = match &node.kind {
            Kind::Scalar(s, _) => s.trim().to_string(),
            _ => String::new(),
        };
        let (num, mult) = match text.chars().last() {
            Some('s') => (&text[..text.len() - 1], 1),
            Some('m') => (&text[..text.len() - 1], 60),
            Some('h') => (&text[..text.len() - 1], 3600),
            _ => (text.as_str(), 1),
        };
        match num.parse::<u64>() {
            Ok(n) if n > 0 && n.saturating_mul(mult) <= 7 * 24 * 3600 => Some(n * mult),
            Ok(_) => {
                self.error(
                    node,
                    format!("{what}: `{text}` is out of range (more than 0, at most a week)"),
                );
                None
            }
            Err(_) => {
                self.expected(node, what, "a duration such as 90, 90s, 10m or 2h (at most a week)");
                None
            }
        }
    }

    fn scenario(&mut self, root: &Node) -> Option<Scenario> {
        const TOP: &[&str] = &[
            "name",
            "hosts",
            "kernels",
            "baseline",
            "boot",
            "variants",
            "workloads",
            "iterations",
            "tools",
            "order",
        ];
        let f = self.map(root, "the scenario", TOP)?;
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
        if let Some(b) = &boot {
            self.default_boot = b.method;
        }
        let hosts = self.required(&f, "hosts", "the scenario").and_then(|n| self.hosts(n));
        let kernels = self
            .required(&f, "kernels", "the scenario")
            .and_then(|n| self.kernels(n));
        let baseline_node = f.get("baseline");
        let baseline = baseline_node.and_then(|n| self.name(n, "baseline"));
        let variants = match f.get("variants") {
            Some(n) => self.variants(n),
            None => Some(vec![Variant {
                name: "default".into(),
                policy: Policy::Other,
                features: vec![],
                cpus: None,
            }]),
        };
        let workloads = match self.required(&f, "workloads", "the scenario") {
            Some(n) => self.workloads(n),
            None => (Vec::new(), false),
        };
        let iterations = match f.get("iterations") {
            Some(n) => self.uint(n, "iterations", 1, 1000).map(|n| n as u32),
            None => Some(1),
        };
        let order = match f.get("order") {
            None => Some(Order::Blocked),
            Some(n) => match self.string(n, "order").as_deref() {
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
            },
        };
        let tools = match f.get("tools") {
            Some(n) => self.tools(n),
            None => Some(Vec::new()),
        };

        // Cross-references, checked against the names the file declares even where an
        // entry has problems of its own: every independent problem in one pass.
        let host_names = declared_names(f.get("hosts"));
        let kernel_names = declared_names(f.get("kernels"));
        self.matrix_size(&f, iterations);
        let baseline = match (baseline, baseline_node) {
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
        };
        let (workloads, workloads_ok) = workloads;
        let resolved = self.resolve_workloads(workloads, &hosts, &host_names);
        if let Some(hosts_node) = f.get("hosts") {
            if let Some(hosts) = &hosts {
                let suts = hosts.iter().filter(|h| h.role == Role::Sut).count();
                if suts != 1 {
                    self.error(
                        hosts_node,
                        format!("hosts: exactly one host must have role `sut`, found {suts}"),
                    );
                }
            }
        }
        if let (Some(kernels), Some(kernels_node)) = (&kernels, f.get("kernels")) {
            let items = self.seq(kernels_node, "kernels").unwrap_or(&[]);
            self.check_build_hosts(kernels, items, &hosts, &host_names);
        }
        if let (Some(tools), Some(tools_node)) = (&tools, f.get("tools")) {
            for (t, item) in tools.iter().zip(self.seq(tools_node, "tools").unwrap_or(&[])) {
                for h in &t.on {
                    if !host_names.contains(h) {
                        self.error(item, format!("tool `{}` goes on `{h}`, which is not a host", t.name));
                    }
                }
            }
        }
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
            iterations: iterations?,
            tools: tools?,
            order: order?,
            files: Vec::new(),
        })
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
        let f = self.map(node, "a variant", &["name", "policy", "features", "cpus"])?;
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
            Some(n) => {
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
        Some(Variant {
            name: name?,
            policy: policy?,
            features: features?,
            cpus: cpus?,
        })
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

/// "0-3,8" → [0, 1, 2, 3, 8]; `None` when malformed.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b >= 8192 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => {
                let c: u32 = part.parse().ok()?;
                if c >= 8192 {
                    return None;
                }
                out.push(c);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// A workload before its host is resolved against the hosts section.
struct PendingWorkload {
    name: String,
    on: Option<String>,
    timeout_secs: u64,
    kind: WorkloadKind,
    /// Other hosts the workload names (a server's `on`), with where they are named.
    host_refs: Vec<(String, usize, usize)>,
}

mod hosts;
mod kernel;
mod refs;
mod tools;
mod workload;

#[cfg(test)]
mod tests;
