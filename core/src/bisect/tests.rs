//! The bisection's decisions: the search alone, positions, and whole bisections of
//! synthetic ranges (CI-sized here; `kreg bench bisect` runs the full form).

use super::sim::{tally, trial, MachineModel, Synthetic};
use super::*;
use crate::stats::rng::Rng;

#[test]
fn the_search_halves_and_a_skip_next_to_the_culprit_leaves_the_pair() {
    let mut s = Search::new(9);
    assert_eq!(s.next(), Next::Test(4));
    s.mark(4, Mark::Good);
    assert_eq!(s.next(), Next::Test(6));
    s.mark(6, Mark::Bad);
    assert_eq!(s.next(), Next::Test(5));
    s.mark(5, Mark::Skip);
    assert_eq!(s.next(), Next::Range { first: 5, last: 6 });
    s.mark(5, Mark::Good);
    assert_eq!(s.next(), Next::Culprit(6));
}

#[test]
fn a_step_like_good_sits_near_0_and_one_like_bad_near_1() {
    let good = [100.0, 100.5, 99.5, 100.2];
    let bad = [103.0, 103.4, 102.6, 103.1];
    let p = position(&good, &bad, &[100.1, 99.9, 100.3], 0.01).unwrap();
    assert!(p.lo < p.estimate && p.estimate < p.hi && p.hi < 0.5, "{p:?}");
    let p = position(&good, &bad, &[103.2, 102.8, 103.0], 0.01).unwrap();
    assert!(p.lo > 0.5, "{p:?}");
    // Good and bad not told apart: no bounded interval.
    assert_eq!(position(&good, &good, &bad, 0.01), None);
}

/// The figures at CI size: 3 % at run-to-run CoV 1 % and boot-to-boot 1 % over 64
/// commits; the same range without the change; a broken commit beside the culprit.
#[test]
fn synthetic_ranges_end_where_they_should() {
    let rules = Rules::default();
    let trials = 200;
    let real = Synthetic {
        commits: 64,
        culprits: vec![(37, 0.03)],
        cov: 0.01,
        boot_cov: 0.01,
        build_fails: vec![],
    };
    let t = tally(&real.models(), &[37], rules, MachineModel::steady(10), trials, 1);
    println!("3% at 37/64: {t:?}");
    assert!(t.exact as f64 >= 0.95 * trials as f64, "{t:?}");
    assert!(t.confirmed as f64 >= 0.9 * trials as f64, "{t:?}");
    assert!(t.wrong as f64 <= 0.02 * trials as f64, "{t:?}");
    assert!(t.max_builds <= 6 + 3, "⌈log2 64⌉ + 3: {t:?}");
    let null = Synthetic {
        culprits: vec![],
        ..real.clone()
    };
    let t = tally(&null.models(), &[], rules, MachineModel::steady(10), trials, 2);
    println!("null: {t:?}");
    assert!(t.does_not_reproduce as f64 >= 0.95 * trials as f64, "{t:?}");
    assert!(t.wrong as f64 <= 0.01 * trials as f64, "{t:?}");
    // Two commits share the change: both named, never a commit that is neither.
    let two = Synthetic {
        culprits: vec![(20, 0.015), (40, 0.015)],
        ..real.clone()
    };
    let t = tally(&two.models(), &[20, 40], rules, MachineModel::steady(10), trials, 4);
    println!("two: {t:?}");
    assert!(t.two_named as f64 >= 0.8 * trials as f64, "{t:?}");
    assert!(t.wrong as f64 <= 0.01 * trials as f64, "{t:?}");
    let broken = Synthetic {
        build_fails: vec![36],
        ..real.clone()
    };
    let mut rng = Rng::new(3);
    let r = trial(&broken.models(), rules, MachineModel::steady(10), &mut rng);
    assert!(matches!(r.outcome, Outcome::Range { first: 36, last: 37 }), "{r:?}");
}

/// A machine that drifts: every value scaled by (1 + drift) a boot, compounding. The
/// references beside each step are compared with it in its blocks, so that what moved
/// between the endpoints' boots and a step's does not move the step.
#[test]
fn a_drifting_machine_moves_no_decision() {
    let trials = 200;
    // The range at ±0.01 % a boot.
    let range = Synthetic {
        commits: 64,
        culprits: vec![(37, 0.03)],
        cov: 0.01,
        boot_cov: 0.01,
        build_fails: vec![],
    };
    for drift in [0.0001, -0.0001] {
        let machine = MachineModel {
            drift,
            ..MachineModel::steady(10)
        };
        let t = tally(&range.models(), &[37], Rules::default(), machine, trials, 5);
        println!("3% at 37/64, drift {drift}: {t:?}");
        assert!(t.exact as f64 >= 0.95 * trials as f64, "{t:?}");
        assert_eq!(t.wrong, 0, "{t:?}");
    }
    // The lab's: hackbench twice as slow from commit 6 of 9, boots spread by 10 %, under a
    // minimum effect of 90 %, on a host whose load eases by 0.4 % a boot (a third over the
    // bisection: the endpoints were measured on a busier host than the steps).
    let lab = Synthetic {
        commits: 9,
        culprits: vec![(6, 1.27)],
        cov: 0.1,
        boot_cov: 0.1,
        build_fails: vec![4],
    };
    let rules = Rules {
        min_effect: 0.9,
        endpoint_boots: (3, 24),
        step_rounds: (1, 8),
        ..Rules::default()
    };
    let t = tally(
        &lab.models(),
        &[6],
        rules,
        MachineModel {
            drift: -0.004,
            ..MachineModel::steady(3)
        },
        trials,
        6,
    );
    println!("lab, drift -0.4%: {t:?}");
    assert!(t.exact as f64 >= 0.95 * trials as f64, "{t:?}");
    assert_eq!(t.wrong, 0, "{t:?}");
}

/// The lab's case: the endpoints measured while the host was busy, a step an hour later on
/// a quieter host, every value a fifth lower. Within its blocks the step is bad's; taken as
/// one block (the boots pooled whenever measured), it falls short of bad.
#[test]
fn a_step_is_placed_by_the_references_beside_it() {
    let mut noise = 0.0;
    let mut next = |v: f64| {
        noise = (noise + 0.618_034) % 1.0;
        v * (1.0 + 0.2 * (noise - 0.5))
    };
    let (good, bad) = (0.165, 0.375);
    let mut boots = Vec::new();
    let mut push = |block: usize, side: Side, value: f64| {
        let at = boots.len() as f64;
        boots.push(Boot { block, at, side, value });
    };
    for pair in 0..11 {
        push(pair, Side::Zero, next(good));
        push(pair, Side::One, next(bad));
    }
    for round in 11..19 {
        let quiet = 0.8;
        push(round, Side::Step, next(bad * quiet));
        push(round, Side::Zero, next(good * quiet));
        push(round, Side::Step, next(bad * quiet));
        push(round, Side::One, next(bad * quiet));
    }
    let placed = position_in_blocks(&boots, 0.01 / 6.0).unwrap();
    assert!(placed.lo > 0.5 && (placed.estimate - 1.0).abs() < 0.05, "{placed:?}");
    let side = |s: Side| {
        boots
            .iter()
            .filter(|b| b.side == s)
            .map(|b| b.value)
            .collect::<Vec<_>>()
    };
    let pooled = position(&side(Side::Zero), &side(Side::One), &side(Side::Step), 0.01 / 6.0).unwrap();
    assert!(pooled.estimate < 0.9, "{pooled:?}");
}

/// A culprit whose parent measures the same in new boots, or whose revert does not build,
/// is not confirmed; one that carries the change and whose revert undoes it is.
#[test]
fn the_sandwich_and_the_revert_confirm_only_a_culprit_that_carries_the_change() {
    // Eight endpoint pairs, each pair a block.
    let endpoints: Vec<Logged> = (0..8)
        .flat_map(|i| {
            let good = 100.0 + (i % 3) as f64 * 0.3;
            [(0, good), (9, good + 3.0)].map(|(commit, value)| Logged {
                commit,
                role: Role::Endpoint,
                block: i,
                value,
            })
        })
        .collect();
    let confirm = |parent: f64, culprit: f64, revert: Option<f64>| {
        let mut c = confirm::Confirm::new(5);
        let mut log = endpoints.clone();
        let mut noise = 0.0;
        loop {
            match c.ask(&log, 9, &Rules::default()) {
                Ok((commit, role)) => {
                    noise = (noise + 0.37) % 1.0;
                    let v = match role {
                        Role::Parent => Ok(parent + noise),
                        Role::Culprit => Ok(culprit + noise),
                        Role::Revert { culprit: 5 } => {
                            revert.map(|r| r + noise).ok_or("the revert conflicts".to_string())
                        }
                        _ => Ok(103.0 + noise),
                    };
                    assert!(commit == 4 || commit == 5 || commit == 9, "{commit}");
                    if let Ok(value) = v {
                        log.push(Logged {
                            commit,
                            role,
                            block: 100 + c.round(),
                            value,
                        });
                    }
                    c.record(role, v);
                }
                Err(done) => return done,
            }
        }
    };
    let yes = confirm(100.0, 103.0, Some(100.0));
    assert!(yes.confirmed, "{yes:?}");
    let no_change = confirm(100.0, 100.2, Some(100.0));
    assert!(!no_change.confirmed, "{no_change:?}");
    let conflict = confirm(100.0, 103.0, None);
    assert!(
        !conflict.confirmed && conflict.revert == Err("the revert conflicts".into()),
        "{conflict:?}"
    );
}

#[test]
fn looks_grow_by_about_a_third_up_to_the_cap() {
    assert_eq!(look_rounds((2, 20)), [2, 3, 4, 6, 8, 11, 15, 20]);
    assert_eq!(look_rounds((3, 12)), [3, 4, 6, 8, 11, 12]);
    assert_eq!(look_rounds((5, 5)), [5]);
}

fn with_bisect(section: &str) -> Result<crate::scenario::Scenario, Vec<crate::scenario::Diagnostic>> {
    let text = format!("name: p\nhosts: {{ s: {{ role: sut, transport: {{ kind: lab }} }} }}\nkernels: [ {{name: a, source: {{ git: /r, ref: v1 }}, config: {{ base: tinyconfig }}}} ]\nworkloads: [ {{name: w, kind: hackbench}} ]\n{section}");
    crate::scenario::from_str(&text, std::path::Path::new("/"))
}

#[test]
fn the_bisect_section_gives_the_range_the_metric_and_the_rules() {
    let s = with_bisect(
        "bisect:\n  good: v1\n  bad: v2\n  metric: w/time\n  alpha: 0.001\n  step_rounds: { min: 1, max: 4 }\n",
    )
    .unwrap();
    let b = s.bisect.unwrap();
    assert_eq!((b.good.as_deref(), b.bad.as_deref()), (Some("v1"), Some("v2")));
    assert_eq!(b.metric, Some(("w".into(), "time".into())));
    assert_eq!(b.rules.alpha, 0.001);
    assert_eq!(b.rules.step_rounds, (1, 4));
    assert_eq!(b.rules.endpoint_boots, Rules::default().endpoint_boots);
    assert_eq!(b.rules.boot_tries, 3);
    assert!(with_bisect("").unwrap().bisect.is_none());
    let s = with_bisect("bisect:\n  good: v1\n  bad: v2\n  boot_tries: 5\n").unwrap();
    assert_eq!(s.bisect.unwrap().rules.boot_tries, 5);
    let e = with_bisect("bisect:\n  good: v1\n  boot_tries: 0\n").unwrap_err();
    assert!(e.iter().any(|d| d.message.contains("boot_tries")), "{e:?}");
}

#[test]
fn a_bad_bisect_section_is_said_where_it_is() {
    let e = with_bisect(
        "bisect:\n  good: v1\n  metrc: w/time\n  alpha: 2\n  metric: time\n  endpoint_boots: { min: 5, max: 3 }\n",
    )
    .unwrap_err();
    let said: Vec<String> = e
        .iter()
        .map(|d| format!("{}:{} {}", d.line, d.col, d.message))
        .collect();
    let all = said.join("\n");
    assert!(
        all.contains("7:3 unknown field `metrc` in bisect; did you mean `metric`?"),
        "{all}"
    );
    assert!(
        all.contains("8:10 bisect: alpha: \"2\" is not a number between 0 and 1"),
        "{all}"
    );
    assert!(
        all.contains("9:11 bisect: metric \"time\": expected WORKLOAD/METRIC"),
        "{all}"
    );
    assert!(
        all.contains("10:19 bisect: endpoint_boots: max 3 is below min 5"),
        "{all}"
    );
}

#[test]
fn the_endpoints_are_booted_in_turn() {
    let mut b = Bisection::new(8, Rules::default());
    let mut order = Vec::new();
    for i in 0..6 {
        match b.ask() {
            Ask::Measure { commit, role } => {
                assert_eq!(role, Role::Endpoint);
                order.push(commit);
                b.record(commit, role, Ok(100.0 + (i % 2) as f64 * 10.0 + i as f64 * 0.01));
            }
            Ask::Done(o) => panic!("{o:?}"),
        }
    }
    assert_eq!(order, [0, 7, 0, 7, 0, 7]);
}

#[test]
fn a_report_says_the_culprit_with_its_numbers_and_what_reproduces_it() {
    use super::report::{render, report, Boot, Builds, Commit};
    let commits: Vec<Commit> = (0..5)
        .map(|i| Commit {
            hash: format!("{i:040x}"),
            subject: format!("commit {i}"),
            author: "A U Thor <a@example.org>".into(),
        })
        .collect();
    let mut b = Bisection::new(5, Rules::default());
    let mut boots = Vec::new();
    let mut rng = Rng::new(7);
    let mut panicked = false;
    let outcome = loop {
        match b.ask() {
            // The first step's first boot panics; tried again, it boots.
            Ask::Measure { commit, role } if role == Role::Step && !panicked => {
                panicked = true;
                let why = "the kernel panicked (Kernel panic - not syncing: test)";
                let failed = crate::failure::Failed::new(crate::failure::FailureClass::Kernel, why);
                b.record(commit, role, Err(failed));
                boots.push(Boot {
                    commit,
                    role,
                    value: Err(why.into()),
                });
            }
            Ask::Measure { commit, role } => {
                let slow = match role {
                    Role::Revert { .. } => false,
                    _ => commit >= 3,
                };
                let v = if slow { 110.0 } else { 100.0 } + crate::stats::sim::normal(&mut rng) * 0.5;
                b.record(commit, role, Ok(v));
                boots.push(Boot {
                    commit,
                    role,
                    value: Ok(v),
                });
            }
            Ask::Done(o) => break o,
        }
    };
    let about = about(9);
    let r = report(
        about,
        &super::report::Range::whole(commits.clone()),
        &b,
        &boots,
        Builds { compiled: 4, failed: 0 },
        Some(outcome),
    );
    assert_eq!(r.culprit.as_ref().map(|c| c.subject.as_str()), Some("commit 3"));
    let c = r.endpoints_change.unwrap();
    assert!(c.lo < 0.1 && 0.1 < c.hi, "{c:?}");
    let revert = r.revert_change.unwrap();
    assert!(revert.hi < 0.0, "the revert undoes the change: {revert:?}");
    let again = r.culprit_change.unwrap();
    assert!(
        again.lo > 0.05,
        "the culprit carries the change from its parent: {again:?}"
    );
    let text = render(&r, false);
    assert!(
        text.contains("first bad commit 000000000000 \"commit 3\" (A U Thor <a@example.org>): confirmed"),
        "{text}"
    );
    assert!(text.contains("cost: 4 build(s) (0 failed; goal 6)"), "{text}");
    let tried: Vec<_> = r.steps.iter().filter(|s| s.failed_boots > 0).collect();
    assert_eq!(tried.len(), 1, "{:?}", r.steps);
    assert_ne!(tried[0].decision, Mark::Skip);
    assert_eq!(tried[0].reason, None, "a step that booted later has no skip's reason");
    assert!(text.contains("boots (+1 failed, tried again)"), "{text}");
    assert!(
        text.contains("kreg bisect s.yaml --kernel k --good v1 --bad v2 --metric w/time --variant default"),
        "{text}"
    );
    let md = render(&r, true);
    assert!(md.contains("| 3 | `000000000000` | commit 3 | bad |"), "{md}");
}

/// Refs, names and a scenario path a user (or a repository) chose go into the "to
/// reproduce" lines as single shell words: a real shell given the first line as the
/// arguments of `printf` prints them back unchanged and runs nothing they hold.
#[test]
fn the_reproduce_lines_quote_what_came_from_users_and_repositories() {
    use super::report::{report, About, Builds, Commit};
    let commits: Vec<Commit> = (0..3)
        .map(|i| Commit {
            hash: format!("{i:040x}"),
            subject: format!("subject {i}\n$(rm -rf ~)"),
            author: "A".into(),
        })
        .collect();
    let b = Bisection::new(3, Rules::default());
    let dir = std::path::Path::new("/tmp").join(format!("kreg-quote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let about = About {
        run: 1,
        scenario_file: "my scenarios/s;1.yaml".into(),
        kernel: "k'1".into(),
        workload: "w".into(),
        metric: "time".into(),
        variant: "v`x`".into(),
        machine: "sut".into(),
        good_ref: "g$(touch${IFS}pwned)".into(),
        bad_ref: "b;touch pwned2".into(),
    };
    let r = report(
        about,
        &super::report::Range::whole(commits.clone()),
        &b,
        &[],
        Builds { compiled: 0, failed: 0 },
        None,
    );
    let first = &r.reproduce[0];
    let args = first.strip_prefix("kreg ").unwrap();
    let out = std::process::Command::new("sh")
        .current_dir(&dir)
        .arg("-c")
        .arg(format!("printf '%s\\n' {args}"))
        .output()
        .unwrap();
    let words: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        words,
        [
            "bisect",
            "my scenarios/s;1.yaml",
            "--kernel",
            "k'1",
            "--good",
            "g$(touch${IFS}pwned)",
            "--bad",
            "b;touch pwned2",
            "--metric",
            "w/time",
            "--variant",
            "v`x`"
        ],
        "{first}"
    );
    assert!(!dir.join("pwned").exists() && !dir.join("pwned2").exists());
    // A subject's newline cannot end the comment it sits in.
    assert!(r.reproduce.iter().all(|l| !l.contains('\n')), "{:?}", r.reproduce);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// While a bisection runs, each decision is said once, when it is made: the endpoints told
/// apart, each tested commit's mark with its position's interval, the candidates left and
/// the next commit; nothing is said between decisions.
#[test]
fn each_decision_is_said_once_with_its_interval_the_candidates_and_the_next_commit() {
    let mut b = Bisection::new(8, Rules::default());
    let mut rng = Rng::new(3);
    let mut seen = (0, false);
    let mut said: Vec<String> = Vec::new();
    let mut asks = 0;
    loop {
        let ask = b.ask();
        asks += 1;
        let lines = b.decisions_since(seen, &ask, &|i| format!("h{i}"));
        seen = (b.steps().len(), b.reproduced());
        said.extend(lines);
        match ask {
            Ask::Measure { commit, role } => {
                let slow = !matches!(role, Role::Revert { .. }) && commit >= 5;
                let v = if slow { 110.0 } else { 100.0 } + crate::stats::sim::normal(&mut rng) * 0.5;
                b.record(commit, role, Ok(v));
            }
            Ask::Done(_) => break,
        }
    }
    let text = said.join("\n");
    assert_eq!(
        said.iter().filter(|l| l.contains("the endpoints differ")).count(),
        1,
        "{text}"
    );
    // One "decided: commit" line per tested commit, each with its interval.
    let decided: Vec<&String> = said.iter().filter(|l| l.starts_with("decided: commit")).collect();
    assert_eq!(decided.len(), b.steps().len(), "{text}");
    for (line, step) in decided.iter().zip(b.steps()) {
        assert!(
            line.starts_with(&format!("decided: commit {} (h{})", step.commit, step.commit)),
            "{line}"
        );
        assert!(line.contains("position") && line.contains('['), "{line}");
    }
    assert!(text.contains("first bad commit: one of 5..5 (1 left)"), "{text}");
    assert!(text.contains("next: commit"), "{text}");
    // Far fewer lines than asks: silence between decisions.
    assert!(said.len() < asks / 4, "{} lines for {asks} asks", said.len());
}

/// Boots that fail now and then: each is tried again on a fresh boot, so a commit that
/// booted on its second try is decided as any other, and one that never boots is a skip
/// that says so.
#[test]
fn a_boot_that_fails_is_tried_again_before_it_counts() {
    use crate::failure::{Failed, FailureClass};
    let trials = 200;
    let range = Synthetic {
        commits: 64,
        culprits: vec![(37, 0.03)],
        cov: 0.01,
        boot_cov: 0.01,
        build_fails: vec![],
    };
    // One boot in three fails, on every commit.
    let mut models = range.models();
    for m in &mut models {
        m.boot_fails = 1.0 / 3.0;
    }
    let rules = Rules {
        boot_tries: 8,
        ..Rules::default()
    };
    let t = tally(&models, &[37], rules, MachineModel::steady(10), trials, 11);
    println!("3% at 37/64, a boot in three fails: {t:?}");
    assert!(t.exact as f64 >= 0.95 * trials as f64, "{t:?}");
    assert_eq!(t.wrong, 0, "{t:?}");
    assert!(
        t.mean_failed_boots > 0.3 * (t.mean_boots - t.mean_failed_boots),
        "{t:?}"
    );
    // Under the old rule (one try) the same range mostly ends at a failed endpoint or a range.
    let once = Rules {
        boot_tries: 1,
        ..Rules::default()
    };
    let t1 = tally(&models, &[37], once, MachineModel::steady(10), trials, 11);
    assert!(t1.exact < t.exact / 2, "{t1:?}");

    // A commit that never boots: skipped, with why; its neighbour is then the range's end.
    models[36].boot_fails = 1.0;
    let mut rng = Rng::new(12);
    let r = trial(&models, rules, MachineModel::steady(10), &mut rng);
    assert!(matches!(r.outcome, Outcome::Range { first: 36, last: 37 }), "{r:?}");

    // Driven by hand: a step fails twice then boots; the third failure of the next is a skip.
    let mut b = Bisection::new(16, Rules::default());
    let mut fails = 0;
    let mut skipped = None;
    for n in 0..400 {
        let Ask::Measure { commit, role } = b.ask() else { break };
        let value = if commit >= 9 { 110.0 } else { 100.0 } + (n % 3) as f64 * 0.1;
        if role == Role::Step && fails < 2 {
            fails += 1;
            b.record(
                commit,
                role,
                Err(Failed::new(FailureClass::Kernel, "the kernel panicked")),
            );
            assert_eq!(b.ask(), Ask::Measure { commit, role }, "the same boot is asked again");
            continue;
        }
        if role == Role::Step && commit == 12 {
            b.record(
                commit,
                role,
                Err(Failed::new(FailureClass::Infrastructure, "the agent went silent")),
            );
            skipped.get_or_insert(commit);
            continue;
        }
        b.record(commit, role, Ok(value));
    }
    let steps = b.steps();
    assert_eq!(steps[0].failed_boots, 2, "{steps:?}");
    assert_ne!(steps[0].mark, Mark::Skip, "{steps:?}");
    if skipped.is_some() {
        let s = steps.iter().find(|s| s.commit == 12).unwrap();
        assert_eq!((s.mark, s.failed_boots), (Mark::Skip, 2), "{s:?}");
    }
    // A build that fails is never tried again.
    let mut b = Bisection::new(4, Rules::default());
    let Ask::Measure { commit, role } = b.ask() else {
        panic!()
    };
    b.record(commit, role, Err(Failed::new(FailureClass::Build, "make failed")));
    assert!(matches!(b.ask(), Ask::Done(Outcome::EndpointFailed { commit: 0, .. })));
    // An endpoint that never boots ends the bisection, saying so.
    let mut b = Bisection::new(4, Rules::default());
    for _ in 0..3 {
        let Ask::Measure { commit, role } = b.ask() else {
            panic!()
        };
        b.record(
            commit,
            role,
            Err(Failed::new(FailureClass::Kernel, "the kernel panicked")),
        );
    }
    match b.ask() {
        Ask::Done(Outcome::EndpointFailed { commit: 0, reason }) => {
            assert_eq!(reason, "never booted in 3 tries: the kernel panicked")
        }
        other => panic!("{other:?}"),
    }
}

/// What a test's report is about: run `run` of `s.yaml`, w/time on kernel k from v1 to v2.
pub(super) fn about(run: i64) -> super::report::About {
    super::report::About {
        run,
        scenario_file: "s.yaml".into(),
        kernel: "k".into(),
        workload: "w".into(),
        metric: "time".into(),
        variant: "default".into(),
        machine: "sut".into(),
        good_ref: "v1".into(),
        bad_ref: "v2".into(),
    }
}
