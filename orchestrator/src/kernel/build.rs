//! Building a kernel on the controller's machine: the tree (git ref or tarball), patches in
//! order, the config (base + `set:` + olddefconfig, every requested option checked), a
//! LOCALVERSION derived from the content hash, `make -jN`, and a content-addressed cache:
//! the same tree, config, patches and compiler build once.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::{msg, KernelError};
pub(crate) use super::{sha256_hex, stdout_of as run};
use crate::kconfig;
use crate::scenario::{BuildSpec, ConfigBase, TreeSource};

/// A built kernel in the cache.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Built {
    /// Content key: tree, config, patches and compiler.
    pub key: String,
    pub release: String,
    #[serde(flatten)]
    pub made: Fingerprint,
    /// `UTS_VERSION` as /proc/version will show it ("#1 SMP PREEMPT_DYNAMIC …"), when known.
    pub uts_version: Option<String>,
    pub dir: PathBuf,
    pub has_modules: bool,
    /// Where it was compiled: "controller" or a host's name.
    #[serde(default = "controller")]
    pub built_on: String,
    /// Whether this call compiled it (false: taken from the cache).
    #[serde(skip)]
    pub built_now: bool,
    /// The commit its git tree was checked out at for this call (a cached build found by
    /// its tree's content says which commit asked for it now); `None` for a tarball.
    #[serde(skip)]
    pub commit: Option<String>,
}

/// What a build was made from and what it says it is: stored with it, shown on the kernels'
/// pages, and compared between runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, sqlx::FromRow)]
pub struct Fingerprint {
    pub localversion: String,
    pub tree_hash: String,
    pub config_hash: String,
    pub patches_hash: String,
    pub compiler: String,
    pub build_id: String,
}

impl Built {
    pub fn image(&self) -> PathBuf {
        self.dir.join("bzImage")
    }
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config")
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("build.log")
    }
    pub fn modules_dir(&self) -> Option<PathBuf> {
        self.has_modules
            .then(|| self.dir.join("modroot/lib/modules").join(&self.release))
    }
}

fn controller() -> String {
    "controller".into()
}

/// A configured tree to compile (its .config final), the folder its results go to, and
/// whether it has modules.
#[derive(Debug, Clone, Copy)]
pub struct Tree<'a> {
    pub work: &'a Path,
    pub out: &'a Path,
    pub has_modules: bool,
}

/// Where a kernel gets compiled: this machine ([`Local`]) or a host of the scenario through
/// its agent ([`super::remote::Remote`]). Fetching, patching and configuring always happen
/// on the controller; the compile runs on the build host with its compiler and cores.
pub trait BuildHost {
    /// "controller" or the host's name, as `kreg kernels` shows it.
    fn place(&self) -> String;
    /// The compiler, as the first line of `gcc --version` there names it.
    fn compiler(&mut self) -> Result<String, KernelError>;
    /// Parallel jobs for make.
    fn jobs(&self) -> u32;
    /// Compiles the configured tree `work` (its .config final) and leaves in `out`:
    /// bzImage, System.map and, with modules, modroot/lib/modules/RELEASE. Every output
    /// line goes to `log` and to out/build.log.
    fn compile(&mut self, tree: Tree<'_>, log: &mut dyn FnMut(&str)) -> Result<Compiled, KernelError>;
}

/// What a compile tells about its result.
pub struct Compiled {
    /// `make kernelrelease`.
    pub release: String,
    /// The GNU build id of vmlinux, when readelf finds one.
    pub build_id: Option<String>,
    pub uts_version: Option<String>,
}

/// UTS_VERSION ("#1 SMP PREEMPT_DYNAMIC <date>") from a generated header's text (it
/// lives in utsversion.h since 5.19, in compile.h before).
pub(crate) fn uts_version_of(header: &str) -> Option<String> {
    header.lines().find_map(|l| {
        l.strip_prefix("#define UTS_VERSION ")
            .map(|v| v.trim().trim_matches('"').to_string())
    })
}

/// The GNU build id in `readelf -n` output.
pub(crate) fn build_id_of(readelf: &str) -> Option<String> {
    readelf
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID:").map(|s| s.trim().to_string()))
}

/// The controller's own machine.
pub struct Local {
    pub jobs: u32,
}

impl BuildHost for Local {
    fn place(&self) -> String {
        controller()
    }

    fn compiler(&mut self) -> Result<String, KernelError> {
        compiler()
    }

    fn jobs(&self) -> u32 {
        self.jobs
    }

    fn compile(&mut self, tree: Tree<'_>, log: &mut dyn FnMut(&str)) -> Result<Compiled, KernelError> {
        let Tree { work, out, has_modules } = tree;
        let mut targets = vec!["bzImage"];
        if has_modules {
            targets.push("modules");
        }
        stream_make(work, self.jobs, &targets, &out.join("build.log"), log)?;
        let release = make(work, &["-s", "kernelrelease"], "make kernelrelease")?;
        std::fs::copy(work.join("arch/x86/boot/bzImage"), out.join("bzImage"))
            .map_err(|e| msg(format!("no bzImage: {e}")))?;
        let _ = std::fs::copy(work.join("System.map"), out.join("System.map"));
        if has_modules {
            let modroot = out.join("modroot");
            run(
                Command::new("make")
                    .env("LOCALVERSION", "")
                    .arg("-C")
                    .arg(work)
                    .arg(format!("INSTALL_MOD_PATH={}", modroot.display()))
                    .args(["modules_install"]),
                "make modules_install",
            )?;
        }
        let build_id = Command::new("readelf")
            .args(["-n"])
            .arg(work.join("vmlinux"))
            .output()
            .ok()
            .and_then(|o| build_id_of(&String::from_utf8_lossy(&o.stdout)));
        let uts_version = ["include/generated/utsversion.h", "include/generated/compile.h"]
            .iter()
            .find_map(|f| uts_version_of(&std::fs::read_to_string(work.join(f)).ok()?));
        Ok(Compiled {
            release,
            build_id,
            uts_version,
        })
    }
}

pub(super) fn sha256_file(path: &Path) -> Result<String, KernelError> {
    let mut f = std::fs::File::open(path).map_err(|e| msg(format!("{}: {e}", path.display())))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| msg(format!("{}: {e}", path.display())))?;
    Ok(hex::encode(h.finalize()))
}

/// The compiler the build uses, as `gcc --version` names it.
pub(super) fn compiler() -> Result<String, KernelError> {
    let v = run(Command::new("gcc").arg("--version"), "gcc --version")?;
    Ok(v.lines().next().unwrap_or("").to_string())
}

/// A bare mirror of a git repository in the cache, fetched; returns (mirror, commit, tree).
pub(crate) fn git_tree(url: &str, git_ref: &str, cache: &Path) -> Result<(PathBuf, String, String), KernelError> {
    let mirror = cache.join("git").join(&sha256_hex(url.as_bytes())[..16]);
    if mirror.join("HEAD").exists() {
        run(
            Command::new("git").arg("--git-dir").arg(&mirror).args([
                "fetch",
                "--quiet",
                "--tags",
                "--force",
                "origin",
                "+refs/heads/*:refs/heads/*",
            ]),
            "git fetch",
        )?;
    } else {
        std::fs::create_dir_all(mirror.parent().expect("has parent")).map_err(|e| msg(e.to_string()))?;
        run(
            Command::new("git")
                .args(["clone", "--quiet", "--bare", "--", url])
                .arg(&mirror),
            &format!("git clone {url}"),
        )?;
    }
    let commit = run(
        Command::new("git").arg("--git-dir").arg(&mirror).args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{git_ref}^{{commit}}"),
        ]),
        &format!("resolving ref {git_ref}"),
    )
    .map_err(|_| msg(format!("ref {git_ref:?} does not exist in {url}")))?;
    let tree = run(
        Command::new("git")
            .arg("--git-dir")
            .arg(&mirror)
            .args(["rev-parse", &format!("{commit}^{{tree}}")]),
        "git rev-parse",
    )?;
    Ok((mirror, commit, tree))
}

/// Hash over the patches' contents, in order.
fn patches_hash(patches: &[PathBuf]) -> Result<String, KernelError> {
    let mut h = Sha256::new();
    for p in patches {
        let bytes = std::fs::read(p).map_err(|e| msg(format!("patch {}: {e}", p.display())))?;
        h.update(Sha256::digest(&bytes));
    }
    Ok(hex::encode(h.finalize()))
}

/// What identifies a build before any work: tree, config request, patches, compiler.
fn input_key(
    tree_hash: &str,
    spec: &BuildSpec,
    base_text: &Option<String>,
    patches: &str,
    compiler: &str,
) -> Result<String, KernelError> {
    let base = match &spec.config.base {
        ConfigBase::Running => format!("running:{}", sha256_hex(base_text.as_deref().unwrap_or("").as_bytes())),
        ConfigBase::Defconfig => "defconfig".into(),
        ConfigBase::Tinyconfig => "tinyconfig".into(),
        ConfigBase::File(p) => format!("file:{}", sha256_file(p)?),
    };
    let set: String = spec.config.set.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    Ok(sha256_hex(
        format!("{tree_hash}\n{base}\n{set}\n{patches}\n{compiler}\n").as_bytes(),
    ))
}

fn make(dir: &Path, args: &[&str], what: &str) -> Result<String, KernelError> {
    run(
        Command::new("make")
            .env("LOCALVERSION", "")
            .arg("-C")
            .arg(dir)
            .args(args),
        what,
    )
}

/// The Kconfig files of a tree that count on x86 (other architectures' are left out), for
/// explaining dropped options.
fn kconfigs(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let arch = dir.join("arch");
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if d == arch && p.is_dir() && name != "x86" {
                continue;
            }
            if p.is_dir() && !name.starts_with('.') {
                stack.push(p);
            } else if name.starts_with("Kconfig") {
                if let Ok(text) = std::fs::read_to_string(&p) {
                    out.push((p.display().to_string(), text));
                }
            }
        }
    }
    out
}

/// Builds (or finds in the cache) the kernel `spec` describes. `running_config` is the
/// SUT's config text when the base is `running`. Build output lines go to `log`.
pub fn build(
    spec: &BuildSpec,
    cache: &Path,
    running_config: Option<String>,
    host: &mut dyn BuildHost,
    log: &mut dyn FnMut(&str),
) -> Result<Built, KernelError> {
    let compiler = host.compiler()?;
    let patches = patches_hash(&spec.patches)?;
    if matches!(spec.config.base, ConfigBase::Running) && running_config.is_none() {
        return Err(msg(
            "config base `running`: the SUT's running config could not be read (/proc/config.gz, /boot/config-RELEASE)",
        ));
    }
    let (tree_hash, git) = match &spec.tree {
        TreeSource::Git { url, git_ref } => {
            let (mirror, commit, tree) = git_tree(url, git_ref, cache)?;
            (tree, Some((mirror, commit)))
        }
        TreeSource::Tarball { path } => (sha256_file(path)?, None),
    };
    let ikey = input_key(&tree_hash, spec, &running_config, &patches, &compiler)?;
    let index = cache.join("builds").join("by-input").join(&ikey);
    let commit = git.as_ref().map(|g| g.1.clone());
    if let Ok(key) = std::fs::read_to_string(&index) {
        if let Some(mut b) = load(cache, key.trim()) {
            log(&format!(
                "kernel {} is in the cache ({}), nothing to build",
                b.release, b.key
            ));
            b.commit = commit;
            return Ok(b);
        }
    }

    let shared = match (&spec.tree, &git) {
        (TreeSource::Git { url, .. }, Some(_)) if host.place() == controller() => Some(super::worktree::shared_key(
            url,
            &input_key("", spec, &running_config, "", &compiler)?,
        )),
        _ => None,
    };
    let inputs = Inputs {
        tree_hash,
        git,
        patches,
        compiler,
    };
    let built = match shared {
        Some(share) => {
            // One work tree per repository, config request and compiler, kept between
            // builds: a commit checked out there recompiles only what it changed.
            let _lock = super::CacheLock::take_named(cache, &format!("work-{share}"))?;
            let work = cache.join("work").join(format!("shared-{share}"));
            let (mirror, commit) = inputs.git.as_ref().expect("a git tree");
            super::worktree::checkout(mirror, commit, &work, log)?;
            build_in(spec, cache, &work, running_config, host, log, inputs, false)?
        }
        None => {
            // A fresh work tree.
            let work = cache.join("work").join(&ikey[..16]);
            let _ = std::fs::remove_dir_all(&work);
            std::fs::create_dir_all(&work).map_err(|e| msg(format!("{}: {e}", work.display())))?;
            let result = build_in(spec, cache, &work, running_config, host, log, inputs, true);
            let _ = std::fs::remove_dir_all(&work);
            result?
        }
    };
    std::fs::create_dir_all(index.parent().expect("has parent")).map_err(|e| msg(e.to_string()))?;
    std::fs::write(&index, &built.key).map_err(|e| msg(e.to_string()))?;
    Ok(Built { commit, ..built })
}

/// A build in the cache, by key.
pub fn load(cache: &Path, key: &str) -> Option<Built> {
    let dir = cache.join("builds").join(key);
    let text = std::fs::read_to_string(dir.join("meta.json")).ok()?;
    let mut b: Built = serde_json::from_str(&text).ok()?;
    b.dir = dir;
    b.image().exists().then_some(b)
}

/// What identifies a build besides its configuration: the tree, the patches, the compiler.
struct Inputs {
    tree_hash: String,
    /// For a git tree: the mirror and the commit to extract.
    git: Option<(PathBuf, String)>,
    patches: String,
    compiler: String,
}

/// The build in a fresh work tree: extract, patch, configure, then compile unless a build
/// of the same content key is already in the cache.
#[allow(clippy::too_many_arguments)]
fn build_in(
    spec: &BuildSpec,
    cache: &Path,
    work: &Path,
    running_config: Option<String>,
    host: &mut dyn BuildHost,
    log: &mut dyn FnMut(&str),
    inputs: Inputs,
    fresh: bool,
) -> Result<Built, KernelError> {
    if fresh {
        extract(&spec.tree, inputs.git.as_ref(), work, log)?;
    }
    apply_patches(&spec.patches, work, log)?;
    let config = configure(spec, work, running_config)?;
    let config_hash = sha256_hex(kconfig::canonical(&config).as_bytes());
    let key = sha256_hex(
        format!(
            "{}\n{config_hash}\n{}\n{}\n",
            inputs.tree_hash, inputs.patches, inputs.compiler
        )
        .as_bytes(),
    )[..16]
        .to_string();
    if let Some(b) = load(cache, &key) {
        log(&format!(
            "kernel {} is in the cache ({key}), nothing to build",
            b.release
        ));
        return Ok(b);
    }
    let keyed = Keyed {
        inputs,
        key,
        config_hash,
    };
    compile(cache, work, &config, host, log, keyed)
}

/// A build's inputs with its configuration's hash and the content key they make.
struct Keyed {
    inputs: Inputs,
    key: String,
    config_hash: String,
}

/// Each patch in order with `patch -p1`, none with fuzz.
pub(super) fn apply_patches(patches: &[PathBuf], work: &Path, log: &mut dyn FnMut(&str)) -> Result<(), KernelError> {
    for p in patches {
        log(&format!("applying {}", p.display()));
        run(
            Command::new("patch")
                .args(["-p1", "--forward", "--batch", "--fuzz=0", "-i"])
                .arg(p)
                .current_dir(work),
            "patch",
        )
        .map_err(|e| msg(format!("patch {} does not apply: {e}", p.display())))?;
    }
    Ok(())
}

/// The source tree into `work`: a commit of the mirror, or a tarball.
pub(super) fn extract(
    tree: &TreeSource,
    git: Option<&(PathBuf, String)>,
    work: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<(), KernelError> {
    match (tree, git) {
        (TreeSource::Git { .. }, Some((mirror, commit))) => {
            log(&format!("extracting {commit}"));
            let tar = work.with_extension("tar");
            run(
                Command::new("git")
                    .arg("--git-dir")
                    .arg(mirror)
                    .args(["archive", "--format=tar", "-o"])
                    .arg(&tar)
                    .arg(commit),
                "git archive",
            )?;
            let r = run(Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(work), "tar");
            let _ = std::fs::remove_file(&tar);
            r.map(drop)
        }
        (TreeSource::Tarball { path }, _) => {
            log(&format!("extracting {}", path.display()));
            run(
                Command::new("tar")
                    .arg("-xf")
                    .arg(path)
                    .arg("-C")
                    .arg(work)
                    .arg("--strip-components=1"),
                "tar",
            )
            .map(drop)
        }
        (TreeSource::Git { .. }, None) => Err(msg("a git tree needs its mirror and commit")),
    }
}

fn read(p: &Path) -> Result<String, KernelError> {
    std::fs::read_to_string(p).map_err(|e| msg(format!("{}: {e}", p.display())))
}

/// The base config, the requested options, olddefconfig; an option olddefconfig dropped is
/// an error that says what it depends on. Returns the final .config.
fn configure(spec: &BuildSpec, work: &Path, running_config: Option<String>) -> Result<String, KernelError> {
    let dotconfig = work.join(".config");
    match &spec.config.base {
        ConfigBase::Defconfig => drop(make(work, &["defconfig"], "make defconfig")?),
        ConfigBase::Tinyconfig => drop(make(work, &["tinyconfig"], "make tinyconfig")?),
        ConfigBase::File(p) => {
            std::fs::copy(p, &dotconfig).map_err(|e| msg(format!("config {}: {e}", p.display())))?;
        }
        ConfigBase::Running => {
            std::fs::write(&dotconfig, running_config.unwrap_or_default()).map_err(|e| msg(e.to_string()))?
        }
    }
    std::fs::write(&dotconfig, kconfig::apply(&read(&dotconfig)?, &spec.config.set)).map_err(|e| msg(e.to_string()))?;
    make(work, &["olddefconfig"], "make olddefconfig")?;
    let config = read(&dotconfig)?;
    let dropped = kconfig::dropped(&config, &spec.config.set);
    if dropped.is_empty() {
        return Ok(config);
    }
    let trees = kconfigs(work);
    let lines: Vec<String> = dropped
        .iter()
        .map(|(name, want, now)| {
            let now = now
                .as_deref()
                .map(|v| format!("={v}"))
                .unwrap_or_else(|| " not set".into());
            let deps = match kconfig::depends_on(&trees, name.trim_start_matches("CONFIG_")) {
                Some(d) => format!("it depends on: {}", kconfig::annotate(&d, &config)),
                None => "no Kconfig in this tree defines it".into(),
            };
            format!("{name}={want} did not survive olddefconfig (now{now}); {deps}")
        })
        .collect();
    Err(msg(lines.join("\n")))
}

/// LOCALVERSION set from the key, the compile on `host`, and the build recorded in the
/// cache under `key`.
fn compile(
    cache: &Path,
    work: &Path,
    config: &str,
    host: &mut dyn BuildHost,
    log: &mut dyn FnMut(&str),
    keyed: Keyed,
) -> Result<Built, KernelError> {
    let Keyed {
        inputs,
        key,
        config_hash,
    } = keyed;
    let dotconfig = work.join(".config");
    let localversion = format!("-kreg-{}", &key[..8]);
    let with_lv = kconfig::apply(
        config,
        &[
            ("CONFIG_LOCALVERSION".into(), format!("\"{localversion}\"")),
            ("CONFIG_LOCALVERSION_AUTO".into(), "n".into()),
        ],
    );
    std::fs::write(&dotconfig, with_lv).map_err(|e| msg(e.to_string()))?;
    make(work, &["olddefconfig"], "make olddefconfig")?;

    let out = cache.join("builds").join(&key);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|e| msg(e.to_string()))?;
    let has_modules = kconfig::value_of(&read(&dotconfig)?, "CONFIG_MODULES") == Some("y");
    let place = host.place();
    if place != "controller" {
        log(&format!("compiling on {place}"));
    }
    let tree = Tree {
        work,
        out: &out,
        has_modules,
    };
    let compiled = host.compile(tree, log)?;
    std::fs::copy(&dotconfig, out.join("config")).map_err(|e| msg(e.to_string()))?;
    let build_id = compiled.build_id.unwrap_or_else(|| {
        format!(
            "sha256:{}",
            &sha256_file(&out.join("bzImage")).unwrap_or_default()[..16]
        )
    });
    let built = Built {
        key,
        release: compiled.release,
        made: Fingerprint {
            localversion,
            tree_hash: inputs.tree_hash,
            config_hash,
            patches_hash: inputs.patches,
            compiler: inputs.compiler,
            build_id,
        },
        uts_version: compiled.uts_version,
        dir: out.clone(),
        has_modules,
        built_on: place,
        built_now: true,
        commit: None,
    };
    std::fs::write(
        out.join("meta.json"),
        serde_json::to_string_pretty(&built).expect("serialisable"),
    )
    .map_err(|e| msg(e.to_string()))?;
    Ok(built)
}

/// `make -jN TARGETS`, every output line to the log file and to `log`.
pub(super) fn stream_make(
    work: &Path,
    jobs: u32,
    targets: &[&str],
    log_path: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<(), KernelError> {
    let mut file = std::fs::File::create(log_path).map_err(|e| msg(e.to_string()))?;
    // LOCALVERSION set (empty): no "+" appended for a tree that is a git checkout.
    let mut child = Command::new("make")
        .env("LOCALVERSION", "")
        .arg("-C")
        .arg(work)
        .arg(format!("-j{jobs}"))
        .args(targets)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| msg(format!("cannot run make: {e}")))?;
    // stderr on its own thread, so neither pipe fills up.
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let tx2 = tx.clone();
    let t = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx2.send(line);
        }
    });
    let stdout = child.stdout.take().expect("piped");
    let t2 = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut tail: Vec<String> = Vec::new();
    for line in rx {
        let _ = writeln!(file, "{line}");
        log(&line);
        tail.push(line);
        if tail.len() > 20 {
            tail.remove(0);
        }
    }
    let _ = (t.join(), t2.join());
    let status = child.wait().map_err(|e| msg(e.to_string()))?;
    if !status.success() {
        return Err(msg(format!(
            "make {} failed ({status}); log {}:\n{}",
            targets.join(" "),
            log_path.display(),
            tail.join("\n")
        )));
    }
    Ok(())
}
