use std::path::Path;

use super::*;
use crate::workload::{Count, DbKind, SingleHost};

pub(super) const GOOD: &str = r#"
name: lab-smoke
hosts:
  sut: { role: sut, transport: { kind: lab, cpus: 2 } }
kernels:
  - { name: deb61, source: { deb: linux-image-amd64 } }
  - { name: deb612, source: { deb: linux-image-6.12-amd64 } }
baseline: deb61
boot: { timeout: 3m }
variants:
  - { name: default }
  - { name: batch, policy: batch, features: [NO_PLACE_LAG] }
workloads:
  - { name: hb, kind: hackbench, groups: 1, loops: 50, pipe: true }
  - name: echo
    kind: command
    argv: [sh, -c, "echo Time: 1.5"]
    metrics:
      time: { regex: "Time: ([0-9.]+)", unit: s, higher_is_better: false }
iterations: 3
"#;

/// Loads `text` and renders its diagnostics (or "ok") one per line, as `kreg validate` does.
pub(super) fn check(text: &str, expected: &str) {
    let got = match from_str(text, Path::new("/scn")) {
        Ok(_) => "ok".to_string(),
        Err(diags) => diags.iter().map(|d| d.render("f.yaml")).collect::<Vec<_>>().join("\n"),
    };
    assert_eq!(got.trim(), expected.trim(), "\n--- got ---\n{got}\n");
}

#[test]
fn good_scenario_loads() {
    let s = from_str(GOOD, Path::new("/scn")).unwrap();
    assert_eq!(s.kernels.len(), 2);
    assert_eq!(s.baseline, "deb61");
    assert_eq!(s.boot.timeout_secs, 180);
    assert_eq!(s.variants[1].policy, Policy::Batch);
    assert_eq!(s.variants[1].features, vec!["NO_PLACE_LAG"]);
    assert_eq!(s.workloads[0].on, "sut");
    let WorkloadKind::Hackbench(h) = &s.workloads[0].kind else {
        panic!()
    };
    assert_eq!(h.argv(), ["hackbench", "-p", "-g", "1", "-l", "50"]);
    assert_eq!(s.iterations, 3);
}

#[test]
fn unknown_key_wrong_type_and_missing_field_are_all_reported() {
    check(
        r#"
name: x
hosts:
  sut: { role: sut, transport: { kind: lab } }
kernels:
  - { name: k1, source: running, colour: blue }
workloads:
  - { name: hb, kind: hackbench, loops: many }
  - { kind: hackbench }
"#,
        "
f.yaml:6:34: unknown field `colour` in a kernel; expected one of: name, source, config, patches, cmdline, build_on, perf
f.yaml:8:41: loops (-l): expected a whole number from 1 to 100000000, found a string
f.yaml:9:5: missing field `name` in a workload
",
    );
}

#[test]
fn cross_references_are_checked() {
    check(
        r#"
name: x
hosts:
  a: { role: loadgen, transport: { kind: http, url: "http://127.0.0.1:1", token_file: t } }
kernels: [ { name: k1, source: running } ]
baseline: k9
workloads:
  - { name: hb, kind: hackbench, on: nowhere }
"#,
        "
f.yaml:4:3: hosts: exactly one host must have role `sut`, found 0
f.yaml:6:11: baseline `k9` is not one of the kernels (k1); did you mean `k1`?
f.yaml:8:5: workload `hb` runs on `nowhere`, which is not a host
",
    );
}

#[test]
fn duplicates_ranges_and_syntax() {
    check(
        "name: x\nhosts: { s: { role: sut, transport: { kind: lab, cpus: 99 } } }\nkernels: [ {name: a, source: running}, {name: a, source: running} ]\nworkloads: [ {name: w, kind: hackbench} ]\niterations: 0\n",
        "
f.yaml:2:56: cpus: 99 is out of range (1 to 8)
f.yaml:3:40: kernel `a` is declared twice
f.yaml:5:13: iterations: 0 is out of range (1 to 1000)
",
    );
    check(
        "name: [unclosed\n",
        "f.yaml:2:1: YAML syntax: while parsing a flow sequence, expected ',' or ']'",
    );
}

#[test]
fn command_metrics_need_a_capture_group() {
    check(
        r#"
name: x
hosts: { s: { role: sut, transport: { kind: lab } } }
kernels: [ { name: k, source: running } ]
workloads:
  - name: c
    kind: command
    argv: [true]
    metrics: { m: { regex: "no group", higher_is_better: maybe } }
"#,
        "
f.yaml:9:28: regex: needs one capture group around the number, e.g. `Time: ([0-9.]+)`
f.yaml:9:58: higher_is_better: expected true or false, found a string
",
    );
}

const HOSTS: &str = "name: x\nhosts:\n  sut: { role: sut, transport: { kind: lab } }\n  ldg: { role: loadgen, transport: { kind: lab } }\nkernels: [ { name: k, source: running } ]\n";

pub(super) fn load(workloads: &str) -> Result<Scenario, Vec<Diagnostic>> {
    from_str(&format!("{HOSTS}{workloads}"), Path::new("/scn"))
}

#[test]
fn tool_options_are_typed_with_their_ranges() {
    check(
        &format!(
            "{HOSTS}workloads:\n  - {{ name: s, kind: schbench, message_threads: 0, message_cpus: 0-x, threads: 4 }}\n"
        ),
        "
f.yaml:7:49: message_threads (-m): 0 is out of range (1 to 4096)
f.yaml:7:66: message_cpus (-M): \"0-x\" is not a CPU list like 0-3,8 or `auto`
",
    );
    check(
        &format!("{HOSTS}workloads:\n  - {{ name: p, kind: perf-bench, bench: pipe, groups: 2 }}\n"),
        "f.yaml:7:55: `groups` does not apply to perf bench sched pipe",
    );
    check(
        &format!("{HOSTS}workloads:\n  - {{ name: h, kind: hackbench, runtime: 3 }}\n"),
        "f.yaml:7:42: `runtime` does not apply to workload kind `hackbench`; it takes: groups, loops, pipe, threads, process, fds, datasize",
    );
    check(
        &format!("{HOSTS}workloads:\n  - {{ name: n, kind: netperf, test: UDP_STREAM, clients: lots, server: {{ on: db, address: 10.0.0.300 }} }}\n"),
        "
f.yaml:7:37: test: `UDP_STREAM` is not supported; expected one of UDP_RR, TCP_RR, TCP_STREAM, TCP_MAERTS
f.yaml:7:58: clients: expected a count (8) or a % of the SUT's CPUs (50%), found a string
f.yaml:7:91: address: \"10.0.0.300\" is not an IP address
",
    );
}

#[test]
fn two_host_workloads_and_their_servers() {
    let s = load(
        "workloads:\n  - { name: o, kind: sysbench, on: ldg, test: oltp_read_only, threads: 8, server: { on: sut, address: 192.0.2.1, datadir: /var/lib/db, password_file: pw } }\n  - { name: n, kind: netperf, on: ldg, test: TCP_RR, clients: 50%, server: { on: sut, address: 192.0.2.1 } }\n  - { name: t, kind: hammerdb, on: ldg, virtual_users: 2/cpu, server: { on: sut, kind: mysql, address: 192.0.2.1, datadir: /d, password_file: pw } }\n",
    )
    .unwrap();
    let WorkloadKind::Sysbench(sb) = &s.workloads[0].kind else {
        panic!()
    };
    assert_eq!(
        (sb.threads, sb.server.port, sb.server.database.as_str()),
        (8, 3306, "kreg")
    );
    assert_eq!(sb.server.password_file, Path::new("/scn/pw"));
    let WorkloadKind::Netperf(n) = &s.workloads[1].kind else {
        panic!()
    };
    assert_eq!(
        (n.clients.resolve(16), n.clients.resolve(1), n.server_port),
        (8, 1, 12865)
    );
    let WorkloadKind::Hammerdb(h) = &s.workloads[2].kind else {
        panic!()
    };
    assert_eq!(h.virtual_users, Count::PerCpu(2.0));
    assert_eq!(h.virtual_users.resolve(16), 32);
    assert_eq!(h.server.kind, DbKind::Mysql);

    check(
        &format!("{HOSTS}workloads:\n  - {{ name: o, kind: sysbench, test: tpcc, server: {{ on: db9, address: 192.0.2.1, datadir: rel, user: \"a b\", password_file: pw }} }}\n"),
        "
f.yaml:7:38: test: \"tpcc\" is not a sysbench OLTP test (oltp_read_write, oltp_read_only, oltp_point_select, …)
f.yaml:7:92: datadir: \"rel\" must be an absolute path without `..`
f.yaml:7:103: user: \"a b\" must be 1 to 32 letters, digits or '_'
",
    );
}

#[test]
fn tools_sections() {
    let s = load("tools:\n  - { name: sb, on: [sut], from: { git: /src/sb, ref: v1, build: [make, -j2], binary: sb } }\n  - { name: hb, on: [sut, ldg], from: { apt: rt-tests } }\n  - { name: up, on: [ldg], from: { upload: bin/up } }\n  - { name: hammerdbcli, on: [ldg], from: { tarball: HammerDB-4.12.tar.gz, binary: hammerdbcli } }\nworkloads: [ { name: h, kind: hackbench } ]\n").unwrap();
    assert_eq!(s.tools.len(), 4);
    assert_eq!(
        s.tools[3].source,
        ToolSource::Tarball {
            path: "/scn/HammerDB-4.12.tar.gz".into(),
            binary: "hammerdbcli".into()
        }
    );
    assert_eq!(
        s.tools[0].source,
        ToolSource::Git {
            url: "/src/sb".into(),
            git_ref: "v1".into(),
            build: vec!["make".into(), "-j2".into()],
            binary: "sb".into()
        }
    );
    assert_eq!(s.tools[1].on, ["sut", "ldg"]);
    assert_eq!(
        s.tools[2].source,
        ToolSource::Upload {
            path: "/scn/bin/up".into()
        }
    );
    assert_eq!(s.tools[2].install_dir, "/usr/local/bin");
    check(
        &format!("{HOSTS}tools:\n  - {{ name: a, on: [nowhere], from: {{ apt: x, upload: y }} }}\n  - {{ name: b, on: [sut], from: {{ git: u, ref: --exec=x, build: [make], binary: ../b }} }}\nworkloads: [ {{ name: h, kind: hackbench }} ]\n"),
        "
f.yaml:7:37: the source of tool `a`: give exactly one of `apt`, `git`, `upload` or `tarball` (found 2)
f.yaml:8:48: ref: \"--exec=x\" may not start with '-'
f.yaml:8:81: binary: \"../b\" must be a path inside the source tree
",
    );
}

#[test]
fn a_server_on_an_unknown_host_is_reported_where_it_is_named() {
    check(
        &format!("{HOSTS}workloads:\n  - {{ name: n, kind: netperf, on: ldg, test: TCP_RR, server: {{ on: db9, address: 192.0.2.1 }} }}\n"),
        "f.yaml:7:68: workload `n`: its server runs on `db9`, which is not a host",
    );
    check(
        &format!("{HOSTS}tools:\n  - {{ name: a, on: [nowhere], from: {{ apt: x }} }}\nworkloads: [ {{ name: h, kind: hackbench }} ]\n"),
        "f.yaml:7:5: tool `a` goes on `nowhere`, which is not a host",
    );
}

#[test]
fn boot_method_and_reset_of_http_hosts() {
    let ok = r#"
name: x
hosts:
  s:
    role: sut
    transport: { kind: http, url: "https://10.0.0.5:7878", tls_fingerprint: "sha256:8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4", token_file: t, boot: grub-reboot, reset: [ipmitool, -H, bmc5, chassis, power, reset] }
kernels: [ { name: k, source: running } ]
workloads: [ { name: w, kind: hackbench } ]
"#;
    let s = from_str(ok, Path::new("/etc/kreg")).unwrap();
    match &s.hosts[0].transport {
        Transport::Http(HttpTransport {
            machine: Machine { boot, reset, .. },
            token_file,
            ..
        }) => {
            assert_eq!(*boot, BootVia::GrubReboot);
            assert_eq!(reset.as_ref().unwrap()[0], "ipmitool");
            assert_eq!(token_file, Path::new("/etc/kreg/t"));
        }
        other => panic!("{other:?}"),
    }
    // kexec, no reset and three kernels kept by default.
    let plain = ok.replace(
        ", boot: grub-reboot, reset: [ipmitool, -H, bmc5, chassis, power, reset]",
        "",
    );
    match &from_str(&plain, Path::new(".")).unwrap().hosts[0].transport {
        Transport::Http(HttpTransport {
            machine:
                Machine {
                    boot,
                    reset,
                    keep_kernels,
                    ..
                },
            ..
        }) => assert_eq!((*boot, reset.is_none(), *keep_kernels), (BootVia::Kexec, true, 3)),
        other => panic!("{other:?}"),
    }
    let keep1 = ok.replace(
        "boot: grub-reboot,",
        "boot: grub-reboot, keep_kernels: 1, console: [tail, -n, 50, /var/log/consoles/s],",
    );
    match &from_str(&keep1, Path::new(".")).unwrap().hosts[0].transport {
        Transport::Http(HttpTransport {
            machine: Machine {
                keep_kernels, console, ..
            },
            ..
        }) => {
            assert_eq!(*keep_kernels, 1);
            assert_eq!(console.as_deref().unwrap(), ["tail", "-n", "50", "/var/log/consoles/s"]);
        }
        other => panic!("{other:?}"),
    }
    match &from_str(ok, Path::new(".")).unwrap().hosts[0].transport {
        Transport::Http(HttpTransport { machine, .. }) => assert!(machine.console.is_none()),
        other => panic!("{other:?}"),
    }
    check(
        r#"
name: x
hosts:
  s: { role: sut, transport: { kind: http, url: "http://h:1", insecure: true, token_file: t, boot: pxe, reset: "ipmitool reset", keep_kernels: 0 } }
  l: { role: loadgen, transport: { kind: lab, reset: [x], keep_kernels: 2, console: [x] } }
kernels: [ { name: k, source: running } ]
workloads: [ { name: w, kind: hackbench } ]
"#,
        "
f.yaml:4:100: boot: unknown method `pxe`; expected kexec or grub-reboot
f.yaml:4:112: reset: expected a list, found a string
f.yaml:4:144: keep_kernels: 0 is out of range (1 to 1000)
f.yaml:5:54: `reset` does not apply to transport kind `lab`
f.yaml:5:73: `keep_kernels` does not apply to transport kind `lab`
f.yaml:5:85: `console` does not apply to transport kind `lab`
",
    );
}

#[test]
fn the_scenario_boot_method_is_the_default_of_http_hosts() {
    let text = |boot: &str| {
        format!(
            r#"
name: x
hosts:
  a: {{ role: sut, transport: {{ kind: http, url: "http://a:1", insecure: true, token_file: t }} }}
  b: {{ role: loadgen, transport: {{ kind: http, url: "http://b:1", insecure: true, token_file: t, boot: kexec }} }}
kernels: [ {{ name: k, source: running }} ]
boot: {boot}
workloads: [ {{ name: w, kind: hackbench }} ]
"#
        )
    };
    let s = from_str(&text("{ method: grub-reboot, timeout: 10m }"), Path::new(".")).unwrap();
    let via: Vec<BootVia> = s
        .hosts
        .iter()
        .map(|h| match &h.transport {
            Transport::Http(HttpTransport { machine, .. }) => machine.boot,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(via, [BootVia::GrubReboot, BootVia::Kexec]);
    assert_eq!((s.boot.timeout_secs, s.boot.method), (600, BootVia::GrubReboot));
    let s = from_str(&text("{ timeout: 10m }"), Path::new(".")).unwrap();
    assert!(matches!(
        s.hosts[0].transport,
        Transport::Http(HttpTransport {
            machine: Machine {
                boot: BootVia::Kexec,
                ..
            },
            ..
        })
    ));
    check(
        &text("{ method: pxe, timeout: 0 }"),
        "
f.yaml:7:17: boot method: unknown method `pxe`; expected kexec or grub-reboot
f.yaml:7:31: boot timeout: `0` is out of range (more than 0, at most a week)
",
    );
    check(
        &text("{ timeout: 9000h }"),
        "f.yaml:7:18: boot timeout: `9000h` is out of range (more than 0, at most a week)",
    );
    check(
        &text("{ timeout: 2d }"),
        "f.yaml:7:18: boot timeout: expected a duration such as 90, 90s, 10m or 2h (at most a week), found a string",
    );
}

#[test]
fn build_on_names_a_machine() {
    let text = |on: &str| {
        format!(
            r#"
name: x
hosts:
  sut: {{ role: sut, transport: {{ kind: http, url: "http://h:1", insecure: true, token_file: t }} }}
  vm: {{ role: loadgen, transport: {{ kind: lab }} }}
kernels:
  - {{ name: k, source: {{ git: /src/linux, ref: v6.12 }}, config: {{ base: defconfig }}, build_on: {on} }}
  - {{ name: d, source: {{ deb: linux-image-amd64 }}, build_on: sut }}
workloads: [ {{ name: w, kind: hackbench }} ]
"#
        )
    };
    check(
        &text("nowhere"),
        "
f.yaml:7:5: kernel `k` builds on `nowhere`, which is neither `controller` nor a host
f.yaml:8:62: `build_on` applies only to kernels built from `git` or `tarball` sources
",
    );
    check(
        &text("vm"),
        "
f.yaml:7:5: kernel `k`: a lab host has no compiler; build on the controller or on a machine
f.yaml:8:62: `build_on` applies only to kernels built from `git` or `tarball` sources
",
    );
    let ok = text("sut").replace(
        "  - { name: d, source: { deb: linux-image-amd64 }, build_on: sut }\n",
        "",
    );
    let s = from_str(&ok, Path::new(".")).unwrap();
    match &s.kernels[0].source {
        KernelSource::Build(b) => assert_eq!(b.build_on.as_deref(), Some("sut")),
        other => panic!("{other:?}"),
    }
    let here = ok.replace("build_on: sut", "build_on: controller");
    match &from_str(&here, Path::new(".")).unwrap().kernels[0].source {
        KernelSource::Build(b) => assert_eq!((b.build_on.as_deref(), b.perf), (None, false)),
        other => panic!("{other:?}"),
    }
    // perf from the tree: built on the controller, for built kernels only, one value.
    let perf = here.replace("build_on: controller", "build_on: controller, perf: tree");
    match &from_str(&perf, Path::new(".")).unwrap().kernels[0].source {
        KernelSource::Build(b) => assert!(b.perf),
        other => panic!("{other:?}"),
    }
    check(
        &text("sut").replace("build_on: sut }", "build_on: sut, perf: tree }"),
        "
f.yaml:7:5: kernel `k`: `perf: tree` builds perf on the controller, with the kernel: build the kernel there too (no `build_on`)
f.yaml:8:62: `build_on` applies only to kernels built from `git` or `tarball` sources
f.yaml:8:73: `perf` applies only to kernels built from `git` or `tarball` sources
",
    );
    check(
        &here.replace("build_on: controller", "perf: debian"),
        "f.yaml:7:92: perf: `debian`: expected `tree` (perf built from this kernel's tools/perf), or a source of its own ({ debian: linux-source-X.Y }, { git: URL, ref: REF }, { tarball: FILE }); without it, the machine's own perf runs",
    );
}

/// A perf of its own source, for any kernel: the kernel's own, else the scenario's; `perf:
/// tree` keeps the tree's.
#[test]
fn a_perf_of_its_own_source_for_any_kernel() {
    let text = |top: &str, a: &str| {
        format!(
            r#"name: x
hosts:
  sut: {{ role: sut, transport: {{ kind: lab }} }}
kernels:
  - {{ name: a, source: {{ deb: linux-image-amd64 }}{a} }}
  - {{ name: b, source: running }}
  - {{ name: c, source: {{ git: /src/linux, ref: v6.12 }}, config: {{ base: defconfig }}, perf: tree }}
{top}workloads: [ {{ name: w, kind: hackbench }} ]
"#
        )
    };
    let s = from_str(
        &text(
            "perf: { debian: linux-source-7.2 }\n",
            ", perf: { git: /src/perf, ref: v7.2 }",
        ),
        Path::new("/"),
    )
    .unwrap();
    let perf: Vec<Option<String>> = s
        .kernels
        .iter()
        .map(|k| k.perf.as_ref().map(|p| p.to_string()))
        .collect();
    assert_eq!(
        perf,
        [
            Some("git /src/perf at v7.2".to_string()),
            Some("Debian's linux-source-7.2".to_string()),
            None
        ]
    );
    let s = from_str(&text("", ""), Path::new("/")).unwrap();
    assert!(s.kernels.iter().all(|k| k.perf.is_none()));
    check(
        &text("perf: { debian: linux-image-amd64 }\n", ", perf: { deb: x }"),
        "
f.yaml:5:58: perf: expected `tree` (a built kernel's own tools/perf), { debian: linux-source-X.Y }, { git: URL, ref: REF } or { tarball: FILE }
f.yaml:5:60: unknown field `deb` in perf; did you mean `ref`? expected one of: git, ref, tarball, debian
f.yaml:8:17: debian: \"linux-image-amd64\" is not a Debian kernel source package (linux-source-X.Y)
",
    );
    check(
        &text("perf: { tarball: p.tar.xz, ref: v1 }\n", ", perf: tree"),
        "
f.yaml:5:58: `perf` applies only to kernels built from `git` or `tarball` sources
f.yaml:8:33: `ref` goes with `git`
",
    );
}

/// A duplicate is reported at the item that repeats the name, even when an item before it
/// failed (the walk once paired items and results by index and pointed one item too early).
#[test]
fn a_duplicate_after_a_failed_item_is_reported_where_it_repeats() {
    check(
        &format!("{HOSTS}variants:\n  - {{ name: bad, policy: nosuch }}\n  - {{ name: v }}\n  - {{ name: v }}\nworkloads:\n  - {{ name: w, kind: hackbench, groups: 0 }}\n  - {{ name: x, kind: hackbench }}\n  - {{ name: x, kind: hackbench }}\n"),
        "
f.yaml:7:26: policy: unknown policy `nosuch`; expected other, batch or idle
f.yaml:9:5: variant `v` is declared twice
f.yaml:11:41: groups (-g): 0 is out of range (1 to 10000)
f.yaml:13:5: workload `x` is declared twice
",
    );
}

/// Two tools of one name would install over each other: the second is refused where it
/// stands.
#[test]
fn a_tool_declared_twice_is_refused() {
    check(
        &format!("{HOSTS}tools:\n  - {{ name: hb, on: [sut], from: {{ apt: rt-tests }} }}\n  - {{ name: hb, on: [ldg], from: {{ apt: rt-tests }} }}\nworkloads: [ {{ name: h, kind: hackbench }} ]\n"),
        "f.yaml:8:5: tool `hb` is declared twice",
    );
}

#[test]
fn boots_and_adaptive_iterations() {
    let s = from_str(
        &GOOD.replace("iterations: 3", "iterations: { min: 6, max: 12 }\nboots: 3"),
        Path::new("/scn"),
    )
    .unwrap();
    assert_eq!((s.iterations, s.max_iterations, s.boots), (6, 12, 3));
    assert_eq!(s.looks().at, vec![3, 5, 6], "two runs per boot, up to six boots");
    assert!(s.by_boot() && s.adaptive());
    let fixed = from_str(GOOD, Path::new("/scn")).unwrap();
    assert!(!fixed.adaptive() && !fixed.by_boot() && fixed.looks().is_fixed());
    check(
        &GOOD.replace("iterations: 3", "iterations: { min: 3, max: 5, step: 1 }"),
        "f.yaml:20:31: unknown field `step` in iterations; expected one of: min, max",
    );
    check(
        &GOOD.replace("iterations: 3", "iterations: { min: 5, max: 3 }"),
        "f.yaml:20:28: iterations: max 3 is below min 5",
    );
    check(
        &GOOD.replace("iterations: 3", "iterations: 2\nboots: 3"),
        "f.yaml:21:8: boots: 3 boots need at least 3 iterations (one run in each boot); iterations is 2",
    );
    check(
        &GOOD
            .replace("source: { deb: linux-image-amd64 }", "source: running")
            .replace("iterations: 3", "iterations: 4\nboots: 2"),
        "f.yaml:21:8: boots: 2 boots each kernel 2 times, but kernel `deb61` is `source: running`, which kreg cannot boot again; give it as a deb, a path or a build",
    );
    // A metric's kind, and a kind that is none.
    let k = from_str(
        &GOOD.replace("higher_is_better: false }", "higher_is_better: false, kind: latency }"),
        Path::new("/scn"),
    )
    .unwrap();
    let crate::workload::WorkloadKind::Command(c) = &k.workloads[1].kind else {
        panic!()
    };
    assert_eq!(c.metrics[0].kind, crate::stats::MetricKind::Latency);
    check(
        &GOOD.replace("higher_is_better: false }", "higher_is_better: false, kind: median }"),
        "f.yaml:19:81: kind: \"median\" is not one of mean, throughput, latency, count",
    );
}
