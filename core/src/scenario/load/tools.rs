//! The `tools:` section: where each workload tool comes from and which hosts get it.

use super::super::*;
use super::{Cx, Fields};
use crate::scenario::keys;
use crate::yaml::Node;

impl<'a> Cx<'a> {
    pub(super) fn tools(&mut self, node: &Node) -> Option<Vec<Tool>> {
        let items = self.seq(node, "tools")?;
        let (out, ok) = self.named_items(items, "tool", Self::tool, |t| &t.name);
        ok.then(|| out.into_iter().map(|(_, t)| t).collect())
    }

    fn tool(&mut self, node: &Node) -> Option<Tool> {
        let f = self.map(node, "a tool", &keys::TOOL)?;
        let name = self
            .required(&f, "name", "a tool")
            .and_then(|n| self.name(n, "tool name"));
        let what = format!("tool `{}`", name.as_deref().unwrap_or("?"));
        let on = self.required(&f, "on", &what).and_then(|n| {
            let items = self.seq(n, "on")?;
            if items.is_empty() {
                self.error(n, "on: name at least one host");
                return None;
            }
            items
                .iter()
                .map(|i| self.name(i, "a host name"))
                .collect::<Option<Vec<_>>>()
        });
        let install_dir = match f.get("install_dir") {
            None => Some("/usr/local/bin".to_string()),
            Some(n) => self.string(n, "install_dir").and_then(|d| {
                if !d.starts_with('/') || d.contains("..") {
                    self.error(n, format!("install_dir: {d:?} must be an absolute path without `..`"));
                    return None;
                }
                Some(d)
            }),
        };
        let source = self
            .required(&f, "from", &what)
            .and_then(|n| self.tool_source(n, &what));
        Some(Tool {
            name: name?,
            on: on?,
            source: source?,
            install_dir: install_dir?,
        })
    }

    fn tool_source(&mut self, node: &Node, tool: &str) -> Option<ToolSource> {
        let what = format!("the source of {tool}");
        let f = self.map(node, &what, &keys::TOOL_SOURCE)?;
        let given = self.one_of(&f, &["apt", "git", "upload", "tarball"], node, |n| {
            format!("{what}: give exactly one of `apt`, `git`, `upload` or `tarball` (found {n})")
        })?;
        for k in ["ref", "build"] {
            if let (Some(n), false) = (f.get(k), given == "git") {
                self.error(n, format!("`{k}` goes with `git`, not `{given}`"));
            }
        }
        if let (Some(n), "apt" | "upload") = (f.get("binary"), given) {
            self.error(n, format!("`binary` goes with `git` or `tarball`, not `{given}`"));
        }
        match given {
            "apt" => {
                let n = f.get("apt").expect("given");
                let package = self.string(n, "apt")?;
                let ok = !package.is_empty()
                    && package
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '+' | '-'));
                if !ok {
                    self.error(n, format!("apt: {package:?} is not a Debian package name"));
                    return None;
                }
                Some(ToolSource::Apt { package })
            }
            "git" => self.git_tool(&f, &what),
            "tarball" => {
                let path = self.file(f.get("tarball").expect("given"), "the tarball to upload");
                let binary = self.required(&f, "binary", &what).and_then(|n| self.tree_path(n));
                Some(ToolSource::Tarball {
                    path: path?,
                    binary: binary?,
                })
            }
            _ => {
                let path = self.file(f.get("upload").expect("given"), "the tool to upload")?;
                Some(ToolSource::Upload { path })
            }
        }
    }

    /// `binary:`, a path inside the tool's tree.
    fn tree_path(&mut self, n: &Node) -> Option<String> {
        let b = self.string(n, "binary")?;
        if b.is_empty() || b.starts_with('/') || b.contains("..") {
            self.error(n, format!("binary: {b:?} must be a path inside the source tree"));
            return None;
        }
        Some(b)
    }

    /// `{ git: URL, ref: REF, build: ARGV, binary: PATH }`: built on each host it goes on.
    fn git_tool(&mut self, f: &Fields, what: &str) -> Option<ToolSource> {
        let url = self.string(f.get("git").expect("given"), "git")?;
        let git_ref = self.required(f, "ref", what).and_then(|n| self.string(n, "ref"));
        let build = self
            .required(f, "build", what)
            .and_then(|n| self.argv(n, "build", "give the build command as an argv, e.g. [make]"));
        let binary = self.required(f, "binary", what).and_then(|n| self.tree_path(n));
        if let Some(r) = &git_ref {
            if r.starts_with('-') {
                self.error(
                    f.get("ref").expect("given"),
                    format!("ref: {r:?} may not start with '-'"),
                );
                return None;
            }
        }
        if url.starts_with('-') {
            self.error(f.get("git").expect("given"), "git: a URL may not start with '-'");
            return None;
        }
        Some(ToolSource::Git {
            url,
            git_ref: git_ref?,
            build: build?,
            binary: binary?,
        })
    }
}
