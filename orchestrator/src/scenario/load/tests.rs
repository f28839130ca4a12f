use std::path::Path;

use super::*;

const GOOD: &str = r#"
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
fn check(text: &str, expected: &str) {
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
f.yaml:6:34: unknown field `colour` in a kernel; expected one of: name, source
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
f.yaml:6:11: baseline `k9` is not one of the kernels (k1)
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
