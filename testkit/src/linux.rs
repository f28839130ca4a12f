//! Debian's linux-source-6.1 as the real-kernel tests use it: the config fragment that a
//! tinyconfig kernel needs to boot kreg's lab initramfs, and a git repository made from the
//! tarball with a range of commits to bisect (made once per cache, with fixed dates so
//! that its hashes, and so the build cache's keys, are the same every time).

use std::path::{Path, PathBuf};
use std::process::Command;

pub const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// What a tinyconfig kernel needs to boot kreg's lab initramfs and run its agent.
pub const FRAGMENT: &[&str] = &[
    "CONFIG_64BIT=y",
    "CONFIG_SMP=y",
    "CONFIG_NR_CPUS=8",
    "CONFIG_ACPI=y",
    "CONFIG_X86_MPPARSE=y",
    "CONFIG_RELOCATABLE=y",
    "CONFIG_PRINTK=y",
    "CONFIG_TTY=y",
    "CONFIG_SERIAL_8250=y",
    "CONFIG_SERIAL_8250_CONSOLE=y",
    "CONFIG_BLK_DEV_INITRD=y",
    "CONFIG_PROC_FS=y",
    "CONFIG_PROC_SYSCTL=y",
    "CONFIG_SYSFS=y",
    "CONFIG_DEVTMPFS=y",
    "CONFIG_TMPFS=y",
    "CONFIG_SHMEM=y",
    "CONFIG_BINFMT_ELF=y",
    "CONFIG_BINFMT_SCRIPT=y",
    "CONFIG_FUTEX=y",
    "CONFIG_EPOLL=y",
    "CONFIG_EVENTFD=y",
    "CONFIG_SIGNALFD=y",
    "CONFIG_TIMERFD=y",
    "CONFIG_UNIX=y",
    "CONFIG_NET=y",
    "CONFIG_INET=y",
    "CONFIG_PCI=y",
    "CONFIG_NETDEVICES=y",
    "CONFIG_NET_CORE=y",
    "CONFIG_VIRTIO_MENU=y",
    "CONFIG_VIRTIO=y",
    "CONFIG_VIRTIO_PCI=y",
    "CONFIG_VIRTIO_NET=y",
    "CONFIG_DEBUG_FS=y",
    "CONFIG_SCHED_DEBUG=y",
    "CONFIG_SCHEDSTATS=y",
    "CONFIG_KEXEC=y",
    "CONFIG_CRYPTO=y",
    "CONFIG_CRYPTO_SHA256=y",
    "CONFIG_KEXEC_FILE=y",
    "CONFIG_HZ_250=y",
    "CONFIG_PERF_EVENTS=y",
];

/// The fragment as the lines of a scenario's `set:` list, indented for `config:`.
pub fn fragment_yaml() -> String {
    FRAGMENT.iter().map(|s| format!("      - {s}\n")).collect()
}

fn git(repo: &Path, args: &[&str]) -> String {
    let date = "2026-01-01T00:00:00Z";
    crate::git_env(
        repo,
        args,
        &[
            ("GIT_AUTHOR_NAME", "Kreg Test"),
            ("GIT_AUTHOR_EMAIL", "test@kreg.invalid"),
            ("GIT_COMMITTER_NAME", "Kreg Test"),
            ("GIT_COMMITTER_EMAIL", "test@kreg.invalid"),
            ("GIT_AUTHOR_DATE", date),
            ("GIT_COMMITTER_DATE", date),
        ],
    )
}

/// Replaces the first `from` after `after` in `file` by `to`.
fn edit(repo: &Path, file: &str, after: &str, from: &str, to: &str) {
    let path = repo.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find(after).unwrap_or_else(|| panic!("{file}: no {after:?}"));
    let at = start
        + text[start..]
            .find(from)
            .unwrap_or_else(|| panic!("{file}: no {from:?}"));
    let new = format!("{}{to}{}", &text[..at], &text[at + from.len()..]);
    std::fs::write(&path, new).unwrap();
}

fn append(repo: &Path, file: &str, line: &str) {
    let path = repo.join(file);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(line);
    std::fs::write(&path, text).unwrap();
}

fn commit(repo: &Path, subject: &str) -> String {
    git(repo, &["commit", "-q", "-a", "-m", subject]);
    git(repo, &["rev-parse", "HEAD"])
}

/// The range's commits and its tags: `good` (the tarball), `bad` (8 commits on), and
/// `bad-null` (the same range without the regressing commit).
pub struct BisectRepo {
    pub path: PathBuf,
    /// The commits from good to bad, good first.
    pub commits: Vec<String>,
    /// The index of the commit that makes pipe writes slower, and of the one that does not build.
    pub culprit: usize,
    pub broken: usize,
}

/// The commits after good, in order: (subject, what it does); `None` for the one that
/// makes the kernel slower, which [`bisect_repo`] leaves out of the null branch.
fn harmless(repo: &Path, i: usize) {
    match i {
        1 => append(
            repo,
            "Documentation/scheduler/sched-design-CFS.rst",
            "\n.. A note of the bisection test.\n",
        ),
        2 => edit(
            repo,
            "kernel/sched/core.c",
            "// SPDX",
            "\n",
            "\n/* Bisection test: a comment in the scheduler's core. */\n",
        ),
        3 => append(repo, "init/main.c", FLAKY),
        5 => edit(
            repo,
            "fs/pipe.c",
            "#include \"internal.h\"",
            "\n",
            "\n/* Bisection test: fixed. */\n",
        ),
        7 => {
            boot_every_time(repo);
            append(
                repo,
                "Documentation/scheduler/sched-design-CFS.rst",
                "\n.. Another note.\n",
            )
        }
        8 => edit(
            repo,
            "kernel/sched/fair.c",
            "// SPDX",
            "\n",
            "\n/* Bisection test: a comment in CFS. */\n",
        ),
        _ => unreachable!(),
    }
}

const SUBJECTS: [&str; 9] = [
    "linux-source-6.1 as Debian ships it",
    "Documentation: a note",
    "sched/core: a comment",
    "init: panic on one boot in three",
    "pipe: a change that does not build",
    "pipe: build again",
    "pipe: wait 100 us in every pipe_write()",
    "init: boot every time; Documentation: another note",
    "sched/fair: a comment",
];

/// What commit 3 adds to init/main.c and commit 7 takes out: an initcall that panics on
/// one boot in three, by the kernel's own random numbers.
const FLAKY: &str = "
/* Bisection test: a kernel that panics on one boot in three. */
static int __init bisection_test_flaky(void)
{
\tif (get_random_u32() % 3 == 0)
\t\tpanic(\"bisection test: this boot panics (one in three)\");
\treturn 0;
}
late_initcall(bisection_test_flaky);
";

/// Commit 7's fix: the flaky initcall taken out (on the null branch too).
fn boot_every_time(repo: &Path) {
    edit(
        repo,
        "init/main.c",
        "/* Bisection test: a kernel",
        FLAKY.trim_start_matches('\n'),
        "",
    );
}

/// The repository (made once under the cache, `KREG_CACHE_DIR` or ~/.cache/kreg): the
/// tarball as commit 0 (tag `good`), then eight commits; commit 3 makes the kernel panic
/// on one boot in three and commit 7 takes that out again (commits 3, 5 and 6 boot two
/// times in three), commit 4 does not compile, commit 5 fixes it, commit 6 adds a 100 µs
/// wait to every pipe write (hackbench over pipes gets slower), the others change comments
/// and documentation. Tag `bad` is commit 8; tag
/// `bad-null` ends the same range without commit 6.
pub fn bisect_repo() -> BisectRepo {
    let cache = std::env::var("KREG_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap_or("/root".into())).join(".cache/kreg"));
    let path = cache.join("test-trees/linux-6.1-bisect-v2");
    let done = path.join(".git/kreg-test-made");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        let st = Command::new("tar")
            .args(["-xJf", TARBALL, "--strip-components=1", "-C"])
            .arg(&path)
            .status()
            .unwrap();
        assert!(st.success(), "tar {TARBALL}");
        git(&path, &["init", "-q"]);
        git(&path, &["add", "-A", "-f", "."]);
        git(&path, &["commit", "-q", "-m", SUBJECTS[0]]);
        git(&path, &["tag", "good"]);
        for (i, subject) in SUBJECTS.iter().enumerate().skip(1) {
            match i {
                4 => append(&path, "fs/pipe.c", "\nthis line is not C;\n"),
                5 => {
                    edit(
                        &path,
                        "fs/pipe.c",
                        "\nthis line is not C;",
                        "\nthis line is not C;\n",
                        "",
                    );
                    harmless(&path, 5);
                }
                6 => {
                    edit(
                        &path,
                        "fs/pipe.c",
                        "#include <linux/uaccess.h>",
                        "\n",
                        "\n#include <linux/delay.h>\n",
                    );
                    edit(
                        &path,
                        "fs/pipe.c",
                        "pipe_write(struct kiocb",
                        "\t__pipe_lock(pipe);",
                        "\tudelay(100);\n\t__pipe_lock(pipe);",
                    );
                }
                i => harmless(&path, i),
            }
            commit(&path, subject);
            if i == 5 {
                git(&path, &["branch", "null"]);
            }
        }
        git(&path, &["tag", "bad"]);
        git(&path, &["checkout", "-q", "null"]);
        for i in [7, 8] {
            // Commit 7 takes the panic out here too: the null range's bad end boots.
            harmless(&path, i);
            commit(&path, SUBJECTS[i]);
        }
        git(&path, &["tag", "bad-null"]);
        git(&path, &["checkout", "-q", "bad"]);
        std::fs::write(&done, "").unwrap();
    }
    let list = git(&path, &["rev-list", "--reverse", "--first-parent", "bad"]);
    let commits: Vec<String> = list.lines().map(str::to_string).collect();
    assert_eq!(commits.len(), 9);
    BisectRepo {
        path,
        commits,
        culprit: 6,
        broken: 4,
    }
}
