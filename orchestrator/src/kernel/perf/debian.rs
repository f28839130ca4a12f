//! A Debian kernel source package (`linux-source-7.2`) as a perf's tree: fetched once with
//! `apt-get download`, from the machine's own apt sources when they have it, else from
//! Debian unstable through a sources list of kreg's own (the machine's Debian mirror, the
//! archive keyring), so that /etc/apt is never changed; unpacked once; the tarball in it
//! is the tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::super::{find_deb, msg, run, CacheLock, KernelError};

/// Where kreg keeps the apt state of its own sources for Debian unstable.
fn apt_dir(cache: &Path) -> PathBuf {
    cache.join("apt-unstable")
}

/// The tarball of `package` (fetched and unpacked when not in the cache), and the name of
/// the .deb it came from (its version is in it).
pub fn source_tarball(
    package: &str,
    cache: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<(PathBuf, String), KernelError> {
    let _lock = CacheLock::take(cache)?;
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| msg(format!("cannot create {}: {e}", debs.display())))?;
    let deb = match find_deb(&debs, package) {
        Some(d) => d,
        None => download(package, cache, &debs, log)?,
    };
    let name = deb.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let tree = cache.join("sources").join(name.trim_end_matches(".deb"));
    if !tree.join(".unpacked").exists() {
        log(&format!("unpacking {name}"));
        let _ = std::fs::remove_dir_all(&tree);
        std::fs::create_dir_all(&tree).map_err(|e| msg(format!("cannot create {}: {e}", tree.display())))?;
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree), "dpkg-deb -x")?;
        std::fs::write(tree.join(".unpacked"), "").map_err(|e| msg(e.to_string()))?;
    }
    let src = tree.join("usr/src");
    let tarball = std::fs::read_dir(&src)
        .ok()
        .and_then(|rd| {
            rd.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("linux-source-") && n.contains(".tar"))
            })
        })
        .ok_or_else(|| {
            msg(format!(
                "{name} has no usr/src/linux-source-*.tar.* in it: not a kernel source package"
            ))
        })?;
    Ok((tarball, name))
}

/// `apt-get download` with the machine's sources, else with kreg's own for unstable.
fn download(package: &str, cache: &Path, debs: &Path, log: &mut dyn FnMut(&str)) -> Result<PathBuf, KernelError> {
    log(&format!("downloading {package} with apt-get download"));
    let system = Command::new("apt-get")
        .args(["download", "-q", package])
        .current_dir(debs)
        .output()
        .map_err(|e| msg(format!("cannot run apt-get: {e}")))?;
    if let Some(d) = system.status.success().then(|| find_deb(debs, package)).flatten() {
        return Ok(d);
    }
    let said = String::from_utf8_lossy(&system.stderr).trim().to_string();
    let mirror = debian_mirror()?;
    let dir = apt_dir(cache);
    log(&format!(
        "{package} is not in this machine's apt sources ({said}); trying Debian unstable at {mirror} through kreg's own sources in {} (/etc/apt is unchanged)",
        dir.display()
    ));
    let parts = dir.join("sources.list.d");
    std::fs::create_dir_all(dir.join("lists/partial")).map_err(|e| msg(e.to_string()))?;
    std::fs::create_dir_all(&parts).map_err(|e| msg(e.to_string()))?;
    let keyring = Path::new("/usr/share/keyrings/debian-archive-keyring.gpg");
    let mut entry = format!("Types: deb\nURIs: {mirror}\nSuites: unstable\nComponents: main\n");
    if keyring.exists() {
        entry.push_str(&format!("Signed-By: {}\n", keyring.display()));
    }
    std::fs::write(parts.join("kreg-unstable.sources"), entry).map_err(|e| msg(e.to_string()))?;
    let private = |cmd: &mut Command| {
        cmd.arg("-q")
            .arg("-o")
            .arg("Dir::Etc::SourceList=/dev/null")
            .arg("-o")
            .arg(format!("Dir::Etc::SourceParts={}", parts.display()))
            .arg("-o")
            .arg(format!("Dir::State::Lists={}", dir.join("lists").display()));
    };
    let mut update = Command::new("apt-get");
    private(&mut update);
    run(
        update.arg("update"),
        "apt-get update (kreg's sources for Debian unstable)",
    )?;
    let mut dl = Command::new("apt-get");
    private(&mut dl);
    run(
        dl.args(["download", package]).current_dir(debs),
        &format!("apt-get download {package} from Debian unstable"),
    )
    .map_err(|e| msg(format!("{e}\n(this machine's own sources: {said})")))?;
    find_deb(debs, package).ok_or_else(|| msg(format!("apt-get download {package} left no .deb in {}", debs.display())))
}

/// The Debian mirror the machine's apt sources use for a release's main component.
fn debian_mirror() -> Result<String, KernelError> {
    let out = Command::new("apt-get")
        .args([
            "indextargets",
            "--format",
            "$(REPO_URI) $(RELEASE) $(COMPONENT) $(IDENTIFIER)",
        ])
        .output()
        .map_err(|e| msg(format!("cannot run apt-get indextargets: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    mirror_of(&text).ok_or_else(|| {
        msg("the machine's apt sources have no Debian release's main component: kreg cannot tell which Debian mirror to fetch from")
    })
}

/// The first `URI RELEASE main Packages` line whose release is a release (no `-updates`,
/// `-security`), and whose URI is not the security archive.
pub(crate) fn mirror_of(indextargets: &str) -> Option<String> {
    indextargets.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "main" && f[3] == "Packages" && !f[1].contains('-') && !f[0].contains("security"))
            .then(|| f[0].trim_end_matches('/').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::mirror_of;

    #[test]
    fn the_mirror_is_the_release_s_not_the_security_archive_s() {
        let text = "http://deb.debian.org/debian-security/ bookworm-security main Packages\nhttp://ftp.de.debian.org/debian/ bookworm-updates main Packages\nhttp://ftp.de.debian.org/debian/ bookworm contrib Packages\nhttp://ftp.de.debian.org/debian/ bookworm main Packages\n";
        assert_eq!(mirror_of(text).as_deref(), Some("http://ftp.de.debian.org/debian"));
        assert_eq!(mirror_of("http://x/ bookworm-updates main Packages\n"), None);
    }
}
