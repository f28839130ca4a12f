//! The shared work tree of builds from git on the controller: one per repository, config
//! request and compiler, where each commit is checked out in turn so that make recompiles
//! only what the commit changed (a bisection's steps cost seconds, not a fresh build each).

use std::path::Path;
use std::process::Command;

use super::{msg, sha256_hex, stdout_of as run, KernelError};

/// What names a shared work tree: the repository, the config request and the compiler
/// (not the commit, nor the patches: a checkout and a clean put any commit there).
pub(super) fn shared_key(url: &str, request: &str) -> String {
    sha256_hex(format!("{url}\n{request}").as_bytes())[..16].to_string()
}

/// `commit` checked out in the shared work tree `work` (a clone of the mirror sharing its
/// objects, made the first time): tracked files put back as the commit has them (a
/// patch's changes undone), untracked ones that are not build output removed. Files the
/// commit does not change keep their times, so make rebuilds only what it changed.
pub(super) fn checkout(mirror: &Path, commit: &str, work: &Path, log: &mut dyn FnMut(&str)) -> Result<(), KernelError> {
    if !work.join(".git").exists() {
        let _ = std::fs::remove_dir_all(work);
        std::fs::create_dir_all(work.parent().expect("has parent")).map_err(|e| msg(e.to_string()))?;
        run(
            Command::new("git")
                .args(["clone", "--quiet", "--shared", "--no-checkout", "--"])
                .arg(mirror)
                .arg(work),
            "git clone --shared",
        )?;
    }
    log(&format!("checking out {commit} in {}", work.display()));
    let git = |args: &[&str], what: &str| run(Command::new("git").arg("-C").arg(work).args(args), what);
    git(&["checkout", "--quiet", "--force", "--detach", commit], "git checkout")?;
    git(&["clean", "-fdq"], "git clean")?;
    Ok(())
}
