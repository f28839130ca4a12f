//! Scenario loading, continued: the files a scenario names, carried by its runs or read
//! where they are driven (secrets), and git sources written as paths.

use std::path::{Path, PathBuf};

use super::tests::load;
use super::*;

/// The files a run carries are its tools, kernel images, source tarballs, config files and
/// patches; tokens, passwords and ssh files are secrets, read where the run is driven. A
/// run's scenario relocated to where a host keeps the carried files names them there, and
/// its secrets where they were.
#[test]
fn carried_files_and_secrets() {
    let text = "name: x
hosts:
  sut: { role: sut, transport: { kind: http, url: \"http://192.0.2.1:7777\", token_file: tok, insecure: true } }
  ldg: { role: loadgen, transport: { kind: ssh, address: 192.0.2.2, identity: id_ed25519, token_file: tok2 } }
kernels:
  - { name: img, source: { path: bzImage } }
  - name: built
    source: { tarball: linux.tar.xz }
    config: { base: base.config }
    patches: [ a.patch, b.patch ]
baseline: img
tools:
  - { name: up, on: [ldg], from: { upload: bin/up } }
  - { name: hammerdbcli, on: [ldg], from: { tarball: HammerDB-4.12.tar.gz, binary: hammerdbcli } }
workloads:
  - { name: o, kind: sysbench, on: ldg, test: oltp_read_only, server: { on: sut, address: 192.0.2.1, datadir: /var/lib/db, password_file: pw } }
";
    let mut s = from_str(text, Path::new("/scn")).unwrap();
    let carried: Vec<(String, &str)> = s
        .carried()
        .map(|f| (f.path.display().to_string(), f.what.as_str()))
        .collect();
    let mut paths: Vec<&str> = carried.iter().map(|(p, _)| p.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/scn/HammerDB-4.12.tar.gz",
            "/scn/a.patch",
            "/scn/b.patch",
            "/scn/base.config",
            "/scn/bin/up",
            "/scn/bzImage",
            "/scn/linux.tar.xz"
        ],
        "{carried:?}"
    );
    let secrets: Vec<String> = s
        .files
        .iter()
        .filter(|f| f.kind == FileKind::Secret)
        .map(|f| f.path.display().to_string())
        .collect();
    for secret in ["/scn/tok", "/scn/tok2", "/scn/pw", "/scn/id_ed25519"] {
        assert!(secrets.iter().any(|p| p == secret), "{secret} in {secrets:?}");
    }
    s.relocate(&|p| Some(Path::new("/cache").join(p.file_name().unwrap())));
    assert_eq!(
        s.tools[0].source,
        ToolSource::Upload {
            path: "/cache/up".into()
        }
    );
    assert!(
        matches!(&s.tools[1].source, ToolSource::Tarball { path, .. } if path == Path::new("/cache/HammerDB-4.12.tar.gz"))
    );
    assert!(matches!(&s.kernels[0].source, KernelSource::Path { vmlinuz } if vmlinuz == Path::new("/cache/bzImage")));
    let KernelSource::Build(b) = &s.kernels[1].source else {
        panic!("{:?}", s.kernels[1].source)
    };
    assert_eq!(
        b.patches,
        [PathBuf::from("/cache/a.patch"), PathBuf::from("/cache/b.patch")]
    );
    assert_eq!(b.config.base, ConfigBase::File("/cache/base.config".into()));
    assert!(matches!(&b.tree, TreeSource::Tarball { path } if path == Path::new("/cache/linux.tar.xz")));
    // Secrets stay where they were.
    assert!(s
        .files
        .iter()
        .any(|f| f.kind == FileKind::Secret && f.path == Path::new("/scn/pw")));
}

/// On a fleet worker a database's password file is the operator's: mapped by the name the
/// scenario wrote, never the submitter's path; a name the worker lacks is said.
#[test]
fn secrets_are_mapped_by_the_name_written() {
    let text = "workloads:\n  - { name: o, kind: sysbench, on: ldg, test: oltp_read_only, server: { on: sut, address: 192.0.2.1, datadir: /var/lib/db, password_file: secrets/db.pw } }\n";
    let mut s = load(text).unwrap();
    let mut map = std::collections::BTreeMap::new();
    let e = s.clone().map_secrets(&map).unwrap_err();
    assert_eq!(e, ["`secrets/db.pw` (password_file of workload o)"]);
    map.insert("secrets/db.pw".to_string(), PathBuf::from("/etc/kreg/db.pw"));
    s.map_secrets(&map).unwrap();
    let WorkloadKind::Sysbench(sb) = &s.workloads[0].kind else {
        panic!("{:?}", s.workloads[0].kind)
    };
    assert_eq!(sb.server.password_file, Path::new("/etc/kreg/db.pw"));
}

/// A git source written as a path (not a URL) is what a fleet worker would read on its own
/// host: said, so that a submission can be refused.
#[test]
fn git_sources_given_as_paths_are_told_from_urls() {
    let tools = |url: &str| {
        load(&format!(
            "tools:\n  - {{ name: t, on: [sut], from: {{ git: \"{url}\", ref: v1, build: [make], binary: t }} }}\nworkloads: [ {{ name: h, kind: hackbench }} ]\n"
        ))
        .unwrap()
    };
    for local in ["/src/t", "file:///src/t", "src/t", "c:/t"] {
        assert_eq!(tools(local).local_git_sources(), [local], "{local}");
    }
    for url in [
        "https://git.kernel.org/t.git",
        "ssh://h/t",
        "git://h/t",
        "git@github.com:o/t.git",
    ] {
        assert!(tools(url).local_git_sources().is_empty(), "{url}");
    }
}
