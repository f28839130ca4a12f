use super::*;

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn value(s: &Section, name: &str) -> f64 {
    s.fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} in {s:?}"))
        .values[0]
}

/// perf 7.2.13 on Debian's 6.12 (schedstat v16) in a 2-CPU lab guest: the summary, one
/// domain level, and each CPU with its domain.
#[test]
fn a_report_of_schedstat_v16_is_read_section_by_section() {
    let r = parse(&fixture("perf-7.2-sched-stats-report.6.12.txt")).unwrap();
    assert_eq!(r.elapsed_jiffies, [900]);
    let heads: Vec<String> = r.sections.iter().map(section_name).collect();
    assert_eq!(
        heads,
        [
            "<ALL CPUS SUMMARY>",
            "<ALL CPUS SUMMARY> | DOMAIN: 0",
            "0",
            "0 | DOMAIN: 0",
            "1",
            "1 | DOMAIN: 0"
        ]
    );
    assert_eq!(r.sections[3].domain_cpus.as_deref(), Some("0-1"));
    let summary = &r.sections[0];
    assert_eq!(summary.fields.len(), 9);
    assert_eq!(value(summary, "sched_count"), 4299.0);
    assert_eq!(value(summary, "run_delay"), 83620589012.0);
    let domain = &r.sections[1];
    // busy first in v16; the derived figures are marked; the wakeup counters close it.
    assert_eq!(domain.fields[0].name, "busy_lb_count");
    let derived: Vec<&str> = domain
        .fields
        .iter()
        .filter(|f| f.derived)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(
        derived,
        [
            "busy_lb_success_count",
            "busy_lb_avg_pulled",
            "idle_lb_success_count",
            "idle_lb_avg_pulled",
            "newidle_lb_success_count",
            "newidle_lb_avg_count"
        ]
    );
    assert_eq!(domain.fields.last().unwrap().name, "ttwu_move_balance");
    assert_eq!(value(domain, "busy_lb_avg_pulled"), 2.33);
    // perf's summary is the mean over CPUs, rounded down, for every counter.
    for (i, f) in r.sections[0].fields.iter().enumerate() {
        let sum = r.sections[2].fields[i].values[0] + r.sections[4].fields[i].values[0];
        assert_eq!(f.values[0], (sum / 2.0).floor(), "{}", f.name);
    }
    for (i, f) in r.sections[1].fields.iter().enumerate().filter(|(_, f)| !f.derived) {
        let sum = r.sections[3].fields[i].values[0] + r.sections[5].fields[i].values[0];
        assert_eq!(f.values[0], (sum / 2.0).floor(), "{}", f.name);
    }
}

/// Debian's 6.1 (schedstat v15): idle before busy, one imbalance counter.
#[test]
fn a_report_of_schedstat_v15_keeps_its_order() {
    let r = parse(&fixture("perf-7.2-sched-stats-report.6.1.txt")).unwrap();
    let domain = r.summary().nth(1).unwrap();
    assert_eq!(domain.domain.as_deref(), Some("0"));
    assert_eq!(domain.fields[0].name, "idle_lb_count");
    assert!(domain.fields.iter().any(|f| f.name == "busy_lb_imbalance"));
    assert!(!domain.fields.iter().any(|f| f.name == "busy_lb_imbalance_load"));
    assert_eq!(value(r.summary().next().unwrap(), "sched_count"), 26702.0);
}

/// `perf sched stats diff`: two values per field (the widest run together after the comma).
#[test]
fn a_diff_has_two_values_per_field_and_gives_no_job_metrics() {
    for v in ["6.12", "6.1"] {
        let r = parse(&fixture(&format!("perf-7.2-sched-stats-diff.{v}.txt"))).unwrap();
        assert_eq!(r.sides(), 2, "{v}");
        assert!(r.sections.iter().all(|s| s.cpu.is_none()), "a diff shows the summary");
        let e = metrics(&r).unwrap_err();
        assert!(e.to_string().contains("`perf sched stats diff` output"), "{e}");
    }
    let r = parse(&fixture("perf-7.2-sched-stats-diff.6.12.txt")).unwrap();
    assert_eq!(r.elapsed_jiffies, [900, 290]);
    let s = r.summary().next().unwrap();
    let rd = s.fields.iter().find(|f| f.name == "run_delay").unwrap();
    assert_eq!(rd.values, [83620589012.0, 10194913138.0]);
    // The first recording of the diff is the report's.
    let report = parse(&fixture("perf-7.2-sched-stats-report.6.12.txt")).unwrap();
    let a: Vec<f64> = report
        .summary()
        .flat_map(|s| s.fields.iter().map(|f| f.values[0]))
        .collect();
    let b: Vec<f64> = r.summary().flat_map(|s| s.fields.iter().map(|f| f.values[0])).collect();
    assert_eq!(a, b);
}

#[test]
fn metrics_are_the_summary_per_domain_level() {
    let r = parse(&fixture("perf-7.2-sched-stats-report.6.12.txt")).unwrap();
    let m = metrics(&r).unwrap();
    let get = |n: &str| m.iter().find(|x| x.name == n).unwrap_or_else(|| panic!("{n}"));
    assert_eq!(get("sched_stats_sched_count").value, 4299.0);
    assert_eq!(get("sched_stats_run_delay").unit, "ns");
    assert_eq!(get("sched_stats_domain0_busy_lb_count").value, 59.0);
    assert_eq!(get("sched_stats_domain0_busy_lb_avg_pulled").kind, MetricKind::Mean);
    assert_eq!(get("sched_stats_domain0_ttwu_wake_remote").kind, MetricKind::Count);
    // The summary only: 9 CPU counters and one domain level's fields.
    let domain = r.summary().nth(1).unwrap().fields.len();
    assert_eq!(m.len(), 9 + domain);
    assert_eq!(metric_name(Some("MC"), "alb_count"), "sched_stats_mc_alb_count");
}

#[test]
fn text_that_is_not_a_report_is_refused_not_read_as_zeros() {
    let e = parse("Performance counter stats for 'true':\n\n  1 context-switches\n").unwrap_err();
    assert!(e.to_string().contains("no `Time elapsed (in jiffies)` line"), "{e}");
    let e = parse("Time elapsed (in jiffies)       :         120\n").unwrap_err();
    assert!(e.to_string().contains("no `CPU: <ALL CPUS SUMMARY>` section"), "{e}");
}

#[test]
fn a_report_cut_short_or_garbled_is_an_error_naming_the_line() {
    let text = fixture("perf-7.2-sched-stats-report.6.12.txt");
    // Cut right after a section's header: that section has no fields.
    let cut: String = text.lines().take(93).map(|l| format!("{l}\n")).collect();
    assert!(cut.ends_with("CPU: 0 | DOMAIN: 0 | DOMAIN_CPUS: 0-1\n"), "{cut}");
    let e = parse(&cut).unwrap_err();
    assert!(e.to_string().contains("section `0 | DOMAIN: 0` has no fields"), "{e}");
    // Cut inside the last section: fewer fields than the summary's.
    let cut: String = text.lines().take(200).map(|l| format!("{l}\n")).collect();
    let e = parse(&cut).unwrap_err();
    assert!(
        e.to_string()
            .contains("section `1 | DOMAIN: 0` has 33 fields where the summary's has 42"),
        "{e}"
    );
    let garbled = text.replacen(
        "sched_count                                                      :        4299",
        "sched_count                                                      :        42x9",
        1,
    );
    let e = parse(&garbled).unwrap_err();
    assert!(e.to_string().contains("line 17: `42x9` is not a count"), "{e}");
    let verbose = text.replacen("yld_count      ", "sched_yield() count", 1);
    let e = parse(&verbose).unwrap_err();
    assert!(e.to_string().contains("without --verbose"), "{e}");
    let mixed = text.replacen("         900\n", "         900,  12\n", 1);
    let e = parse(&mixed).unwrap_err();
    assert!(e.to_string().contains("1 value(s) where the elapsed time has 2"), "{e}");
}

/// The same lab job's /proc/schedstat, read by kreg before and after the whole job (two
/// recordings, a report and a diff): perf's first recording lies inside, so every counter
/// both have grew as much or more for kreg, CPU by CPU and domain by domain.
#[test]
fn perf_s_counters_fit_inside_kreg_s_own_snapshots() {
    for (v, version) in [("6.12", 16), ("6.1", 15)] {
        let read = |w: &str| {
            crate::schedstat::parse(&fixture(&format!("perf-7.2-sched-stats-schedstat-{w}.{v}.txt"))).unwrap()
        };
        let diff = crate::schedstat::diff(&read("before"), &read("after")).unwrap();
        assert_eq!(diff.version, version);
        let report = parse(&fixture(&format!("perf-7.2-sched-stats-report.{v}.txt"))).unwrap();
        let both = cross_check(&report, &diff).unwrap();
        // Two CPUs: 9 counters each and the domain's 36 (v15 and v16 have one imbalance).
        assert_eq!(both.len(), 2 * (9 + 36), "{v}");
        assert!(
            both.iter().all(Compared::agrees),
            "{v}: {:?}",
            both.iter().filter(|c| !c.agrees()).collect::<Vec<_>>()
        );
        let lb = both.iter().find(|c| c.cpu == 1 && c.field == "busy_lb_count").unwrap();
        assert_eq!(lb.domain, Some(0));
        assert!(lb.perf > 0, "{lb:?}");
        // A perf figure larger than kreg's is a disagreement, and CPUs must match.
        let mut more = report.clone();
        more.sections[2].fields[2].values[0] = 1e12;
        assert!(cross_check(&more, &diff)
            .unwrap()
            .iter()
            .any(|c| !c.agrees() && c.field == "sched_count"));
        let mut other = report.clone();
        other.sections[4].cpu = Some(7);
        assert_eq!(
            cross_check(&other, &diff).unwrap_err().to_string(),
            "perf reports CPU 7, kreg's snapshots have no such CPU"
        );
    }
    assert_eq!(kreg_field("newidle_lb_hot_gained"), "newidle.lb_hot_gained");
    assert_eq!(kreg_field("ttwu_move_affine"), "ttwu_move_affine");
}

/// The report cut after every one of its lines: every cut that loses a line with content
/// is refused (inside a field list, inside the summary, at a section's border that drops a
/// CPU or a domain level), and only the whole report (or one missing nothing but closing
/// rulers) is read. Whether a cut loses content is decided here from the text alone.
#[test]
fn a_report_cut_after_any_line_is_refused_unless_nothing_with_content_is_lost() {
    for v in ["6.12", "6.1"] {
        let text = fixture(&format!("perf-7.2-sched-stats-report.{v}.txt"));
        let lines: Vec<&str> = text.lines().collect();
        let ruler = |l: &&str| l.trim().is_empty() || l.trim().chars().all(|c| c == '-');
        let mut accepted = Vec::new();
        for k in 1..=lines.len() {
            let cut: String = lines[..k].iter().map(|l| format!("{l}\n")).collect();
            let loses = !lines[k..].iter().all(ruler);
            match (parse(&cut), loses) {
                (Ok(_), true) => panic!("{v}: cut after line {k} ({:?}) was accepted", lines[k - 1]),
                (Err(_), false) => panic!("{v}: the report less its closing rulers (line {k}) was refused"),
                (Ok(_), false) => accepted.push(k),
                (Err(_), true) => {}
            }
        }
        assert_eq!(accepted.last(), Some(&lines.len()), "{v}");
    }
}

/// A report of a 2-CPU recording whose second CPU's sections are missing (as when `perf
/// sched stats report` runs on a machine with fewer CPUs than it was recorded on): the
/// domains span CPUs 0-1, so it is refused, saying which CPU lacks its sections.
#[test]
fn a_report_without_every_cpu_its_domains_span_is_refused() {
    let text = fixture("perf-7.2-sched-stats-report.6.12.txt");
    let at = text.find("CPU: 1\n").unwrap();
    // Back to the ruler before the header.
    let start = text[..at].trim_end_matches('\n').rfind('\n').unwrap() + 1;
    let without: String = text[..start].to_string();
    let e = parse(&without).unwrap_err().to_string();
    assert!(e.contains("no section for CPU 1"), "{e}");
    assert!(e.contains("report where it was recorded"), "{e}");
    // A field of the summary's own counters removed: refused, naming it.
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("ttwu_local")).collect();
    let e = parse(&lines.join("\n")).unwrap_err().to_string();
    assert!(e.contains("missing ttwu_local"), "{e}");
    // A domain section of another version's layout (v15's order in a v16 report) is mixed.
    let v15 = fixture("perf-7.2-sched-stats-report.6.1.txt");
    let d15 = &v15[v15.find("CPU: 1 | DOMAIN").unwrap()..];
    let d16 = &text[text.find("CPU: 1 | DOMAIN").unwrap()..];
    let mixed = text.replace(d16, d15);
    let e = parse(&mixed).unwrap_err().to_string();
    assert!(e.contains("two reports mixed"), "{e}");
}

/// kreg's snapshots and perf's report must describe the same CPUs both ways: a CPU in
/// kreg's snapshots that perf's report lacks is an error, not an agreement.
#[test]
fn cross_check_refuses_a_cpu_perf_does_not_report() {
    let read =
        |w: &str| crate::schedstat::parse(&fixture(&format!("perf-7.2-sched-stats-schedstat-{w}.6.12.txt"))).unwrap();
    let diff = crate::schedstat::diff(&read("before"), &read("after")).unwrap();
    let mut report = parse(&fixture("perf-7.2-sched-stats-report.6.12.txt")).unwrap();
    report.sections.retain(|s| s.cpu != Some(1));
    assert_eq!(
        cross_check(&report, &diff).unwrap_err().to_string(),
        "kreg's snapshots have CPU 1, perf's report has no section for it"
    );
    // A domain named in perf's report but another level in kreg's.
    let mut named = parse(&fixture("perf-7.2-sched-stats-report.6.12.txt")).unwrap();
    named.sections[3].domain = Some("3".into());
    let e = cross_check(&named, &diff).unwrap_err();
    assert!(
        e.to_string().contains("perf's domain level 0 is 3, kreg's is domain0"),
        "{e}"
    );
}
