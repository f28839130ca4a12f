//! A bisection's result, ready to paste: the first bad commit, the numbers at good, bad,
//! the culprit's parent, the culprit and the revert (each a mean over boots with its
//! interval, and the changes between them with theirs), every tested commit with its
//! decision and position, the builds and boots it took, and the commands that reproduce it.
//! As text, Markdown, or JSON (the [`Report`] itself).

use std::fmt::Write;

use super::{Bisection, Mark, Outcome, Part, Position, Role};
use crate::stats::t_quantile;

/// A commit of the range.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
    pub author: String,
}

/// The commits of a range that a report names: how many the range has, and those it shows
/// (its ends, the commits measured, the culprit); a page reads those, not the whole range.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Range {
    pub count: usize,
    pub known: std::collections::BTreeMap<usize, Commit>,
}

impl Range {
    /// A whole range, good first.
    pub fn whole(commits: Vec<Commit>) -> Range {
        Range {
            count: commits.len(),
            known: commits.into_iter().enumerate().collect(),
        }
    }

    /// The commits at the indices a report of these boots and this outcome names: the two
    /// ends, every commit measured, and the culprit.
    pub fn named(count: usize, boots: &[Boot], outcome: Option<&Outcome>) -> std::collections::BTreeSet<usize> {
        let mut at: std::collections::BTreeSet<usize> = [0, count.saturating_sub(1)].into();
        at.extend(boots.iter().map(|b| b.commit));
        if let Some(Outcome::Culprit { commit, .. }) = outcome {
            at.insert(*commit);
        }
        at.extend(split_commits(outcome));
        at
    }

    /// The commit at `i` (one the caller did not read shows as unknown).
    pub fn at(&self, i: usize) -> Commit {
        self.known.get(&i).cloned().unwrap_or_else(|| Commit {
            hash: format!("{i:?}"),
            subject: "(not read)".into(),
            author: String::new(),
        })
    }
}

/// One boot's measurement as stored: the commit, why, and its value or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Boot {
    pub commit: usize,
    pub role: Role,
    pub value: Result<f64, String>,
}

/// The level of every interval a bisection's report gives: the reports' own (90 %).
pub const LEVEL: f64 = 0.90;

/// A mean over boots with its interval ([`LEVEL`], from the boot-to-boot variance pooled over
/// every commit the bisection measured).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Side {
    pub boots: usize,
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A relative change (0.05: 5 % more) with its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Change {
    pub change: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A tested commit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepRow {
    pub index: usize,
    pub hash: String,
    pub subject: String,
    pub decision: Mark,
    pub position: Option<Position>,
    pub boots: usize,
    /// Its boots that gave no value and were tried again.
    pub failed_boots: usize,
    /// Why a skipped commit could not be measured.
    pub reason: Option<String>,
}

/// What the report is about, as the caller knows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct About {
    pub run: i64,
    pub scenario_file: String,
    pub kernel: String,
    pub workload: String,
    pub metric: String,
    pub variant: String,
    pub machine: String,
    pub good_ref: String,
    pub bad_ref: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    pub about: About,
    pub commits: usize,
    pub good: Commit,
    pub bad: Commit,
    /// None while the bisection goes on.
    pub outcome: Option<Outcome>,
    pub culprit: Option<Commit>,
    /// Two changes: the middle commit and each side's culprit, by index.
    pub split: std::collections::BTreeMap<usize, Commit>,
    pub at_good: Option<Side>,
    pub at_bad: Option<Side>,
    pub endpoints_change: Option<Change>,
    pub at_parent: Option<Side>,
    pub at_culprit: Option<Side>,
    pub at_revert: Option<Side>,
    /// From the culprit's parent to the culprit, measured again side by side.
    pub culprit_change: Option<Change>,
    /// From bad to bad with the culprit reverted.
    pub revert_change: Option<Change>,
    pub steps: Vec<StepRow>,
    pub builds: usize,
    pub failed_builds: usize,
    /// ⌈log2(commits)⌉ + 3, plus one per build that failed.
    pub build_goal: usize,
    pub boots: usize,
    /// Where the measurements' time went, summed over them by phase, in the order the
    /// phases run (seconds; empty when none was recorded).
    pub phases: Vec<(String, f64)>,
    pub reproduce: Vec<String>,
}

/// The boot-to-boot variance pooled over groups of boots (each a commit measured for one
/// purpose), with its degrees of freedom: the unit the bisection decides with, so that the
/// report's intervals are the ones its decisions saw.
pub fn pooled(groups: &[&[f64]]) -> Option<Pooled> {
    let mut ss = 0.0;
    let mut df = 0usize;
    for g in groups.iter().filter(|g| g.len() > 1) {
        let m = g.iter().sum::<f64>() / g.len() as f64;
        ss += g.iter().map(|v| (v - m).powi(2)).sum::<f64>();
        df += g.len() - 1;
    }
    (df > 0).then(|| Pooled {
        s2: ss / df as f64,
        df: df as f64,
    })
}

/// A variance pooled over groups, with its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pooled {
    pub s2: f64,
    pub df: f64,
}

/// The mean of `x` with its two-sided (1 − `alpha`) interval from the pooled variance.
pub fn side(x: &[f64], Pooled { s2, df }: Pooled, alpha: f64) -> Option<Side> {
    if x.is_empty() {
        return None;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let half = t_quantile(alpha, df) * (s2 / n).sqrt();
    Some(Side {
        boots: x.len(),
        mean,
        lo: mean - half,
        hi: mean + half,
    })
}

/// The change from `a` to `b` relative to `a`'s mean, with the interval of the difference
/// (pooled variance) scaled the same way.
pub fn change(a: &[f64], b: &[f64], pool: Pooled, alpha: f64) -> Option<Change> {
    let Pooled { s2, df } = pool;
    let (sa, sb) = (side(a, pool, alpha)?, side(b, pool, alpha)?);
    let half = t_quantile(alpha, df) * (s2 * (1.0 / a.len() as f64 + 1.0 / b.len() as f64)).sqrt();
    let d = sb.mean - sa.mean;
    let base = sa.mean.abs();
    Some(Change {
        change: d / base,
        lo: (d - half) / base,
        hi: (d + half) / base,
    })
}

/// The values of the boots of `commit` taken for one of `roles`.
fn values(boots: &[Boot], commit: Option<usize>, roles: &[&str]) -> Vec<f64> {
    boots
        .iter()
        .filter(|b| commit.is_none_or(|c| b.commit == c) && roles.contains(&b.role.name()))
        .filter_map(|b| b.value.as_ref().ok().copied())
        .collect()
}

/// The builds a bisection did, and those of them that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builds {
    pub compiled: usize,
    pub failed: usize,
}

/// Each tested commit as the report lists it.
fn step_rows(commits: &Range, bisection: &Bisection, boots: &[Boot]) -> Vec<StepRow> {
    bisection
        .steps()
        .iter()
        .map(|s| StepRow {
            index: s.commit,
            hash: commits.at(s.commit).hash,
            subject: commits.at(s.commit).subject,
            decision: s.mark,
            position: s.position,
            boots: s.boots,
            failed_boots: s.failed_boots,
            reason: boots
                .iter()
                .rev()
                .find(|b| s.mark == Mark::Skip && b.commit == s.commit && b.value.is_err())
                .and_then(|b| b.value.clone().err()),
        })
        .collect()
}

/// The report of a bisection replayed from `boots`, with the `builds` it did.
pub fn report(
    about: About,
    commits: &Range,
    bisection: &Bisection,
    boots: &[Boot],
    builds: Builds,
    outcome: Option<Outcome>,
) -> Report {
    let alpha = 1.0 - LEVEL;
    let last = commits.count - 1;
    let good = values(boots, Some(0), &["endpoint", "reference"]);
    let bad = values(boots, Some(last), &["endpoint", "reference"]);
    let culprit = match &outcome {
        Some(Outcome::Culprit { commit, .. }) => Some(*commit),
        _ => None,
    };
    let parent = values(boots, None, &["parent"]);
    let again = values(boots, None, &["culprit"]);
    let reverted = values(boots, None, &["revert"]);
    let mut groups: Vec<Vec<f64>> = vec![
        good.clone(),
        bad.clone(),
        parent.clone(),
        again.clone(),
        reverted.clone(),
    ];
    groups.extend(
        bisection
            .steps()
            .iter()
            .map(|s| values(boots, Some(s.commit), &["step"])),
    );
    let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
    let pool = pooled(&refs).unwrap_or(Pooled { s2: f64::NAN, df: 1.0 });
    let steps = step_rows(commits, bisection, boots);
    let tested: Vec<usize> = bisection
        .steps()
        .iter()
        .filter(|s| s.position.is_some())
        .map(|s| s.commit)
        .collect();
    let log2 = (usize::BITS - (commits.count - 1).leading_zeros()) as usize;
    Report {
        reproduce: reproduce(&about, commits, &tested, culprit),
        about,
        commits: commits.count,
        good: commits.at(0),
        bad: commits.at(last),
        culprit: culprit.map(|c| commits.at(c)),
        split: split_commits(outcome.as_ref()).map(|i| (i, commits.at(i))).collect(),
        at_good: side(&good, pool, alpha),
        at_bad: side(&bad, pool, alpha),
        endpoints_change: change(&good, &bad, pool, alpha),
        at_parent: side(&parent, pool, alpha),
        at_culprit: side(&again, pool, alpha),
        at_revert: side(&reverted, pool, alpha),
        culprit_change: change(&parent, &again, pool, alpha),
        revert_change: change(&bad, &reverted, pool, alpha),
        steps,
        builds: builds.compiled,
        failed_builds: builds.failed,
        build_goal: log2 + 3 + builds.failed,
        boots: boots.len(),
        phases: Vec::new(),
        outcome,
    }
}

/// The commands that reproduce the bisection, its confirmation, and each commit measured:
/// the scenario pinned to that commit (`kreg bisect --show RUN --at COMMIT`) run as any run.
fn reproduce(about: &About, commits: &Range, tested: &[usize], culprit: Option<usize>) -> Vec<String> {
    // Every word from the user or the repository quoted: a ref may hold `$( ) ;`.
    let q = crate::text::shell_quote;
    let metric = format!("{}/{}", about.workload, about.metric);
    let mut out = vec![crate::text::shell_words(&[
        "kreg",
        "bisect",
        &about.scenario_file,
        "--kernel",
        &about.kernel,
        "--good",
        &about.good_ref,
        "--bad",
        &about.bad_ref,
        "--metric",
        &metric,
        "--variant",
        &about.variant,
    ])];
    let last = commits.count - 1;
    let mut each: Vec<usize> = vec![0, last];
    each.extend(tested.iter().copied());
    each.sort_unstable();
    each.dedup();
    for i in each {
        let c = commits.at(i);
        let h = q(short(&c.hash));
        out.push(format!(
            "kreg bisect --show {} --at {h} > {h}.yaml && kreg run {h}.yaml   # commit {i}: {}",
            about.run,
            crate::text::one_line(&c.subject)
        ));
    }
    if let Some(c) = culprit {
        let (c, b) = (commits.at(c).hash, commits.at(last).hash);
        out.push(format!(
            "git checkout {} && git revert --no-edit {}   # bad with the culprit reverted (then build and run it as above)",
            q(short(&b)),
            q(short(&c))
        ));
    }
    out
}

fn pct(c: &Change) -> String {
    format!(
        "{:+.2}% [{:+.2}%, {:+.2}%]",
        c.change * 100.0,
        c.lo * 100.0,
        c.hi * 100.0
    )
}

fn num(s: &Side) -> String {
    if s.boots > 1 {
        format!("{:.6} [{:.6}, {:.6}] ({} boots)", s.mean, s.lo, s.hi, s.boots)
    } else {
        format!("{:.6} (1 boot)", s.mean)
    }
}

/// A commit's hash as reports show it: its first 12 characters.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// "9 commits, good v1 (…) .. bad v2 (…), kernel K".
pub fn range_text(r: &Report) -> String {
    let a = &r.about;
    format!(
        "{} commits, good {} ({}) .. bad {} ({}), kernel {}",
        r.commits,
        a.good_ref,
        short(&r.good.hash),
        a.bad_ref,
        short(&r.bad.hash),
        a.kernel
    )
}

/// "7 build(s) (1 failed; goal 8), 37 boot(s)".
pub fn cost_text(r: &Report) -> String {
    format!(
        "{} build(s) ({} failed; goal {}), {} boot(s)",
        r.builds, r.failed_builds, r.build_goal, r.boots
    )
}

/// The phases that are the work itself: the rest (checkout, tools, judging) is overhead.
pub const WORK_PHASES: [&str; 3] = ["build", "install and boot", "workload"];

/// The time by phase in words, with the share of everything but the build, the boot and
/// the workload; `None` when no phase was recorded.
pub fn phases_text(phases: &[(String, f64)]) -> Option<String> {
    let total: f64 = phases.iter().map(|p| p.1).sum();
    if phases.is_empty() || total <= 0.0 {
        return None;
    }
    let each: Vec<String> = phases
        .iter()
        .map(|(n, s)| format!("{n} {}", crate::text::duration(*s)))
        .collect();
    let other: f64 = phases
        .iter()
        .filter(|(n, _)| !WORK_PHASES.contains(&n.as_str()))
        .map(|p| p.1)
        .sum();
    Some(format!(
        "{}; all but the build, the boot and the workload: {:.1}% of {}",
        each.join(", "),
        100.0 * other / total,
        crate::text::duration(total)
    ))
}

/// The commits a two-changes outcome names: the middle one and each side's culprit.
fn split_commits(outcome: Option<&Outcome>) -> impl Iterator<Item = usize> {
    let mut at = Vec::new();
    if let Some(Outcome::TwoChanges {
        middle, first, second, ..
    }) = outcome
    {
        at.push(*middle);
        at.extend(first.culprit());
        at.extend(second.culprit());
    }
    at.into_iter()
}

/// A two-changes outcome in words: each side's finding with its share of the whole change.
fn two_changes(r: &Report, middle: usize, position: &Position, first: &Part, second: &Part) -> String {
    let name = |i: usize| match r.split.get(&i) {
        Some(c) => format!("{} \"{}\" ({})", short(&c.hash), c.subject, c.author),
        None => format!("commit {i}"),
    };
    let part = |p: &Part| match p {
        Part::Culprit { commit } => name(*commit),
        Part::Range { first, last } => {
            format!("one of commits {first} to {last} (skipped commits leave no way to tell)")
        }
        Part::Ambiguous {
            commit, first, last, ..
        } => {
            format!("ambiguous at commit {commit} (one of {first} to {last})")
        }
    };
    let share = |x: f64| format!("{:.0}%", 100.0 * x);
    format!(
        "two changes, apart: {} carries {} of the change [{}, {}], then {} carries {} [{}, {}]; \
         commit {} sits between them; each side bisected on its own, neither confirmed by a sandwich or a revert",
        part(first),
        share(position.estimate),
        share(position.lo),
        share(position.hi),
        part(second),
        share(1.0 - position.estimate),
        share(1.0 - position.hi),
        share(1.0 - position.lo),
        name(middle),
    )
}

/// One line saying where the bisection ended.
pub fn verdict(r: &Report) -> String {
    let at = |i: usize| format!("{}", i);
    match &r.outcome {
        None => "in progress".into(),
        Some(Outcome::EndpointFailed { commit, reason }) => {
            format!("stopped: endpoint {} could not be built or booted: {reason}", at(*commit))
        }
        Some(Outcome::DoesNotReproduce { p, .. }) => format!(
            "does not reproduce here: good and bad do not differ by the minimum effect at the bisection's alpha ({})",
            crate::text::p_value(*p)
        ),
        Some(Outcome::Culprit { confirmation, .. }) => {
            let c = r.culprit.as_ref().expect("a culprit");
            format!(
                "first bad commit {} \"{}\" ({}): {}",
                short(&c.hash),
                c.subject,
                c.author,
                if confirmation.confirmed {
                    "confirmed (the sandwich and the revert agree)"
                } else {
                    "NOT confirmed (see the sandwich and the revert below)"
                }
            )
        }
        Some(Outcome::Range { first, last }) => format!(
            "the first bad commit is one of commits {first} to {last} (skipped commits leave no way to tell which)"
        ),
        Some(Outcome::Ambiguous { commit, first, last, .. }) => format!(
            "ambiguous: commit {commit} sits between good and bad (two culprits, or a change only some boots show); the first bad commit is one of {first} to {last}"
        ),
        Some(Outcome::TwoChanges {
            middle,
            position,
            first,
            second,
        }) => two_changes(r, *middle, position, first, second),
    }
}

/// The report as text (`markdown`: as a Markdown document).
pub fn render(r: &Report, markdown: bool) -> String {
    let mut o = String::new();
    let a = &r.about;
    let (h, b) = if markdown { ("## ", "- ") } else { ("", "  ") };
    let _ = writeln!(
        o,
        "{h}Bisection (run {}): {}/{} under variant {} on {}",
        a.run, a.workload, a.metric, a.variant, a.machine
    );
    let _ = writeln!(o, "{b}range: {}", range_text(r));
    let _ = writeln!(o, "{b}result: {}", verdict(r));
    let _ = writeln!(
        o,
        "{b}means over boots with their {:.0}% intervals (the boot-to-boot variance pooled over every commit measured):",
        100.0 * LEVEL
    );
    let rows = [
        ("good", r.at_good),
        ("bad", r.at_bad),
        ("parent", r.at_parent),
        ("culprit", r.at_culprit),
        ("bad with the culprit reverted", r.at_revert),
    ];
    for (name, s) in rows {
        if let Some(s) = s {
            let _ = writeln!(o, "{b}{name}: {}", num(&s));
        }
    }
    let changes = [
        ("good -> bad", r.endpoints_change),
        ("parent -> culprit", r.culprit_change),
        ("bad -> reverted", r.revert_change),
    ];
    for (name, c) in changes {
        if let Some(c) = c {
            let _ = writeln!(o, "{b}change {name}: {}", pct(&c));
        }
    }
    if let Some(Outcome::Culprit { confirmation, .. }) = &r.outcome {
        let pos = |p: &Result<Option<Position>, String>| match p {
            Ok(Some(p)) => format!("{:.2} [{:.2}, {:.2}]", p.estimate, p.lo, p.hi),
            Ok(None) => "not placed".into(),
            Err(e) => format!("not measured: {e}"),
        };
        let _ = writeln!(
            o,
            "{b}sandwich: the culprit at {} between its parent (0) and bad (1); revert: at {} between good (0) and bad (1)",
            pos(&confirmation.sandwich),
            pos(&confirmation.revert)
        );
    }
    let _ = writeln!(o, "{b}cost: {}", cost_text(r));
    if let Some(t) = phases_text(&r.phases) {
        let _ = writeln!(o, "{b}time by phase: {t}");
    }
    steps(&mut o, r, markdown);
    let _ = writeln!(o, "{}to reproduce:", if markdown { "\n### " } else { "" });
    for c in &r.reproduce {
        let _ = writeln!(o, "{}{c}", if markdown { "    " } else { "  " });
    }
    o
}

fn steps(o: &mut String, r: &Report, markdown: bool) {
    if r.steps.is_empty() {
        return;
    }
    if markdown {
        let _ = writeln!(
            o,
            "\n### Steps\n\n| # | commit | subject | decision | position | boots |\n|---|---|---|---|---|---|"
        );
    } else {
        let _ = writeln!(o, "steps:");
    }
    for s in &r.steps {
        let pos = match (&s.position, &s.reason) {
            (Some(p), _) => format!("{:.2} [{:.2}, {:.2}]", p.estimate, p.lo, p.hi),
            (None, Some(reason)) => reason.lines().next().unwrap_or("").chars().take(100).collect(),
            (None, None) => "-".into(),
        };
        let mark = format!("{:?}", s.decision).to_lowercase();
        let tried = match s.failed_boots {
            0 => String::new(),
            n => format!(" (+{n} failed, tried again)"),
        };
        if markdown {
            let subject = s.subject.replace('|', "\\|");
            let _ = writeln!(
                o,
                "| {} | `{}` | {subject} | {mark} | {} | {}{tried} |",
                s.index,
                short(&s.hash),
                pos.replace('|', "\\|"),
                s.boots
            );
        } else {
            let _ = writeln!(
                o,
                "  {:>4} {} {:<9} {:<24} {:>3} boots{tried}  {}",
                s.index,
                short(&s.hash),
                mark,
                pos,
                s.boots,
                s.subject
            );
        }
    }
}
