//! Scenario loading, continued: ssh hosts, tokens across a network, tuning, and the seed
//! scenarios with their set-ups.

use std::path::Path;

use super::tests::{check, GOOD};
use super::*;

#[test]
fn ssh_hosts_and_their_mistakes() {
    let ok = r#"
name: x
hosts:
  s: { role: sut, transport: { kind: ssh, address: "10.0.0.5:2222", user: kreg, identity: keys/id, known_hosts: kh, host_key: "SHA256:DvbqjGl5csRDNiMSI8B6QVhsBlwml0NtOSpZovRtTUc", agent_port: 7979, boot: grub-reboot } }
  l: { role: loadgen, transport: { kind: ssh, address: "[fe80::1]" } }
kernels: [ { name: k, source: running } ]
workloads: [ { name: w, kind: hackbench } ]
"#;
    let s = from_str(ok, Path::new("/etc/kreg")).unwrap();
    let Transport::Ssh(t) = &s.hosts[0].transport else {
        panic!("{:?}", s.hosts[0].transport)
    };
    assert_eq!(
        t.ssh,
        SshSpec {
            address: "10.0.0.5".into(),
            port: 2222,
            user: "kreg".into(),
            identity: Some("/etc/kreg/keys/id".into()),
            passphrase_file: None,
            known_hosts: Some("/etc/kreg/kh".into()),
            host_key: Some("SHA256:DvbqjGl5csRDNiMSI8B6QVhsBlwml0NtOSpZovRtTUc".into()),
            agent_port: 7979,
        }
    );
    assert_eq!(
        (t.machine.boot, t.machine.keep_kernels, t.token_file.is_none()),
        (BootVia::GrubReboot, 3, true)
    );
    assert_eq!(t.ssh.target(), "kreg@10.0.0.5:2222");
    let Transport::Ssh(l) = &s.hosts[1].transport else {
        panic!()
    };
    assert_eq!(
        (l.ssh.address.as_str(), l.ssh.port, l.ssh.user.as_str()),
        ("fe80::1", 22, "root")
    );
    assert_eq!(
        (l.ssh.agent_port, l.ssh.identity.is_none(), l.ssh.known_hosts.is_none()),
        (7879, true, true)
    );
    assert_eq!(l.ssh.target(), "root@[fe80::1]:22");
    // The identity is a file kreg validate checks; known_hosts may not exist yet.
    assert!(s
        .files
        .iter()
        .any(|f| f.what == "identity" && f.path == Path::new("/etc/kreg/keys/id")));
    assert!(!s.files.iter().any(|f| f.path.ends_with("kh")));
    check(
        r#"
name: x
hosts:
  s: { role: sut, transport: { kind: ssh, address: "h:0", user: "-oProxyCommand=x", host_key: "MD5:aa", url: "http://h", insecure: true } }
  l: { role: loadgen, transport: { kind: ssh, adress: h } }
  m: { role: loadgen, transport: { kind: http, url: "http://m:1", insecure: true, token_file: t, address: m } }
kernels: [ { name: k, source: running } ]
workloads: [ { name: w, kind: hackbench } ]
"#,
        r#"f.yaml:4:52: address: "h:0" has a port that is not a number from 1 to 65535; expected host or host:port
f.yaml:4:65: user: "-oProxyCommand=x" is not a user name
f.yaml:4:95: host_key: "MD5:aa" is not a SHA256 fingerprint; give what `ssh-keygen -lf KEY.pub` prints, e.g. "SHA256:…" (43 characters after the colon)
f.yaml:4:110: `url` does not apply to transport kind `ssh`
f.yaml:4:132: `insecure` does not apply to transport kind `ssh`
f.yaml:5:34: missing field `address` in the transport of host `l`
f.yaml:5:47: unknown field `adress` in the transport of host `l`; did you mean `address`? expected one of: kind, url, token_file, cpus, memory_mib, parallel, boot, reset, console, keep_kernels, address, user, identity, passphrase_file, known_hosts, host_key, agent_port, tls_fingerprint, insecure
f.yaml:6:107: `address` does not apply to transport kind `http`"#,
    );
}

#[test]
fn a_token_crosses_a_network_in_clear_text_only_when_the_user_says_so() {
    let with = |transport: &str| {
        format!(
            "name: x\nhosts:\n  s: {{ role: sut, transport: {{ kind: http, token_file: t, {transport} }} }}\nkernels: [ {{ name: k, source: running }} ]\nworkloads: [ {{ name: w, kind: hackbench }} ]\n"
        )
    };
    let fp = "sha256:8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4";
    for ok in [
        "url: \"http://127.0.0.1:7878\"".to_string(),
        "url: \"http://localhost:7878\"".to_string(),
        "url: \"http://[::1]:7878/\"".to_string(),
        "url: \"http://sut1:7878\", insecure: true".to_string(),
        format!("url: \"https://sut1:7878\", tls_fingerprint: \"{fp}\""),
        format!(
            "url: \"https://sut1:7878\", tls_fingerprint: \"{}\"",
            "8F:43:43:46:64:8F:6B:96:DF:89:DD:A9:01:C5:17:6B:10:A6:D8:39:61:DD:3C:1A:C8:8B:59:B2:DC:32:7A:A4"
        ),
    ] {
        check(&with(&ok), "ok");
    }
    check(
        &with("url: \"http://10.0.0.5:7878\""),
        "f.yaml:3:64: url: \"http://10.0.0.5:7878\" would send the agent's token across the network in clear text; use https:// with tls_fingerprint (kreg agent install sets it up), the ssh transport, or say insecure: true",
    );
    check(
        &with("url: \"http://127.0.0.1.evil:7878\""),
        "f.yaml:3:64: url: \"http://127.0.0.1.evil:7878\" would send the agent's token across the network in clear text; use https:// with tls_fingerprint (kreg agent install sets it up), the ssh transport, or say insecure: true",
    );
    check(
        &with("url: \"https://sut1:7878\""),
        "f.yaml:3:64: url: \"https://sut1:7878\" is https, so give the agent's certificate as tls_fingerprint: (`kreg agent install` prints it; on the machine, `kreg-agent --tls-fingerprint`)",
    );
    check(
        &with(&format!("url: \"http://sut1:7878\", tls_fingerprint: \"{fp}\"")),
        "f.yaml:3:101: tls_fingerprint: applies to an https url, and \"http://sut1:7878\" is http",
    );
    check(
        &with(&format!(
            "url: \"https://sut1:7878\", tls_fingerprint: \"{fp}\", insecure: true"
        )),
        "f.yaml:3:187: insecure: an https url is not insecure; remove it",
    );
    check(
        &with("url: \"https://sut1:7878\", tls_fingerprint: \"sha256:12\""),
        "f.yaml:3:102: tls_fingerprint: \"sha256:12\" is not a SHA-256 fingerprint (sha256: and 64 hex digits, as `kreg agent install` prints it)",
    );
}

#[test]
fn the_host_kreg_checks_is_the_host_the_token_goes_to() {
    let with = |url: &str| {
        format!(
            "name: x\nhosts:\n  s: {{ role: sut, transport: {{ kind: http, token_file: t, url: '{url}' }} }}\nkernels: [ {{ name: k, source: running }} ]\nworkloads: [ {{ name: w, kind: hackbench }} ]\n"
        )
    };
    // The HTTP client reads a backslash as a slash: this URL's host is the remote one.
    let tricked = url::Url::parse("http://10.0.0.5:7878\\@127.0.0.1").unwrap();
    assert_eq!(tricked.host_str(), Some("10.0.0.5"));
    for url in [
        "http://10.0.0.5:7878\\@127.0.0.1",
        "http://10.0.0.5:7878\\@127.0.0.1:7878",
    ] {
        check(
            &with(url),
            &format!("f.yaml:3:64: url: {url:?} holds '\\\\': give scheme://host:port/path only"),
        );
    }
    for url in [
        "http://10.0.0.5:7878@127.0.0.1",
        "http://kreg:secret@127.0.0.1:7878",
        "http://@127.0.0.1:1",
    ] {
        check(
            &with(url),
            &format!("f.yaml:3:64: url: {url:?} holds a user name or password (user@host): the agent takes its token from token_file only"),
        );
    }
    check(
        &with("http://127.0.0.1:7878/?next=http://10.0.0.5"),
        "f.yaml:3:64: url: \"http://127.0.0.1:7878/?next=http://10.0.0.5\" has a query or fragment: give scheme://host:port/path only",
    );
    check(
        &with("http://127.0.0.1:7878/ x"),
        "f.yaml:3:64: url: \"http://127.0.0.1:7878/ x\" holds ' ': give scheme://host:port/path only",
    );
    // Other spellings of loopback are loopback to the client too.
    for ok in [
        "http://127.1:7878",
        "http://0x7f000001:7878/agent",
        "http://LOCALHOST:1",
    ] {
        check(&with(ok), "ok");
    }
}

#[test]
fn tuning_of_hosts_and_variants() {
    let text = GOOD
        .replace(
            "  sut: { role: sut, transport: { kind: lab, cpus: 2 } }",
            "  sut:\n    role: sut\n    transport: { kind: lab, cpus: 2 }\n    tuning: { governor: performance, turbo: off, cpus_offline: 2-3, sysctl: { vm.swappiness: 10 }, sched: { base_slice_ns: 3000000 }, optional: [turbo, sysctl] }",
        )
        .replace(
            "  - { name: default }",
            "  - { name: default }\n  - { name: lean, tuning: { cpus_offline: other-sockets, llc: one, thp: never, dma_latency: 0 } }",
        );
    let s = from_str(&text, Path::new("/scn")).unwrap();
    assert_eq!(
        s.sut().tuning.describe(),
        "governor=performance, turbo=off (optional), cpus_offline=2-3, sysctl.vm.swappiness=10 (optional), sched.base_slice_ns=3000000"
    );
    assert_eq!(
        s.variant("lean").unwrap().tuning.describe(),
        "cpus_offline=other-sockets, llc=one, thp=never, dma_latency=0"
    );
    // Mistakes, each where it is written.
    let bad = GOOD.replace(
        "  - { name: default }",
        "  - { name: default, tuning: { governer: performance, turbo: maybe, dma_latency: -1, cpus_offline: [a], thp: sometimes, sysctl: { vm/x: 1 }, llc: two, optional: [smt] } }",
    );
    check(
        &bad,
        "f.yaml:11:32: unknown field `governer` in the tuning of variant `default`; did you mean `governor`? expected one of: governor, turbo, deep_idle, dma_latency, smt, cpus_offline, llc, numa_balancing, thp, sched, sysctl, optional
f.yaml:11:62: turbo: expected on or off, found a string
f.yaml:11:82: dma_latency (microseconds): expected a whole number from 0 to 2147483647, found a number
f.yaml:11:101: a CPU number: expected a whole number from 0 to 8191, found a string
f.yaml:11:110: thp: `sometimes`: expected always, madvise or never
f.yaml:11:131: a name in sysctl: \"vm/x\" is not a dotted sysctl name such as vm.swappiness
f.yaml:11:147: llc: `two`: the one value is `one` (the workload within one last-level cache)
f.yaml:11:163: optional: `smt` is not set in this tuning (set: )",
    );
}

#[test]
fn the_seed_scenarios_load_with_their_setups() {
    let load = |text: &str| from_str(text, Path::new("/scn")).unwrap_or_else(|d| panic!("{d:?}"));
    let s000 = load(include_str!("../../../../scenarios/seed000-schbench.yaml"));
    assert_eq!(
        s000.sut().tuning.describe(),
        "governor=performance, turbo=off, cpus_offline=other-sockets, llc=one"
    );
    let s001 = load(include_str!("../../../../scenarios/seed001-select-idle-smt.yaml"));
    assert!(s001.collect.perf_stat && s001.collect.interrupts);
    let s002 = load(include_str!("../../../../scenarios/seed002-hackbench-netperf.yaml"));
    let deep = s002.workload("hackbench-g16-deep").unwrap().cgroup.clone().unwrap();
    assert_eq!(deep.hierarchy.unwrap().levels(), [2, 100, 10, 1, 1]);
    assert!(s002.workload("udp-rr-100-quota50").unwrap().cgroup.is_some());
    assert_eq!(
        s002.sut().tuning.describe(),
        "governor=performance, turbo=off, deep_idle=off"
    );
    for text in [
        include_str!("../../../../scenarios/seed002-hackbench-netperf.yaml"),
        include_str!("../../../../scenarios/seed004-mysql-hammerdb.yaml"),
        include_str!("../../../../scenarios/lab-hackbench.yaml"),
    ] {
        load(text);
    }
}
