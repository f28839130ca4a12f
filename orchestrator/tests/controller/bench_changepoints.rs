//! `kreg bench changepoints` prints the change-point search's rates on synthetic series: a
//! 5 % step at 1 % noise found at its run in at least 90 % of series, and a false change
//! point in at most 1 % of series without a step.

use std::process::Command;

#[test]
fn the_bench_prints_rates_that_keep_the_promises() {
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .args(["bench", "changepoints", "--series", "400"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let cells = |name: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("no row {name:?} in\n{text}"));
        line.split('|')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    let share = |c: &str| c.trim_end_matches('%').parse::<f64>().unwrap();
    for name in ["+5% step, CoV 1%", "-5% step, CoV 1%"] {
        let row = cells(name);
        assert!(share(&row[1]) >= 90.0, "{row:?}");
        assert!(share(&row[2]) >= share(&row[1]), "{row:?}");
    }
    for name in ["no change, CoV 1%", "no change, CoV 5%"] {
        let row = cells(name);
        assert_eq!(row[1], "-");
        assert!(share(&row[3]) <= 1.0, "{row:?}");
    }
}
