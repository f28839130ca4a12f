//! A bisection's range in the kernel's repository: the commits from good to bad in order,
//! and the bad end with a commit reverted on top (as a patch the build applies first).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::build::{git_tree, run, sha256_hex};
use super::{msg, KernelError};
use crate::bisect::report::Commit;

/// The commits from `good` to `bad` (both included, good first) along bad's first-parent
/// line, as `git bisect` would need them in a line: `good` must be an ancestor of `bad`.
/// The most commits (good and bad included) a bisection's range may have: 2^14, fourteen
/// halvings. Every commit is stored with the bisection (hash, subject, author).
pub const MAX_RANGE: usize = 16_384;

/// A commit's subject and author as stored: at most this many characters each.
const MAX_TEXT: usize = 256;

pub fn commits(url: &str, good: &str, bad: &str, cache: &Path) -> Result<Vec<Commit>, KernelError> {
    let (mirror, good_hash, _) = git_tree(url, good, cache)?;
    let (_, bad_hash, _) = git_tree(url, bad, cache)?;
    let git = |args: &[&str]| Command::new("git").arg("--git-dir").arg(&mirror).args(args).output();
    let ancestor = git(&["merge-base", "--is-ancestor", &good_hash, &bad_hash])
        .map_err(|e| msg(format!("cannot run git: {e}")))?;
    if !ancestor.status.success() || good_hash == bad_hash {
        return Err(msg(format!(
            "good {good} ({}) is not an ancestor of bad {bad} ({}): nothing to bisect between them",
            &good_hash[..12],
            &bad_hash[..12]
        )));
    }
    let count = run(
        Command::new("git").arg("--git-dir").arg(&mirror).args([
            "rev-list",
            "--first-parent",
            "--count",
            &format!("{good_hash}..{bad_hash}"),
        ]),
        "git rev-list",
    )?;
    let n: usize = count.trim().parse().unwrap_or(usize::MAX);
    if n + 1 > MAX_RANGE {
        return Err(msg(format!(
            "good {good} .. bad {bad} is {} commits on bad's first-parent line, more than the {MAX_RANGE} a bisection takes: narrow the range (a good nearer bad, or a bad nearer good)",
            n + 1
        )));
    }
    let list = run(
        Command::new("git").arg("--git-dir").arg(&mirror).args([
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H%x00%s%x00%an <%ae>",
            &format!("{good_hash}..{bad_hash}"),
        ]),
        "git log",
    )?;
    let mut out = vec![describe(&mirror, &good_hash)?];
    for line in list.lines() {
        let mut parts = line.splitn(3, '\0');
        let (hash, subject, author) = (parts.next(), parts.next(), parts.next());
        out.push(Commit {
            hash: hash.unwrap_or_default().to_string(),
            subject: clip(subject.unwrap_or_default()),
            author: clip(author.unwrap_or_default()),
        });
    }
    if out.last().map(|c| c.hash.as_str()) != Some(bad_hash.as_str()) {
        return Err(msg(format!(
            "bad {bad} is not on the first-parent line from good {good}: bisect from a commit of that line"
        )));
    }
    Ok(out)
}

/// A subject or author cut to [`MAX_TEXT`] characters (a `…` says so).
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn describe(mirror: &Path, hash: &str) -> Result<Commit, KernelError> {
    let line = run(
        Command::new("git")
            .arg("--git-dir")
            .arg(mirror)
            .args(["log", "-1", "--format=%H%x00%s%x00%an <%ae>", hash]),
        "git log",
    )?;
    let mut parts = line.splitn(3, '\0');
    Ok(Commit {
        hash: parts.next().unwrap_or_default().to_string(),
        subject: parts.next().unwrap_or_default().to_string(),
        author: parts.next().unwrap_or_default().to_string(),
    })
}

/// `culprit` reverted on top of `bad`, as a patch in the cache (made once): `git revert`
/// in a scratch clone; a conflict is an error that says so.
pub fn revert_patch(url: &str, bad: &str, culprit: &str, cache: &Path) -> Result<PathBuf, KernelError> {
    let (mirror, _, _) = git_tree(url, bad, cache)?;
    let dir = cache.join("reverts");
    let patch = dir.join(format!("{}-{}.patch", &bad[..12], &culprit[..12]));
    if patch.exists() {
        return Ok(patch);
    }
    std::fs::create_dir_all(&dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
    let scratch = dir.join(format!(
        ".work-{}",
        &sha256_hex(patch.to_string_lossy().as_bytes())[..12]
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    run(
        Command::new("git")
            .args(["clone", "--quiet", "--shared", "--no-checkout", "--"])
            .arg(&mirror)
            .arg(&scratch),
        "git clone --shared",
    )?;
    let git = |args: &[&str], what: &str| {
        run(
            Command::new("git")
                .arg("-C")
                .arg(&scratch)
                .args(["-c", "user.name=kreg", "-c", "user.email=kreg@localhost"])
                .args(args),
            what,
        )
    };
    let result = git(&["checkout", "--quiet", "--detach", bad], "git checkout")
        .and_then(|_| {
            git(&["revert", "--no-commit", culprit], "git revert").map_err(|e| {
                msg(format!(
                    "git revert {} on top of {} does not apply cleanly (a conflict): {e}",
                    &culprit[..12],
                    &bad[..12]
                ))
            })
        })
        .and_then(|_| git(&["diff", "--cached"], "git diff"));
    let _ = std::fs::remove_dir_all(&scratch);
    let diff = result?;
    if diff.trim().is_empty() {
        return Err(msg(format!(
            "reverting {} on top of {} changes nothing",
            &culprit[..12],
            &bad[..12]
        )));
    }
    let tmp = patch.with_extension("tmp");
    std::fs::write(&tmp, format!("{diff}\n")).map_err(|e| msg(e.to_string()))?;
    std::fs::rename(&tmp, &patch).map_err(|e| msg(e.to_string()))?;
    Ok(patch)
}
