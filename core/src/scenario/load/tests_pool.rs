use std::path::Path;

use crate::scenario::{pool_from_str, Role, Transport};

fn errors(text: &str) -> Vec<String> {
    pool_from_str(text, Path::new("/p"))
        .unwrap_err()
        .iter()
        .map(|d| format!("{}:{}: {}", d.line, d.col, d.message))
        .collect()
}

#[test]
fn a_pool_names_machines_with_their_roles_transports_loadgens_and_labels() {
    let text = "machines:\n  a: { role: sut, loadgen: l, labels: { cpu: EPYC-7763, numa: \"2\" }, about: { serial: J1 }, transport: { kind: http, url: \"http://127.0.0.1:7878\", token_file: t } }\n  l: { role: loadgen, transport: { kind: ssh, address: 10.0.0.6 } }\n";
    let m = pool_from_str(text, Path::new("/p")).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!((m[0].role, m[0].loadgen.as_deref()), (Role::Sut, Some("l")));
    assert_eq!(m[0].labels.get("numa").map(String::as_str), Some("2"));
    // What describes a machine is apart from its labels.
    assert_eq!(m[0].about.get("serial").map(String::as_str), Some("J1"));
    assert!(!m[0].labels.contains_key("serial") && m[1].about.is_empty());
    match &m[0].transport {
        Transport::Http(h) => assert_eq!(h.token_file, Path::new("/p/t")),
        t => panic!("{t:?}"),
    }
    assert!(matches!(m[1].transport, Transport::Ssh(_)));
    // The shipped demo pool loads.
    let demo = include_str!("../../../../scenarios/fleet/pool.yaml");
    assert_eq!(pool_from_str(demo, Path::new("/")).unwrap().len(), 2);
}

#[test]
fn pool_mistakes_are_reported_where_they_are() {
    assert_eq!(
        errors("machines:\n  a: { role: sut, transport: { kind: lab } }\n"),
        vec!["2:30: machine `a`: a lab VM cannot be a fleet machine (it lives with one controller)"]
    );
    assert_eq!(
        errors("machines:\n  a: { role: sut, loadgen: b, transport: { kind: ssh, address: h } }\n"),
        vec!["2:3: machine `a`: loadgen `b` is not a machine of this pool"]
    );
    assert_eq!(
        errors("machines:\n  a: { role: sut, colour: red, transport: { kind: ssh, address: h } }\n")[0],
        "2:19: unknown field `colour` in machine `a`; expected one of: role, transport, loadgen, labels, about"
    );
    assert_eq!(
        errors("machines:\n  a: { role: sut, about: rack-3, transport: { kind: ssh, address: h } }\n"),
        vec!["2:26: about: expected a mapping of label to value, found a string"]
    );
    assert_eq!(
        errors("machines:\n  a: { role: loadgen, loadgen: a, transport: { kind: ssh, address: h } }\n"),
        vec!["2:3: machine `a`: only a SUT has a loadgen"]
    );
    assert_eq!(
        errors("machines: {}\n"),
        vec!["1:11: machines: declare at least one machine"]
    );
}

/// One agent listed twice (its address written two ways) would be leased to two slots at
/// once: the second entry is refused where it is; other ports, hosts and schemes are
/// other agents.
#[test]
fn one_agent_listed_twice_is_refused() {
    let pool = |a: &str, b: &str| {
        format!(
            "machines:\n  a: {{ role: sut, transport: {{ kind: http, url: \"{a}\", token_file: t, insecure: true }} }}\n  b: {{ role: sut, transport: {{ kind: http, url: \"{b}\", token_file: t, insecure: true }} }}\n"
        )
    };
    for (a, b) in [
        ("http://127.0.0.1:7878", "http://localhost:7878/"),
        ("http://LOCALHOST:7878", "http://[::1]:7878/agent"),
        ("http://host.example:80", "HTTP://Host.Example"),
        ("http://h.example", "http://h.example.:80/"),
    ] {
        let e = errors(&pool(a, b));
        assert_eq!(e.len(), 1, "{a} {b}: {e:?}");
        assert!(
            e[0].starts_with("3:3: machine `b` reaches the same agent as machine `a`"),
            "{a} {b}: {e:?}"
        );
    }
    for (a, b) in [
        ("http://127.0.0.1:7878", "http://127.0.0.1:7879"),
        ("http://h1.example:7878", "http://h2.example:7878"),
        ("http://h.example", "http://h.example:8080"),
    ] {
        assert!(pool_from_str(&pool(a, b), Path::new("/p")).is_ok(), "{a} {b}");
    }
    let ssh = "machines:\n  a: { role: sut, transport: { kind: ssh, address: Box1 } }\n  b: { role: sut, transport: { kind: ssh, address: \"box1:22\" } }\n";
    assert_eq!(errors(ssh).len(), 1, "{:?}", errors(ssh));
}
