//! The set-up scripts' package installs (scripts/deps.sh) never remove or downgrade an
//! installed package. Each test makes a Debian package root of its own (dpkg --root) and a
//! local repository with a release and its backports, holding packages made with dpkg-deb
//! that stand for qemu's (their names and versions; Debian's qemu-utils 10 from
//! bookworm-backports breaks its qemu-system-common 7.2), and runs the scripts' real
//! functions with real apt against them (APT_CONFIG), comparing dpkg's list of installed
//! packages before and after. Nothing on this machine's own package set is touched.

use common::Scratch;
use kreg_testkit as common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A package: name, version, Depends, Breaks.
type Pkg<'a> = (&'a str, &'a str, &'a str, &'a str);

/// The stable release: a "system" package that needs its "common" at the same version, and
/// the "utils" its common is built with.
const STABLE: &[Pkg] = &[
    (
        "qemu-system-x86",
        "1:7.2+dfsg-7",
        "qemu-system-common (= 1:7.2+dfsg-7)",
        "",
    ),
    ("qemu-system-common", "1:7.2+dfsg-7", "", ""),
    ("qemu-utils", "1:7.2+dfsg-7", "", ""),
];

/// Its backports: newer versions of all three; the newer utils break the older common (as
/// Debian's qemu-utils 10 from bookworm-backports breaks qemu-system-common 7.2).
const BACKPORTS: &[Pkg] = &[
    (
        "qemu-system-x86",
        "1:10.0.2+ds-2~bpo12+1",
        "qemu-system-common (= 1:10.0.2+ds-2~bpo12+1)",
        "",
    ),
    ("qemu-system-common", "1:10.0.2+ds-2~bpo12+1", "", ""),
    (
        "qemu-utils",
        "1:10.0.2+ds-2~bpo12+1",
        "",
        "qemu-system-common (<< 1:8.0~)",
    ),
];

struct Apt {
    dir: Scratch,
}

impl Apt {
    /// A package root with nothing installed, a repository holding `testrel` and
    /// `testrel-backports` (NotAutomatic, as Debian's), and sources naming `suites`.
    fn new(name: &str, suites: &[&str]) -> Apt {
        let dir = Scratch::new(name);
        let d = &dir.0.clone();
        for sub in [
            "root/var/lib/dpkg/info",
            "root/var/lib/dpkg/updates",
            "lists/partial",
            "cache/archives/partial",
            "parts",
            "prefs",
            "log",
            "kreg-cache",
        ] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("root/var/lib/dpkg/status"), "").unwrap();
        let apt = Apt { dir };
        apt.suite("testrel", STABLE, false);
        apt.suite("testrel-backports", BACKPORTS, true);
        let sources: String = suites
            .iter()
            .map(|s| format!("deb [trusted=yes] file:{} {s} main\n", d.join("repo").display()))
            .collect();
        std::fs::write(d.join("sources.list"), sources).unwrap();
        let p = |s: &str| d.join(s).display().to_string();
        let conf = format!(
            r#"Dir::State::status "{status}";
Dir::Etc::SourceList "{sources}";
Dir::Etc::SourceParts "{parts}";
Dir::Etc::Preferences "{prefs}/none";
Dir::Etc::PreferencesParts "{prefs}";
Dir::State::Lists "{lists}";
Dir::Cache "{cache}";
Dir::Log "{log}";
APT::Architecture "amd64";
#clear DPkg::Post-Invoke;
#clear DPkg::Pre-Invoke;
#clear DPkg::Pre-Install-Pkgs;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
DPkg::Options {{ "--root={root}"; "--force-script-chrootless"; }};
"#,
            status = p("root/var/lib/dpkg/status"),
            sources = p("sources.list"),
            parts = p("parts"),
            prefs = p("prefs"),
            lists = p("lists"),
            cache = p("cache"),
            log = p("log"),
            root = p("root"),
        );
        std::fs::write(d.join("apt.conf"), conf).unwrap();
        apt
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.0.join(rel)
    }

    /// One suite of the repository with its main component: its packages built, indexed
    /// and released.
    fn suite(&self, suite: &str, pkgs: &[Pkg], not_automatic: bool) {
        self.suite_of(suite, &[("main", pkgs)], not_automatic)
    }

    /// One suite of the repository with these components.
    fn suite_of(&self, suite: &str, components: &[(&str, &[Pkg])], not_automatic: bool) {
        let pool = self.path(&format!("repo/pool/{suite}"));
        std::fs::create_dir_all(&pool).unwrap();
        let mut sums = String::new();
        for (component, pkgs) in components {
            let index_dir = self.path(&format!("repo/dists/{suite}/{component}/binary-amd64"));
            std::fs::create_dir_all(&index_dir).unwrap();
            let mut index = String::new();
            for pkg in pkgs.iter() {
                let deb = self.deb(pkg, &pool);
                let bytes = std::fs::read(&deb).unwrap();
                let rel = deb.strip_prefix(self.path("repo")).unwrap().display().to_string();
                index.push_str(&control(pkg));
                index.push_str(&format!(
                    "Filename: {rel}\nSize: {}\nSHA256: {}\n\n",
                    bytes.len(),
                    sha256(&bytes)
                ));
            }
            std::fs::write(index_dir.join("Packages"), &index).unwrap();
            sums.push_str(&format!(
                " {} {} {component}/binary-amd64/Packages\n",
                sha256(index.as_bytes()),
                index.len()
            ));
        }
        let names: Vec<&str> = components.iter().map(|(c, _)| *c).collect();
        let mut release = format!(
            "Origin: kregtest\nLabel: kregtest\nSuite: {suite}\nCodename: {suite}\nDate: Thu, 03 Dec 2026 00:00:00 UTC\nArchitectures: amd64\nComponents: {}\n",
            names.join(" ")
        );
        if not_automatic {
            release.push_str("NotAutomatic: yes\nButAutomaticUpgrades: yes\n");
        }
        release.push_str(&format!("SHA256:\n{sums}"));
        std::fs::write(self.path(&format!("repo/dists/{suite}/Release")), release).unwrap();
    }

    /// A package file made with dpkg-deb in `dir`.
    fn deb(&self, pkg: &Pkg, dir: &Path) -> PathBuf {
        let (name, version, _, _) = *pkg;
        let tree = self.path(&format!("build/{name}_{version}"));
        std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
        std::fs::create_dir_all(tree.join("usr/share/kregt")).unwrap();
        std::fs::write(tree.join("usr/share/kregt").join(name), format!("{name} {version}\n")).unwrap();
        std::fs::write(tree.join("DEBIAN/control"), control(pkg)).unwrap();
        // Pool file names carry no epoch, as Debian's.
        let bare = version.split_once(':').map_or(version, |(_, v)| v);
        let deb = dir.join(format!("{name}_{bare}_all.deb"));
        let out = Command::new("dpkg-deb")
            .args(["-b", "-Zgzip"])
            .arg(&tree)
            .arg(&deb)
            .output()
            .expect("dpkg-deb runs");
        assert!(
            out.status.success(),
            "dpkg-deb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        deb
    }

    /// What the user installed before kreg: a package put in the root by dpkg.
    fn installed(&self, pkg: Pkg) {
        let deb = self.deb(&pkg, &self.path("build"));
        let out = Command::new("dpkg")
            .arg(format!("--root={}", self.path("root").display()))
            .args(["--force-script-chrootless", "-i"])
            .arg(&deb)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "dpkg -i: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Installed packages and versions (dpkg -l of the root), sorted.
    fn dpkg_l(&self) -> Vec<String> {
        let out = Command::new("dpkg-query")
            .arg(format!("--admindir={}", self.path("root/var/lib/dpkg").display()))
            .args(["-W", "-f", "${db:Status-Abbrev} ${Package} ${Version}\n"])
            .output()
            .unwrap();
        let mut rows: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("ii"))
            .map(|l| l[2..].trim().to_string())
            .collect();
        rows.sort();
        rows
    }

    /// The set-up scripts' functions in bash with this root as apt's world: `body` after
    /// `. scripts/deps.sh`; exit status, stdout and stderr.
    fn setup(&self, body: &str) -> (bool, String, String) {
        let deps = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/deps.sh");
        let script = format!("set -euo pipefail\n. '{}'\n{body}\n", deps.display());
        let out = Command::new("bash")
            .arg("-c")
            .arg(script)
            .env("APT_CONFIG", self.path("apt.conf"))
            .env("KREG_CACHE_DIR", self.path("kreg-cache"))
            .env_remove("KREG_APT_UPDATED")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A group as the demo's are installed: a probe that fails (the command is not on this
    /// machine), so the package is wanted; the scripts' own before/after check around it.
    fn install_group(&self, pkg: &str) -> (bool, String, String) {
        self.setup(&format!(
            "before=$(kreg_dpkg_snapshot)\nkreg_group 'the test group' kregt-no-such-command:{pkg}\nkreg_check_nothing_lost \"$before\""
        ))
    }
}

fn control((name, version, depends, breaks): &Pkg) -> String {
    let mut c =
        format!("Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: kreg tests <kreg@localhost>\n");
    if !depends.is_empty() {
        c.push_str(&format!("Depends: {depends}\n"));
    }
    if !breaks.is_empty() {
        c.push_str(&format!("Breaks: {breaks}\n"));
    }
    c.push_str("Description: a package of kreg's set-up test\n");
    c
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn has(rows: &[String], row: &str) -> bool {
    rows.iter().any(|r| r == row)
}

#[test]
fn a_newer_backport_whose_release_is_not_in_the_sources_is_kept() {
    // The issue's machine: qemu-utils from bookworm-backports, no backports in the sources.
    let apt = Apt::new("setup-bpo", &["testrel"]);
    apt.installed(BACKPORTS[2]);
    let sources_before = std::fs::read_to_string(apt.path("sources.list")).unwrap();
    // Plain apt would remove the user's utils to install the stable system package.
    let (_, plain, _) =
        apt.setup("apt-get update -q >/dev/null 2>&1\napt-get install -s --no-install-recommends qemu-system-x86");
    assert!(plain.contains("Remv qemu-utils [1:10.0.2+ds-2~bpo12+1]"), "{plain}");

    let before = apt.dpkg_l();
    assert_eq!(before, ["qemu-utils 1:10.0.2+ds-2~bpo12+1"]);
    let (ok, out, err) = apt.install_group("qemu-system-x86");
    assert!(ok, "{out}\n{err}");
    let after = apt.dpkg_l();
    assert!(
        has(&after, "qemu-utils 1:10.0.2+ds-2~bpo12+1"),
        "{after:?}\n{out}\n{err}"
    );
    assert!(has(&after, "qemu-system-x86 1:10.0.2+ds-2~bpo12+1"), "{after:?}");
    assert!(has(&after, "qemu-system-common 1:10.0.2+ds-2~bpo12+1"), "{after:?}");
    assert!(
        out.contains("kreg: the test group: installing qemu-system-x86"),
        "{out}"
    );
    assert!(
        out.contains("from testrel-backports, the release of the installed qemu-utils 1:10.0.2+ds-2~bpo12+1"),
        "{out}"
    );
    assert!(out.contains("kreg's own apt sources"), "{out}");
    // The user's sources are as they were; kreg's own hold the backports suite.
    assert_eq!(
        std::fs::read_to_string(apt.path("sources.list")).unwrap(),
        sources_before
    );
    assert_eq!(std::fs::read_dir(apt.path("parts")).unwrap().count(), 0);
    let own = std::fs::read_to_string(apt.path("kreg-cache/apt/sources.list.d/kreg-testrel-backports.list")).unwrap();
    assert!(
        own.starts_with("deb [trusted=yes] file:") && own.contains(" testrel-backports main"),
        "{own}"
    );
}

#[test]
fn a_backport_release_in_the_sources_is_taken() {
    let apt = Apt::new("setup-bpo-src", &["testrel", "testrel-backports"]);
    apt.installed(BACKPORTS[2]);
    let (ok, out, err) = apt.install_group("qemu-system-x86");
    assert!(ok, "{out}\n{err}");
    let after = apt.dpkg_l();
    assert_eq!(
        after,
        [
            "qemu-system-common 1:10.0.2+ds-2~bpo12+1",
            "qemu-system-x86 1:10.0.2+ds-2~bpo12+1",
            "qemu-utils 1:10.0.2+ds-2~bpo12+1"
        ],
        "{out}\n{err}"
    );
    assert!(out.contains("from testrel-backports"), "{out}");
    assert!(!out.contains("kreg's own apt sources"), "{out}");
}

#[test]
fn nothing_to_fit_stops_with_the_conflict_and_installs_nothing() {
    // A qemu-utils built locally: no release offers its version.
    let apt = Apt::new("setup-stop", &["testrel", "testrel-backports"]);
    apt.installed(("qemu-utils", "1:11.0-local1", "", "qemu-system-common (<< 1:11~)"));
    let before = apt.dpkg_l();
    let (ok, out, err) = apt.install_group("qemu-system-x86");
    assert!(!ok, "{out}\n{err}");
    assert_eq!(apt.dpkg_l(), before);
    assert!(
        err.contains("STOPPED: installing qemu-system-x86 would change packages you installed"),
        "{err}"
    );
    assert!(err.contains("qemu-utils 1:11.0-local1 would be removed"), "{err}");
    assert!(err.contains("apt-get install -t RELEASE qemu-system-x86"), "{err}");
    assert!(err.contains("nothing was installed"), "{err}");
}

#[test]
fn a_package_that_would_have_to_go_back_stops_the_setup() {
    // A newer common installed by hand: the stable system package needs the older one (apt
    // finds no plan; with a version forced it would downgrade).
    let apt = Apt::new("setup-down", &["testrel"]);
    apt.installed(("qemu-system-common", "1:11.0-local1", "", ""));
    let before = apt.dpkg_l();
    let (ok, out, err) = apt.install_group("qemu-system-x86");
    assert!(!ok, "{out}\n{err}");
    assert_eq!(apt.dpkg_l(), before);
    assert!(
        err.contains("qemu-system-common 1:11.0-local1 stands in the way"),
        "{err}"
    );
    assert!(err.contains("nothing was installed"), "{err}");
}

#[test]
fn a_downgrade_in_apts_plan_is_seen() {
    // The plan as apt prints it when a version is forced: the install of an older version
    // over a newer one is a downgrade, a newer one is not, a new package neither.
    let apt = Apt::new("setup-plan", &["testrel"]);
    let plan = "Inst qemu-system-common [1:11.0-local1] (1:7.2+dfsg-7 testrel [all])\nInst qemu-utils [1:6.0] (1:7.2+dfsg-7 testrel [all])\nInst qemu-system-x86 (1:7.2+dfsg-7 testrel [all])\nRemv kregt-old [2:1.5-1]\nConf qemu-system-x86 (1:7.2+dfsg-7 testrel [all])";
    let (ok, out, err) = apt.setup(&format!("kreg_harm <<'PLAN'\n{plan}\nPLAN"));
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "qemu-system-common 1:11.0-local1 downgraded-to:1:7.2+dfsg-7\nkregt-old 2:1.5-1 removed\n"
    );
}

#[test]
fn a_plain_install_and_an_installed_group() {
    let apt = Apt::new("setup-plain", &["testrel", "testrel-backports"]);
    let (ok, out, err) = apt.install_group("qemu-system-x86");
    assert!(ok, "{out}\n{err}");
    assert_eq!(
        apt.dpkg_l(),
        ["qemu-system-common 1:7.2+dfsg-7", "qemu-system-x86 1:7.2+dfsg-7"]
    );
    assert!(!out.contains(" from testrel"), "{out}");
    // A group whose probe holds installs nothing and says so.
    let (ok, out, err) = apt.setup("kreg_group 'a present group' bash:qemu-utils");
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "kreg: a present group: installed");
    assert_eq!(
        apt.dpkg_l(),
        ["qemu-system-common 1:7.2+dfsg-7", "qemu-system-x86 1:7.2+dfsg-7"]
    );
}

#[test]
fn the_check_after_the_setup_sees_a_removal() {
    let apt = Apt::new("setup-check", &["testrel"]);
    apt.installed(STABLE[2]);
    let root = apt.path("root");
    let (ok, _, err) = apt.setup(&format!(
        "before=$(kreg_dpkg_snapshot)\ndpkg --root='{}' --force-script-chrootless -P qemu-utils >/dev/null\nkreg_check_nothing_lost \"$before\"",
        root.display()
    ));
    assert!(!ok);
    assert!(err.contains("qemu-utils:all 1:7.2+dfsg-7 was removed"), "{err}");
}

#[test]
fn a_package_of_the_non_free_component_comes_through_kregs_own_sources() {
    // Debian's netperf is in non-free, which the system's sources (main only) lack.
    let apt = Apt::new("setup-nonfree", &["testrel"]);
    let netperf: Pkg = ("netperf", "2.7.0-0.1", "", "");
    apt.suite_of("testrel", &[("main", STABLE), ("non-free", &[netperf])], false);
    let sources_before = std::fs::read_to_string(apt.path("sources.list")).unwrap();
    let (ok, out, err) = apt.setup(
        "before=$(kreg_dpkg_snapshot)\nKREG_COMPONENT=non-free kreg_group 'netperf' kregt-no-such-command:netperf\nkreg_check_nothing_lost \"$before\"",
    );
    assert!(ok, "{out}\n{err}");
    assert_eq!(apt.dpkg_l(), ["netperf 2.7.0-0.1"], "{out}\n{err}");
    assert!(out.contains("kreg: netperf: from testrel non-free (file:"), "{out}");
    assert_eq!(
        std::fs::read_to_string(apt.path("sources.list")).unwrap(),
        sources_before
    );
    assert_eq!(std::fs::read_dir(apt.path("parts")).unwrap().count(), 0);
    let own = std::fs::read_to_string(apt.path("kreg-cache/apt/sources.list.d/kreg-testrel-non-free.list")).unwrap();
    assert!(
        own.starts_with("deb [trusted=yes] file:") && own.trim_end().ends_with(" testrel non-free"),
        "{own}"
    );
    // A main package in the same group takes the plain way; without the component the
    // non-free one is not found, and apt's error says so.
    let apt = Apt::new("setup-nonfree-off", &["testrel"]);
    apt.suite_of("testrel", &[("main", STABLE), ("non-free", &[netperf])], false);
    let (ok, out, err) = apt.install_group("netperf");
    assert!(!ok, "{out}\n{err}");
    assert!(err.contains("nothing was installed"), "{err}");
    assert_eq!(apt.dpkg_l(), Vec::<String>::new());
}
