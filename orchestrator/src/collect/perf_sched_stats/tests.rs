use super::*;

#[test]
fn text_that_is_not_a_report_is_refused_not_read_as_zeros() {
    let e = parse("Performance counter stats for 'true':\n\n  1 context-switches\n").unwrap_err();
    assert!(e.to_string().contains("no `Time elapsed (in jiffies)` line"), "{e}");
    let e = parse("Time elapsed (in jiffies)       :         120\n").unwrap_err();
    assert!(e.to_string().contains("no `CPU: <ALL CPUS SUMMARY>` section"), "{e}");
}
