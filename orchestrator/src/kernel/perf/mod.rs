//! perf built from a kernel's own tree (`perf: tree`), as reproducers do when the
//! distribution's perf is older than the kernel under test: `make -C tools/perf` on the
//! controller, from the same tree and patches as the kernel, cached by tree, patches and
//! compiler (a config change rebuilds the kernel, not perf).
//!
//! The binary is linked against the controller's libraries: it runs on a lab guest (its
//! libraries go into the initramfs with it) and on machines with the controller's
//! distribution; a machine where it does not run fails the kernel's jobs saying so.

use std::path::{Path, PathBuf};

use super::build::{apply_patches, extract, git_tree, sha256_file, sha256_hex, stream_make, Built};
use super::{msg, KernelError};
use crate::scenario::{BuildSpec, PerfSource, TreeSource};

mod debian;
pub mod support;

/// What `make` is told: no Python or Perl scripting (their headers are rarely installed
/// and the collectors need neither), no documentation, and warnings left as warnings (an
/// older tree meets a newer compiler). Features whose libraries are missing are left out
/// by perf's own detection.
pub const MAKE_VARS: &[&str] = &["NO_LIBPYTHON=1", "NO_LIBPERL=1", "WERROR=0", "NO_DOCS=1"];

/// What a perf of its own source is built without besides: LLVM (a 100 MB library to
/// carry to every machine), the Rust test workload (it breaks the archive step where a
/// rustup toolchain is on PATH), the CPUs' event tables and BPF. perf's own collectors and
/// `perf sched stats` need none of them; `perf: tree` builds a tree's perf as it comes.
pub const SOURCE_MAKE_VARS: &[&str] = &["NO_LIBLLVM=1", "NO_RUST=1", "NO_JEVENTS=1", "NO_LIBBPF=1"];

/// A tree's perf in the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePerf {
    pub path: PathBuf,
    pub sha256: String,
}

/// Builds perf from `spec`'s tree and patches, or finds it in the cache. Its key comes
/// from the kernel's build (tree, patches, compiler), so a cached perf costs no fetch.
/// A perf's place in the cache, by what went into it: its key (16 hex digits of the
/// inputs' SHA-256), its folder and its binary.
fn cache_slot(cache: &Path, inputs: &str) -> (String, PathBuf, PathBuf) {
    let key = sha256_hex(inputs.as_bytes())[..16].to_string();
    let dir = cache.join("perf").join(&key);
    let bin = dir.join("perf");
    (key, dir, bin)
}

pub fn build(
    spec: &BuildSpec,
    kernel: &Built,
    cache: &Path,
    jobs: u32,
    log: &mut dyn FnMut(&str),
) -> Result<TreePerf, KernelError> {
    let (key, dir, bin) = cache_slot(
        cache,
        &format!(
            "tools/perf\n{}\n{}\n{}\n",
            kernel.made.tree_hash, kernel.made.patches_hash, kernel.made.compiler
        ),
    );
    if bin.exists() {
        log(&format!("perf of this tree is in the cache ({key}), nothing to build"));
        return found(bin);
    }
    let git = match &spec.tree {
        TreeSource::Git { url, git_ref } => {
            let (mirror, commit, _) = git_tree(url, git_ref, cache)?;
            Some((mirror, commit))
        }
        TreeSource::Tarball { .. } => None,
    };
    let work = cache.join("work").join(format!("perf-{key}"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| msg(format!("{}: {e}", work.display())))?;
    std::fs::create_dir_all(&dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
    let result = compile(&spec.tree, &spec.patches, git.as_ref(), &work, &dir, jobs, &[], log);
    let _ = std::fs::remove_dir_all(&work);
    result?;
    found(bin)
}

/// Builds perf from a source of its own (`perf: { debian | git | tarball }`), or finds it
/// in the cache: keyed by the source's content (the tarball's hash, the commit, the Debian
/// package's file), the compiler and the make variables, so that every kernel of a run and
/// every later run share one build.
pub fn build_source(
    source: &PerfSource,
    cache: &Path,
    jobs: u32,
    log: &mut dyn FnMut(&str),
) -> Result<TreePerf, KernelError> {
    let compiler = super::build::compiler()?;
    let (tree, git, identity) = match source {
        PerfSource::Tree(TreeSource::Git { url, git_ref }) => {
            let (mirror, commit, _) = git_tree(url, git_ref, cache)?;
            let id = format!("git {commit}");
            (
                TreeSource::Git {
                    url: url.clone(),
                    git_ref: git_ref.clone(),
                },
                Some((mirror, commit)),
                id,
            )
        }
        PerfSource::Tree(TreeSource::Tarball { path }) => {
            let id = format!("tarball {}", sha256_file(path)?);
            (TreeSource::Tarball { path: path.clone() }, None, id)
        }
        PerfSource::Debian { package } => {
            let (tarball, deb) = debian::source_tarball(package, cache, log)?;
            (TreeSource::Tarball { path: tarball }, None, format!("debian {deb}"))
        }
    };
    let (key, dir, bin) = cache_slot(
        cache,
        &format!(
            "perf source\n{identity}\n{compiler}\n{}\n{}\n",
            MAKE_VARS.join(" "),
            SOURCE_MAKE_VARS.join(" ")
        ),
    );
    if bin.exists() {
        log(&format!("perf from {source} is in the cache ({key}), nothing to build"));
        return found(bin);
    }
    let _lock = super::CacheLock::take_named(cache, &format!("perf-{key}"))?;
    if bin.exists() {
        log(&format!("perf from {source} was built meanwhile ({key})"));
        return found(bin);
    }
    log(&format!("building perf from {source} ({key})"));
    let work = cache.join("work").join(format!("perf-{key}"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| msg(format!("{}: {e}", work.display())))?;
    std::fs::create_dir_all(&dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
    let result = compile(&tree, &[], git.as_ref(), &work, &dir, jobs, SOURCE_MAKE_VARS, log)
        .map_err(|e| msg(e.to_string().replace("perf: tree:", &format!("perf from {source}:"))));
    let _ = std::fs::remove_dir_all(&work);
    result?;
    found(bin)
}

fn found(path: PathBuf) -> Result<TreePerf, KernelError> {
    let sha256 = sha256_file(&path)?;
    Ok(TreePerf { path, sha256 })
}

/// Extracts and patches the tree into `work`, builds tools/perf there, and copies the
/// binary into `dir` (last, so that a failed build leaves nothing that looks done).
#[allow(clippy::too_many_arguments)]
fn compile(
    tree: &TreeSource,
    patches: &[PathBuf],
    git: Option<&(PathBuf, String)>,
    work: &Path,
    dir: &Path,
    jobs: u32,
    extra: &[&str],
    log: &mut dyn FnMut(&str),
) -> Result<(), KernelError> {
    extract(tree, git, work, log)?;
    apply_patches(patches, work, log)?;
    let tools = work.join("tools/perf");
    if !tools.join("Makefile").exists() {
        return Err(msg("perf: tree: this tree has no tools/perf/Makefile"));
    }
    let out = work.join("perf-out");
    std::fs::create_dir_all(&out).map_err(|e| msg(e.to_string()))?;
    log("building tools/perf");
    let o = format!("O={}", out.display());
    let mut args: Vec<&str> = vec![&o];
    args.extend(MAKE_VARS);
    args.extend(extra);
    stream_make(&tools, jobs, &args, &dir.join("build.log"), log)
        .map_err(|e| msg(format!("perf: tree: building tools/perf failed: {e}")))?;
    let built = out.join("perf");
    if !built.exists() {
        return Err(msg(format!(
            "perf: tree: make finished but left no {}",
            built.display()
        )));
    }
    let tmp = dir.join("perf.tmp");
    std::fs::copy(&built, &tmp).map_err(|e| msg(format!("{}: {e}", built.display())))?;
    std::fs::rename(&tmp, dir.join("perf")).map_err(|e| msg(e.to_string()))
}
