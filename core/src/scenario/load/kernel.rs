//! A kernel entry: where the kernel comes from, and for built kernels the config and patches.

use super::super::*;
use super::{Cx, Fields};
use crate::scenario::keys;
use crate::yaml::{Kind, Node};

impl<'a> Cx<'a> {
    pub(super) fn kernels(&mut self, node: &Node) -> Option<Vec<Kernel>> {
        let items = self.seq(node, "kernels")?;
        if items.is_empty() {
            self.error(
                node,
                "kernels: declare at least one kernel (source `running` stays on the current one)",
            );
            return None;
        }
        let (out, ok) = self.named_items(items, "kernel", Self::kernel, |k| &k.name);
        ok.then(|| out.into_iter().map(|(_, k)| k).collect())
    }

    /// The kernels, each with its perf: its own, else the scenario's `perf:`.
    pub(super) fn kernels_with_perf(&mut self, f: &Fields) -> Option<Vec<Kernel>> {
        let perf = match f.get("perf") {
            Some(n) => self.perf_source(n, "perf").map(Some),
            None => Some(None),
        };
        let kernels = self
            .required(f, "kernels", "the scenario")
            .and_then(|n| self.kernels(n));
        Some(with_default_perf(kernels?, perf?))
    }

    pub(super) fn kernel(&mut self, node: &Node) -> Option<Kernel> {
        let f = self.map(node, "a kernel", &keys::KERNEL)?;
        let name = self
            .required(&f, "name", "a kernel")
            .and_then(|n| self.name(n, "kernel name"));
        let what = format!("kernel `{}`", name.as_deref().unwrap_or("?"));
        let cmdline = match f.get("cmdline") {
            None => Some(None),
            Some(n) => self.string(n, "cmdline").map(Some),
        };
        let source = self
            .required(&f, "source", &what)
            .and_then(|n| self.kernel_source(n, &f, &what));
        // `perf: tree` belongs to a built kernel's spec; a mapping is a perf of its own.
        let perf = match f.get("perf") {
            Some(n) if !matches!(n.kind, Kind::Scalar(..)) => self.perf_source(n, "perf").map(Some),
            _ => Some(None),
        };
        Some(Kernel {
            name: name?,
            source: source?,
            cmdline: cmdline?,
            perf: perf?,
        })
    }

    /// `{ git: URL, ref: REF }`, `{ tarball: FILE }` or `{ debian: linux-source-X.Y }`.
    pub(in crate::scenario) fn perf_source(&mut self, node: &Node, what: &str) -> Option<PerfSource> {
        let f = self.map(node, what, &keys::PERF)?;
        let given = self.one_of(&f, &["git", "tarball", "debian"], node, |_| {
            format!("{what}: expected `tree` (a built kernel's own tools/perf), {{ debian: linux-source-X.Y }}, {{ git: URL, ref: REF }} or {{ tarball: FILE }}")
        })?;
        if given != "git" {
            if let Some(n) = f.get("ref") {
                self.error(n, "`ref` goes with `git`");
            }
        }
        match given {
            "git" => self.git_tree(&f, what).map(PerfSource::Tree),
            "tarball" => Some(PerfSource::Tree(TreeSource::Tarball {
                path: self.file(f.get("tarball").expect("given"), "the source tarball")?,
            })),
            _ => {
                let d = f.get("debian").expect("given");
                let package = self.string(d, "debian")?;
                if !package.starts_with("linux-source-") || package.contains(char::is_whitespace) {
                    self.error(
                        d,
                        format!("debian: {package:?} is not a Debian kernel source package (linux-source-X.Y)"),
                    );
                    return None;
                }
                Some(PerfSource::Debian { package })
            }
        }
    }

    fn kernel_source(&mut self, node: &Node, kernel: &Fields, what: &str) -> Option<KernelSource> {
        let built_only = |cx: &mut Self| {
            for key in ["config", "patches", "build_on", "perf"] {
                let own_perf = key == "perf" && kernel.get(key).is_some_and(|n| !matches!(n.kind, Kind::Scalar(..)));
                if let Some(n) = kernel.get(key).filter(|_| !own_perf) {
                    cx.error(
                        n,
                        format!("`{key}` applies only to kernels built from `git` or `tarball` sources"),
                    );
                }
            }
        };
        if let Kind::Scalar(s, _) = &node.kind {
            if s == "running" {
                built_only(self);
                return Some(KernelSource::Running);
            }
        }
        let src_what = format!("the source of {what}");
        let f = self.map(node, &src_what, &keys::KERNEL_SOURCE)?;
        let given = self.one_of(&f, &["deb", "path", "git", "tarball"], node, |_| {
            format!("{src_what}: expected `running`, {{ deb: PACKAGE }}, {{ path: VMLINUZ }}, {{ git: URL, ref: REF }} or {{ tarball: FILE }}")
        })?;
        if given != "git" {
            if let Some(n) = f.get("ref") {
                self.error(n, "`ref` goes with `git`");
            }
        }
        match given {
            "deb" => {
                built_only(self);
                let d = f.get("deb").expect("given");
                let package = self.string(d, "deb")?;
                if !package.starts_with("linux-image-") {
                    self.error(
                        d,
                        format!("deb: {package:?} is not a Debian kernel image package (linux-image-…)"),
                    );
                    return None;
                }
                Some(KernelSource::Deb { package })
            }
            "path" => {
                built_only(self);
                Some(KernelSource::Path {
                    vmlinuz: self.file(f.get("path").expect("given"), "the kernel image")?,
                })
            }
            kind => {
                let tree = if kind == "git" {
                    self.git_tree(&f, &src_what)?
                } else {
                    TreeSource::Tarball {
                        path: self.file(f.get("tarball").expect("given"), "the source tarball")?,
                    }
                };
                self.build_spec(kernel, what, tree)
            }
        }
    }

    /// `{ git: URL, ref: REF }`; a local repository path is taken from the scenario's folder.
    fn git_tree(&mut self, f: &Fields, src_what: &str) -> Option<TreeSource> {
        let url = self.string(f.get("git").expect("given"), "git");
        let git_ref = self.required(f, "ref", src_what).and_then(|n| {
            let r = self.string(n, "ref")?;
            if r.starts_with('-') || r.is_empty() {
                self.error(n, format!("ref: {r:?} is not a git ref"));
                return None;
            }
            Some(r)
        });
        let url = url?;
        let url = if url.contains("://") || url.starts_with('/') || url.contains('@') {
            url
        } else {
            self.base_dir.join(url).display().to_string()
        };
        Some(TreeSource::Git { url, git_ref: git_ref? })
    }

    /// How a kernel from a source tree is built: its config, patches and build host.
    fn build_spec(&mut self, kernel: &Fields, what: &str, tree: TreeSource) -> Option<KernelSource> {
        let config = self.required(kernel, "config", what).and_then(|n| self.config_spec(n));
        let patches = match kernel.get("patches") {
            None => Some(Vec::new()),
            Some(n) => {
                let items = self.seq(n, "patches")?;
                items.iter().map(|i| self.file(i, "a patch file")).collect()
            }
        };
        let build_on = match kernel.get("build_on") {
            None => Some(None),
            Some(n) => match self.string(n, "build_on")?.as_str() {
                "controller" => Some(None),
                host => Some(Some(host.to_string())),
            },
        };
        let perf = match kernel.get("perf") {
            None => Some(false),
            Some(n) if !matches!(n.kind, Kind::Scalar(..)) => Some(false),
            Some(n) => match self.string(n, "perf")?.as_str() {
                "tree" => Some(true),
                other => {
                    self.error(
                        n,
                        format!("perf: `{other}`: expected `tree` (perf built from this kernel's tools/perf), or a source of its own ({{ debian: linux-source-X.Y }}, {{ git: URL, ref: REF }}, {{ tarball: FILE }}); without it, the machine's own perf runs"),
                    );
                    None
                }
            },
        };
        Some(KernelSource::Build(BuildSpec {
            tree,
            config: config?,
            patches: patches?,
            build_on: build_on?,
            perf: perf?,
        }))
    }

    fn config_spec(&mut self, node: &Node) -> Option<ConfigSpec> {
        let f = self.map(node, "config", &keys::KERNEL_CONFIG)?;
        let base = match f.get("base") {
            None => Some(ConfigBase::Defconfig),
            Some(n) => match self.string(n, "base")?.as_str() {
                "running" => Some(ConfigBase::Running),
                "defconfig" => Some(ConfigBase::Defconfig),
                "tinyconfig" => Some(ConfigBase::Tinyconfig),
                _ => self.file(n, "the base config file").map(ConfigBase::File),
            },
        };
        let set = match f.get("set") {
            None => Some(Vec::new()),
            Some(n) => {
                let items = self.seq(n, "set")?;
                let mut out = Vec::new();
                let mut ok = true;
                for item in items {
                    let Some(s) = self.string(item, "a config option") else {
                        ok = false;
                        continue;
                    };
                    match crate::kconfig::parse_assignment(&s) {
                        Ok(pair) => out.push(pair),
                        Err(e) => {
                            self.error(item, format!("set: {e}"));
                            ok = false;
                        }
                    }
                }
                ok.then_some(out)
            }
        };
        Some(ConfigSpec { base: base?, set: set? })
    }
}

/// The scenario's `perf:` for every kernel without a perf of its own (`perf: tree` or a
/// source mapping).
fn with_default_perf(kernels: Vec<Kernel>, perf: Option<PerfSource>) -> Vec<Kernel> {
    kernels
        .into_iter()
        .map(|mut k| {
            let tree = matches!(&k.source, KernelSource::Build(b) if b.perf);
            if k.perf.is_none() && !tree {
                k.perf = perf.clone();
            }
            k
        })
        .collect()
}
