//! What can be told before a run about the perf each kernel's jobs run: which perf, and
//! whether it has `perf sched stats` (perf 6.19 and later). A Debian source package names
//! its version; a lab guest gets the controller's own perf, which the controller asks; a perf
//! still to be built, or a machine's own, is asked on the SUT before the kernel's first job.

use crate::scenario::{KernelSource, PerfSource, Scenario, Transport};

/// The first perf with `perf sched stats`.
pub const FIRST: (u32, u32) = (6, 19);

/// Whether a perf has `perf sched stats`, as far as is known before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedStats {
    Has,
    Lacks,
    /// Asked on the SUT before the kernel's first job.
    Later,
}

/// The perf a kernel's jobs run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfOf {
    pub kernel: String,
    /// Which perf, with its version when known.
    pub perf: String,
    pub sched_stats: SchedStats,
}

impl PerfOf {
    /// `perf sched stats: yes`, `… no`, or when it is checked.
    pub fn sched_stats_text(&self) -> &'static str {
        match self.sched_stats {
            SchedStats::Has => "has `perf sched stats`",
            SchedStats::Lacks => "has no `perf sched stats` (perf 6.19 or later)",
            SchedStats::Later => "`perf sched stats` checked on the SUT before the kernel's first job",
        }
    }

    /// Why a run with the `perf_sched_stats` collector cannot start, when it cannot.
    pub fn refusal(&self) -> Option<String> {
        (self.sched_stats == SchedStats::Lacks).then(|| {
            format!(
                "kernel {}: the collector perf_sched_stats needs `perf sched stats` (perf 6.19 or later); {} has none: give the kernels a newer perf (`perf: {{ debian: linux-source-7.2 }}`)",
                self.kernel, self.perf
            )
        })
    }
}

/// `(7, 2)` from `linux-source-7.2`, `perf version 6.1.192`, or `7.2.13`.
pub fn version_in(text: &str) -> Option<(u32, u32)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| {
            let mut parts = w.split('.');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next()?.parse().ok()?;
            Some((major, minor))
        })
        .next()
}

fn by_version(v: Option<(u32, u32)>) -> SchedStats {
    match v {
        Some(v) if v >= FIRST => SchedStats::Has,
        Some(_) => SchedStats::Lacks,
        None => SchedStats::Later,
    }
}

/// The perf of every kernel whose jobs run perf on the SUT; `controller` answers for the
/// controller's own perf (kreg asks its own perf binary).
pub fn perfs(s: &Scenario, controller: impl Fn() -> Option<(String, bool)>) -> Vec<PerfOf> {
    let sut = s.sut();
    if !s.needs_perf_on(&sut.name) {
        return Vec::new();
    }
    let own_tool = s.tools.iter().any(|t| t.name == "perf" && t.on.contains(&sut.name));
    let mut asked: Option<Option<(String, bool)>> = None;
    let mut out = Vec::new();
    for k in &s.kernels {
        let (perf, sched_stats) = match (&k.perf, &k.source) {
            (Some(p @ PerfSource::Debian { package }), _) => (
                format!("perf built from {p} (on the controller)"),
                by_version(version_in(package)),
            ),
            (Some(p), _) => (format!("perf built from {p} (on the controller)"), SchedStats::Later),
            (None, KernelSource::Build(b)) if b.perf => (
                "perf built from the kernel's tree (on the controller)".into(),
                SchedStats::Later,
            ),
            _ if own_tool => (format!("the scenario's perf tool on {}", sut.name), SchedStats::Later),
            _ if matches!(sut.transport, Transport::Lab { .. }) => match asked.get_or_insert_with(&controller) {
                Some((which, has)) => (
                    format!("the controller's {which}, copied into the guest"),
                    if *has { SchedStats::Has } else { SchedStats::Lacks },
                ),
                None => (
                    "the controller's perf, which does not run here".into(),
                    SchedStats::Lacks,
                ),
            },
            _ => (format!("{}'s own perf", sut.name), SchedStats::Later),
        };
        out.push(PerfOf {
            kernel: k.name.clone(),
            perf,
            sched_stats,
        });
    }
    out
}

/// The refusals of a scenario whose collectors ask for `perf sched stats`.
pub fn refusals(s: &Scenario, perfs: &[PerfOf]) -> Vec<String> {
    let wanted = s.collect.perf_sched_stats || s.workloads.iter().any(|w| w.collect.perf_sched_stats);
    if !wanted {
        return Vec::new();
    }
    perfs.iter().filter_map(PerfOf::refusal).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str, kernels: &str, transport: &str) -> Scenario {
        let text = format!(
            "name: p\nhosts: {{ s: {{ role: sut, transport: {transport} }} }}\nkernels: {kernels}\ncollect: [perf_sched_stats]\nworkloads: [ {{name: hb, kind: hackbench}} ]\n{extra}"
        );
        crate::scenario::from_str(&text, std::path::Path::new("/")).unwrap()
    }

    #[test]
    fn versions_are_read_from_names_and_perf_s_own_words() {
        assert_eq!(version_in("linux-source-7.2"), Some((7, 2)));
        assert_eq!(version_in("perf version 6.1.192"), Some((6, 1)));
        assert_eq!(version_in("linux-source-6.19"), Some((6, 19)));
        assert_eq!(version_in("linux-source"), None);
    }

    #[test]
    fn a_debian_source_is_judged_by_its_version_and_the_lab_by_the_controller_s_perf() {
        let s = scenario(
            "",
            "[ {name: new, source: running, perf: {debian: linux-source-7.2}}, {name: old, source: running, perf: {debian: linux-source-6.12}}, {name: host, source: running} ]",
            "{ kind: lab }",
        );
        let old_perf = || Some(("/usr/bin/perf (perf version 6.1.192)".to_string(), false));
        let p = perfs(&s, old_perf);
        let got: Vec<(&str, SchedStats)> = p.iter().map(|x| (x.kernel.as_str(), x.sched_stats.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("new", SchedStats::Has),
                ("old", SchedStats::Lacks),
                ("host", SchedStats::Lacks)
            ]
        );
        assert!(p[2].perf.contains("perf version 6.1.192"), "{p:?}");
        let why = refusals(&s, &p);
        assert_eq!(why.len(), 2);
        assert!(
            why[0].starts_with("kernel old: the collector perf_sched_stats needs"),
            "{why:?}"
        );
        assert!(
            why[1].contains("the controller's /usr/bin/perf (perf version 6.1.192)"),
            "{why:?}"
        );
        // A controller whose perf has it: the lab kernel passes.
        let p = perfs(&s, || Some(("/usr/bin/perf (perf version 7.2.13)".into(), true)));
        assert_eq!(p[2].sched_stats, SchedStats::Has);
    }

    #[test]
    fn what_cannot_be_known_yet_is_checked_on_the_sut() {
        let s = scenario(
            "",
            "[ {name: a, source: running}, {name: g, source: running, perf: {git: 'https://example.org/linux.git', ref: v7.2}} ]",
            "{ kind: http, url: 'http://127.0.0.1:1', token_file: t }",
        );
        let p = perfs(&s, || panic!("a machine's kernels do not run the controller's perf"));
        assert!(p.iter().all(|x| x.sched_stats == SchedStats::Later), "{p:?}");
        assert_eq!(p[0].perf, "s's own perf");
        assert!(refusals(&s, &p).is_empty());
    }
}
