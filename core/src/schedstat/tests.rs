use super::*;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The deltas, read independently: field `i` of `line_prefix` after minus before.
fn field(text: &str, prefix: &str, i: usize) -> u64 {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(prefix))
        .unwrap()
        .split_whitespace()
        .nth(i + 1)
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn real_v15_and_v16_snapshots() {
    for (before, after, version) in [
        ("schedstat-before.6.1.txt", "schedstat-after.6.1.txt", 15),
        ("schedstat-before.6.12.txt", "schedstat-after.6.12.txt", 16),
    ] {
        let (tb, ta) = (fixture(before), fixture(after));
        let b = parse(&tb).unwrap();
        let a = parse(&ta).unwrap();
        assert_eq!((b.version, b.cpus.len(), b.cpus[0].domains.len()), (version, 2, 1));
        let d = diff(&b, &a).unwrap();
        for cpu in ["cpu0", "cpu1"] {
            let n: u32 = cpu[3..].parse().unwrap();
            let c = d.cpus.iter().find(|c| c.cpu == n).unwrap();
            for (i, name) in CPU_FIELDS.iter().enumerate() {
                assert_eq!(
                    c.values[i],
                    field(&ta, cpu, i) - field(&tb, cpu, i),
                    "{before} {cpu} {name}"
                );
            }
        }
        let total = d.cpu_total();
        assert_eq!(total[2], d.cpus[0].values[2] + d.cpus[1].values[2]);
        // Domain counters: the first domain line after each cpu line, field 1.. (after the mask).
        let dom = d.domain_totals();
        assert_eq!(dom.len(), 1);
        assert_eq!(dom[0].2.len(), 36);
        assert_eq!(d.jiffies, field(&ta, "timestamp", 0) - field(&tb, "timestamp", 0));
        let text = render_diff(&d, 250);
        assert!(
            text.contains("sched_count") && text.contains("avg wait per timeslice"),
            "{text}"
        );
    }
}

#[test]
fn v16_puts_busy_first() {
    assert_eq!(&domain_fields(15)[0], "idle.lb_count");
    assert_eq!(&domain_fields(16)[0], "busy.lb_count");
    assert_eq!(domain_fields(16).len(), 36);
    assert_eq!(domain_fields(17).len(), 45);
}

/// A v17 snapshot built after sched-stats.rst: domain name before the mask, four
/// imbalance counters per idle type.
fn v17(ts: u64, scale: u64) -> String {
    let mut s = format!("version 17\ntimestamp {ts}\n");
    for cpu in 0..2u64 {
        s.push_str(&format!(
            "cpu{cpu} 0 0 {} {} {} {} {} {} {}\n",
            100 * scale,
            40 * scale,
            80 * scale,
            30 * scale,
            5_000_000 * scale,
            200_000 * scale,
            90 * scale
        ));
        let mut d = Vec::new();
        for it in 0..3u64 {
            // lb_count, lb_balanced, lb_failed, 4 imbalances, gained, hot_gained, nobusyq, nobusyg
            d.extend([
                10 * scale + it,
                6 * scale,
                2 * scale + it,
                scale,
                2 * scale,
                3 * scale,
                0,
                scale,
                0,
                0,
                4 * scale,
            ]);
        }
        d.extend([1, 0, 1, 0, 0, 0, 0, 0, 0, 7 * scale, 2 * scale, 0]);
        s.push_str(&format!(
            "domain0 MC 00000003 {}\n",
            d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
        ));
    }
    s
}

#[test]
fn built_v17_snapshot() {
    let b = parse(&v17(1000, 1)).unwrap();
    let a = parse(&v17(1250, 3)).unwrap();
    assert_eq!(b.cpus[0].domains[0].name.as_deref(), Some("MC"));
    assert_eq!(b.cpus[0].domains[0].cpumask, "00000003");
    let d = diff(&b, &a).unwrap();
    assert_eq!(d.jiffies, 250);
    assert_eq!(d.cpu_total()[2], 2 * 200);
    let fields = domain_fields(17);
    let dom = &d.domain_totals()[0];
    let get = |f: &str| dom.2[fields.iter().position(|x| x == f).unwrap()];
    assert_eq!(get("busy.lb_imbalance_util"), 2 * 4);
    assert_eq!(get("idle.lb_failed"), 2 * 4);
    assert_eq!(get("ttwu_wake_remote"), 2 * 14);
    let derived = d.derived();
    let failed = derived
        .iter()
        .find(|(n, _, _)| n == "MC busy: load-balance attempts that failed")
        .unwrap();
    assert!((failed.1 - 20.0).abs() < 1e-9, "{derived:?}");
    let wait = derived.iter().find(|(n, _, _)| n == "avg wait per timeslice").unwrap();
    assert!((wait.1 - 400_000.0 / 180.0 / 1000.0).abs() < 1e-9);
    assert!(render_diff(&d, 250).contains("domain0 (MC)"));
}

#[test]
fn bad_snapshots_are_errors() {
    assert_eq!(
        parse("version 14\n").unwrap_err().to_string(),
        "/proc/schedstat line 1: version 14 is not supported (15, 16, 17)"
    );
    let t = fixture("schedstat-before.6.1.txt");
    let cut: String = t.lines().take(3).map(|l| format!("{l}\n")).collect::<String>() + "domain0 3 4 4 0\n";
    assert!(parse(&cut)
        .unwrap_err()
        .to_string()
        .contains("domain0 has 3 counters, version 15 has 36"));
    let b = parse(&fixture("schedstat-before.6.1.txt")).unwrap();
    let a = parse(&fixture("schedstat-after.6.12.txt")).unwrap();
    assert!(diff(&b, &a).unwrap_err().to_string().contains("versions differ"));
    assert!(diff(&parse(&fixture("schedstat-after.6.1.txt")).unwrap(), &b)
        .unwrap_err()
        .to_string()
        .contains("older"));
}
