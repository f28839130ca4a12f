//! The plan's tests: how jobs are grouped and ordered, boots, the rendered plan (its text kept
//! as a snapshot in `snapshots/`), and the states' names.

use super::*;

#[test]
fn grouped_by_kernel_then_variant() {
    let text = "name: p\nhosts: { s: { role: sut, transport: { kind: lab } } }\nkernels: [ {name: a, source: running}, {name: b, source: running} ]\nvariants: [ {name: default}, {name: batch, policy: batch} ]\nworkloads: [ {name: w, kind: hackbench} ]\niterations: 2\n";
    let s = crate::scenario::from_str(text, std::path::Path::new("/")).unwrap();
    let jobs = expand(&s);
    assert_eq!(jobs.len(), 8);
    let keys: Vec<_> = jobs
        .iter()
        .map(|j| format!("{}/{}/{}", j.kernel, j.variant, j.iteration))
        .collect();
    assert_eq!(
        keys,
        [
            "a/default/1",
            "a/default/2",
            "a/batch/1",
            "a/batch/2",
            "b/default/1",
            "b/default/2",
            "b/batch/1",
            "b/batch/2"
        ]
    );
    assert!(jobs.iter().enumerate().all(|(i, j)| j.ordinal == i as u32));
    let text = render(&s, &jobs);
    assert_eq!(text.matches("boot kernel").count(), 2, "{text}");
}

fn lab(extra: &str) -> Scenario {
    let text = format!("name: p\nhosts: {{ s: {{ role: sut, transport: {{ kind: lab }} }} }}\nkernels: [ {{name: a, source: {{ path: /a }}}}, {{name: b, source: {{ path: /b }}}} ]\nvariants: [ {{name: default}}, {{name: batch, policy: batch}} ]\nworkloads: [ {{name: w, kind: hackbench}} ]\n{extra}");
    crate::scenario::from_str(&text, std::path::Path::new("/")).unwrap()
}

#[test]
fn only_keeps_the_cells_named_in_the_plan_s_order() {
    let s = lab("iterations: 3\nboots: 2\nwarmup: 1\n");
    let only = |specs: &[&str]| -> Vec<Only> { specs.iter().map(|o| Only::parse(&s, o).unwrap()).collect() };
    // One cell of kernel b: its boots, warm-ups and iterations as in the whole plan, kernel a
    // not booted.
    let jobs = expand_only(&s, &only(&["b/batch/w"]));
    let all = expand(&s);
    let same: Vec<&Job> = all.iter().filter(|j| j.kernel == "b" && j.variant == "batch").collect();
    assert_eq!(jobs.len(), same.len());
    for (j, k) in jobs.iter().zip(same) {
        assert_eq!(
            (&j.kernel, &j.variant, j.iteration, j.boot, j.warmup),
            (&k.kernel, &k.variant, k.iteration, k.boot, k.warmup)
        );
    }
    assert!(jobs.iter().enumerate().all(|(i, j)| j.ordinal == i as u32));
    // Wildcards, and several patterns: their union.
    assert_eq!(expand_only(&s, &only(&["*/default/*"])).len(), all.len() / 2);
    assert_eq!(expand_only(&s, &only(&["a/*/w", "*/batch/*"])).len(), all.len() * 3 / 4);
    assert_eq!(expand_only(&s, &only(&["*/*/*"])).len(), all.len());
    assert_eq!(Only::parse(&s, "a/*/w").unwrap().to_string(), "a/*/w");
    // Unknown names and wrong shapes name what there is.
    let e = Only::parse(&s, "c/default/w").unwrap_err();
    assert!(
        e.to_string().contains("no kernel \"c\"") && e.to_string().contains("kernels: a, b"),
        "{e}"
    );
    assert!(Only::parse(&s, "a/default")
        .unwrap_err()
        .to_string()
        .contains("KERNEL/VARIANT/WORKLOAD"));
    assert!(Only::parse(&s, "a/default/w/x").is_err());
}

#[test]
fn boots_alternate_kernels_and_spread_the_runs() {
    let s = lab("iterations: 5\nboots: 2\n");
    let jobs = expand(&s);
    assert_eq!(jobs.len(), 20);
    let order: Vec<String> = jobs
        .iter()
        .map(|j| format!("{}{}/{}/{}", j.kernel, j.boot, j.variant, j.iteration))
        .collect();
    assert_eq!(
        &order[..7],
        [
            "a1/default/1",
            "a1/default/2",
            "a1/default/3",
            "a1/batch/1",
            "a1/batch/2",
            "a1/batch/3",
            "b1/default/1"
        ]
    );
    assert_eq!(order[12], "a2/default/4");
    assert_eq!(order[19], "b2/batch/5");
    assert!(jobs.iter().enumerate().all(|(i, j)| j.ordinal == i as u32));
    assert_eq!(blocks(10, 3), vec![1..=4, 5..=7, 8..=10]);
}

#[test]
fn an_adaptive_round_adds_runs_only_to_the_cells_asked() {
    let s = lab("iterations: { min: 3, max: 6 }\n");
    assert_eq!(s.looks().at, vec![3, 5, 6]);
    let jobs = expand(&s);
    assert_eq!(jobs.len(), 12);
    let cell = |k: &str, v: &str| Cell {
        kernel: k.into(),
        variant: v.into(),
        workload: "w".into(),
    };
    let more = extend(&s, &jobs, &[cell("a", "batch"), cell("b", "batch")]);
    let keys: Vec<String> = more
        .iter()
        .map(|j| format!("{}{}/{}/{}#{}", j.kernel, j.boot, j.variant, j.iteration, j.ordinal))
        .collect();
    assert_eq!(keys, ["a1/batch/4#12", "b1/batch/4#13"]);
    // With boots, a round is a new boot of each kernel with a boot's runs.
    let s = lab("iterations: { min: 4, max: 8 }\nboots: 2\n");
    assert_eq!(s.looks().at, vec![2, 3, 4]);
    let jobs = expand(&s);
    let more = extend(&s, &jobs, &[cell("a", "default"), cell("b", "default")]);
    let keys: Vec<String> = more
        .iter()
        .map(|j| format!("{}{}/{}", j.kernel, j.boot, j.iteration))
        .collect();
    assert_eq!(keys, ["a3/5", "a3/6", "b3/5", "b3/6"]);
}

#[test]
fn a_plan_too_small_for_rank_rows_says_so_and_what_would_do() {
    // hackbench's figures are times: no rank rows, nothing to say.
    assert_eq!(rank_reach(&lab("iterations: 3\n")), None);
    let lab = |extra: &str| lab(&format!("collect: [interrupts]\n{extra}"));
    let note = rank_reach(&lab("iterations: 3\n")).unwrap();
    assert!(
        note.contains("need 6 runs a side") && note.contains("at most 3") && note.contains("`iterations: 6`"),
        "{note}"
    );
    assert_eq!(rank_reach(&lab("iterations: 6\n")), None);
    // The plan's last look spends less than the whole alpha: 3..5 cannot, and says
    // the smallest maximum that can.
    let note = rank_reach(&lab("iterations: { min: 3, max: 5 }\n")).unwrap();
    assert!(
        note.contains("at most 5") && note.contains("`iterations: { min: 3, max: "),
        "{note}"
    );
    let max: usize = note
        .split("max: ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        rank_reach(&lab(&format!("iterations: {{ min: 3, max: {max} }}\n"))),
        None,
        "{note}"
    );
    assert!(rank_reach(&lab(&format!("iterations: {{ min: 3, max: {} }}\n", max - 1))).is_some());
    assert_eq!(rank_reach(&lab("iterations: { min: 3, max: 10 }\n")), None);
    let note = rank_reach(&lab("iterations: 8\nboots: 4\n")).unwrap();
    assert!(note.contains("boots a side") && note.contains("at most 4"), "{note}");
}

#[test]
fn each_boot_starts_each_cell_with_its_warm_ups() {
    let s = lab("iterations: { min: 4, max: 6 }
boots: 2
warmup: 1
");
    let jobs = expand(&s);
    let key = |j: &Job| {
        format!(
            "{}{}/{}/{}{}",
            j.kernel,
            j.boot,
            j.variant,
            j.iteration,
            if j.warmup { "w" } else { "" }
        )
    };
    let keys: Vec<String> = jobs.iter().map(key).collect();
    assert_eq!(
        keys[..8],
        [
            "a1/default/0w",
            "a1/default/1",
            "a1/default/2",
            "a1/batch/0w",
            "a1/batch/1",
            "a1/batch/2",
            "b1/default/0w",
            "b1/default/1"
        ]
    );
    assert_eq!(
        jobs.len(),
        4 * 2 * 3,
        "2 kernels x 2 boots x 2 variants x (1 warm-up + 2 runs)"
    );
    assert!(jobs.iter().enumerate().all(|(i, j)| j.ordinal == i as u32));
    // A new boot of an adaptive round warms up again; another run in the same boot does not.
    let cell = Cell {
        kernel: "a".into(),
        variant: "default".into(),
        workload: "w".into(),
    };
    let more: Vec<String> = extend(&s, &jobs, std::slice::from_ref(&cell)).iter().map(key).collect();
    assert_eq!(more, ["a3/default/0w", "a3/default/5", "a3/default/6"]);
    let s = lab("iterations: { min: 3, max: 6 }
warmup: 2
");
    let jobs = expand(&s);
    assert_eq!(jobs.iter().filter(|j| j.warmup).count(), 2 * 2 * 2);
    let more: Vec<String> = extend(&s, &jobs, &[cell]).iter().map(key).collect();
    assert_eq!(more, ["a1/default/4"]);
    let plan = render(&s, &jobs);
    assert!(
        plan.contains("warm-up: 2 runs of each cell") && plan.contains("workload=w warm-up (stored, not judged)"),
        "{plan}"
    );
}

#[test]
fn states_round_trip_and_an_unknown_one_is_an_error() {
    for s in [JobState::Pending, JobState::Running, JobState::Done, JobState::Failed] {
        assert_eq!(JobState::try_from(s.as_str().to_string()), Ok(s));
    }
    for s in [
        RunState::Running,
        RunState::Interrupted,
        RunState::Done,
        RunState::Failed,
    ] {
        assert_eq!(RunState::try_from(s.to_string()), Ok(s));
    }
    assert!(JobState::try_from("finished".to_string()).is_err());
    assert!(RunState::try_from("pending".to_string()).is_err());
    assert_eq!(format!("{:<8}|", RunState::Done), "done    |");
}

/// The plan as `kreg plan` prints it, kept in `snapshots/plan.txt` (a change to the text
/// shows as a diff; `UPDATE_EXPECT=1 cargo test -p kreg-core` rewrites it on purpose).
#[test]
fn the_rendered_plan_reads_as_kept() {
    let s = lab("iterations: 3\nboots: 2\nwarmup: 1\n");
    let jobs = expand(&s);
    expect_test::expect_file!["snapshots/plan.txt"].assert_eq(&render(&s, &jobs));
}

#[test]
fn slots_spread_boots_else_runs_and_every_pair_has_every_cell() {
    let load = |extra: &str| {
        let text = format!(
            "name: s\nhosts: {{ s: {{ role: sut, transport: {{ kind: lab }} }} }}\nkernels: [ {{name: a, source: {{deb: linux-image-a}}}}, {{name: b, source: {{deb: linux-image-b}}}} ]\nbaseline: a\nvariants: [ {{name: d}}, {{name: x, policy: batch}} ]\nworkloads: [ {{name: hb, kind: hackbench}} ]\n{extra}"
        );
        crate::scenario::from_str(&text, std::path::Path::new("/")).unwrap()
    };
    let every_cell_on_every_pair = |s: &crate::scenario::Scenario, pairs: u32| {
        let jobs = expand(s);
        let slots = slots(s, &jobs, pairs).unwrap();
        for p in 0..pairs {
            let mut cells: Vec<(&str, &str)> = jobs
                .iter()
                .zip(&slots)
                .filter(|(j, sl)| **sl == p && !j.warmup)
                .map(|(j, _)| (j.kernel.as_str(), j.variant.as_str()))
                .collect();
            cells.sort();
            cells.dedup();
            assert_eq!(cells.len(), 4, "pair {p} of {pairs}");
        }
        slots
    };
    // Boots: whole boots per pair.
    let s = load("boots: 3\niterations: 6\nwarmup: 1\n");
    let jobs = expand(&s);
    let slots = every_cell_on_every_pair(&s, 3);
    assert!(jobs.iter().zip(&slots).all(|(j, sl)| *sl == j.boot - 1));
    // Runs within a boot when the boots are fewer than the pairs.
    let s = load("iterations: 6\n");
    let jobs = expand(&s);
    let slots = every_cell_on_every_pair(&s, 3);
    assert!(jobs.iter().zip(&slots).all(|(j, sl)| *sl == (j.iteration - 1) % 3));
    // Too few of either, or warm-ups that each pair would need: refused, saying why.
    let e = super::slots(&load("iterations: 2\n"), &expand(&load("iterations: 2\n")), 3).unwrap_err();
    assert!(
        e.to_string().contains("give `iterations: 3` or `boots: 3` or more"),
        "{e}"
    );
    let w = load("iterations: 6\nwarmup: 1\n");
    let e = super::slots(&w, &expand(&w), 3).unwrap_err();
    assert!(e.to_string().contains("give `boots: 3` or more"), "{e}");
    assert_eq!(super::slots(&w, &expand(&w), 1).unwrap(), vec![0; expand(&w).len()]);
}
