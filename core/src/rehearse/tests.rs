use super::*;

fn seed(file: &str) -> (Scenario, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    (crate::scenario::from_str(&text, path.parent().unwrap()).unwrap(), text)
}

/// Every cell once on one boot of each kernel: kernels × variants × workloads jobs.
#[test]
fn every_cell_runs_once_on_one_boot_of_each_kernel() {
    for file in [
        "seed000-schbench.yaml",
        "seed001-select-idle-smt.yaml",
        "seed002-hackbench-netperf.yaml",
        "seed004-mysql-hammerdb.yaml",
    ] {
        let (s, text) = seed(file);
        let r = rehearsal(&s, &text);
        let jobs = crate::plan::expand(&r.scenario);
        assert_eq!(
            jobs.len(),
            s.kernels.len() * s.variants.len() * s.workloads.len(),
            "{file}"
        );
        assert!(jobs.iter().all(|j| j.boot == 1 && !j.warmup), "{file}");
        for k in &s.kernels {
            for v in &s.variants {
                for w in &s.workloads {
                    let n = jobs
                        .iter()
                        .filter(|j| j.kernel == k.name && j.variant == v.name && j.workload == w.name)
                        .count();
                    assert_eq!(n, 1, "{file}: {}/{}/{}", k.name, v.name, w.name);
                }
            }
        }
    }
}

#[test]
fn seed004_is_cut_to_one_warehouse_and_a_minute_and_its_real_cost_given() {
    let (s, text) = seed("seed004-mysql-hammerdb.yaml");
    let r = rehearsal(&s, &text);
    let said: Vec<String> = r.cuts.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        said,
        [
            "tpcc: warehouses 24 -> 1",
            "tpcc: rampup 2 min -> 0 min",
            "tpcc: duration 5 min -> 1 min"
        ]
    );
    assert_eq!(r.plan, ["iterations { min: 3, max: 6 } -> 1", "boots 3 -> 1"]);
    // The file: 4 kernels, 3 variants, one workload; 3 boots of one run to start with, up
    // to 6; each run a 2 min rampup and 5 min timed, a 30 min timeout, boots 10 min.
    let cells = 4 * 3;
    assert_eq!(r.real.jobs, (cells * 3, cells * 6));
    assert_eq!(r.real.boots, (4 * 3, 4 * 6));
    assert_eq!(
        r.real.declared_secs,
        Some(((cells * 3 * 7 * 60) as u64, (cells * 6 * 7 * 60) as u64))
    );
    assert_eq!(r.real.bound_secs, (cells * 6 * 30 * 60 + 4 * 6 * 10 * 60) as u64);
    let text = r.real.text();
    assert!(
        text.starts_with("36 to 72 jobs on 12 to 24 boots; the workloads declare 4 h 12 min to 8 h 24 min"),
        "{text}"
    );
    // Nothing of its tuning: nothing a VM lacks.
    assert!(r.not_rehearsable.is_empty(), "{:?}", r.not_rehearsable);
}

/// seed002's host tuning: the governor, turbo and deep idle are what a VM lacks; each is
/// said with the place in the file that asks for it, and made optional.
#[test]
fn what_a_vm_lacks_is_said_with_its_place_in_the_file() {
    let (s, text) = seed("seed002-hackbench-netperf.yaml");
    let r = rehearsal(&s, &text);
    let keys: Vec<&str> = r.not_rehearsable.iter().map(|u| u.what.as_str()).collect();
    assert_eq!(keys, ["host sut: governor", "host sut: turbo", "host sut: deep_idle"]);
    for u in &r.not_rehearsable {
        let key = u.what.rsplit(": ").next().unwrap();
        let (line, col) = u.at.unwrap_or_else(|| panic!("no place for {u:?}"));
        let at: String = text.lines().nth(line - 1).unwrap().chars().skip(col - 1).collect();
        assert!(at.starts_with(&format!("{key}:")), "{key} at {line}:{col}: {at:?}");
    }
    let sut = r.scenario.host("sut").unwrap();
    assert!(sut.tuning.settings.iter().all(|t| t.optional), "{:?}", sut.tuning);
    assert!(r
        .cuts
        .iter()
        .any(|c| c.to_string() == "hackbench-g1: loops 150000 -> 100"));
    assert!(r.cuts.iter().any(|c| c.to_string() == "hackbench-g16: groups 16 -> 4"));
    assert!(r
        .cuts
        .iter()
        .any(|c| c.to_string() == "udp-rr-25: duration 30 s -> 5 s"));
}

/// A job's failure goes to its step, and to the place in the file of the part that asked
/// for it (the text at that place checked here on its own).
#[test]
fn a_failure_is_put_to_its_step_and_its_place_in_the_file() {
    use sheet::{place, position, JobCell, Step};
    let (_, text) = seed("seed004-mysql-hammerdb.yaml");
    let root = crate::yaml::parse(&text).unwrap();
    let job = JobCell {
        kernel: "v6.12.25",
        variant: "NOx2",
        workload: "tpcc",
    };
    let at = |path: &[String]| -> String {
        let (line, col) = position(Some(&root), path).unwrap();
        text.lines().nth(line - 1).unwrap().chars().skip(col - 1).collect()
    };
    let cases = [
        (
            "boot failed: kexec into 6.12.25 on sut: timed out",
            Step::Boot,
            "v6.12.25",
            "{ name: v6.12.25",
        ),
        (
            "tool mysqld on sut: apt-get install mariadb-server: exit 100",
            Step::Tools,
            "mysqld",
            "{ name: mysqld",
        ),
        (
            "workload tpcc, its server on sut: mysqld exited",
            Step::Server,
            "tpcc",
            "{ on: sut, kind: mysql",
        ),
        ("tuning on sut: the machine lacks it", Step::Tuning, "sut", ""),
        ("metric nopm: not in the output", Step::Parse, "tpcc", "name: tpcc"),
        (
            "hammerdb: metric nopm: not in the output",
            Step::Parse,
            "tpcc",
            "name: tpcc",
        ),
        (
            "sched_features: NO_PLACE_LAG is not a feature",
            Step::Tuning,
            "NOx2",
            "{ name: NOx2",
        ),
        ("hammerdbcli exited with 1", Step::Workload, "tpcc", "name: tpcc"),
    ];
    for (reason, step, subject, starts) in cases {
        let (s, subj, path) = place(reason, &job);
        assert_eq!((s, subj.as_str()), (step, subject), "{reason}");
        if !starts.is_empty() {
            assert!(at(&path).starts_with(starts), "{reason}: {path:?} at {:?}", at(&path));
        }
    }
    // A host with no tuning written: the nearest part that is (the host).
    let (_, _, path) = place("tuning on sut: x", &job);
    assert!(at(&path).starts_with("{ role: sut"), "{:?}", at(&path));
}
