//! What a report says besides its tables: the cells whose jobs failed, with the reasons,
//! and, between two runs, the definitions and environments that differ. Pure.

use crate::results::KernelProvenance;
use crate::scenario::Scenario;
use crate::yaml::{self, Kind, Node};

/// One job as a report needs it.
#[derive(Debug, Clone)]
pub struct JobSummary {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    pub failed: bool,
    pub error: Option<String>,
    /// Who a failure is put down to, when stored.
    pub class: Option<crate::failure::FailureClass>,
}

/// A kernel × variant × workload cell some of whose jobs failed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FailedCell {
    pub kernel: String,
    pub variant: String,
    pub workload: String,
    /// Jobs that failed for the kernel's, the build's or the workload's reasons (or for
    /// reasons stored without a class).
    pub failed: usize,
    pub jobs: usize,
    /// Distinct reasons, first seen first.
    pub reasons: Vec<String>,
    /// Jobs the lab failed (infrastructure): measurements missing, not results.
    pub missing: usize,
    pub missing_reasons: Vec<String>,
}

/// The heading of the lab's failures wherever a report lists them.
pub const MISSING_HEADING: &str = "missing measurements (the lab failed, not the kernel or the workload: not results)";

impl FailedCell {
    fn cell(&self) -> String {
        format!(
            "kernel {}, variant {}, workload {}",
            self.kernel, self.variant, self.workload
        )
    }

    /// "kernel k, variant v, workload w: 3 of 3 jobs failed: reason | reason", when some
    /// failed.
    pub fn failed_line(&self) -> Option<String> {
        (self.failed > 0).then(|| {
            format!(
                "{}: {} of {} jobs failed: {}",
                self.cell(),
                self.failed,
                self.jobs,
                self.reasons.join(" | ")
            )
        })
    }

    /// "kernel k, variant v, workload w: 2 of 3 jobs missing, the lab failed: reason", when
    /// the lab failed some.
    pub fn missing_line(&self) -> Option<String> {
        (self.missing > 0).then(|| {
            format!(
                "{}: {} of {} jobs missing, the lab failed: {}",
                self.cell(),
                self.missing,
                self.jobs,
                self.missing_reasons.join(" | ")
            )
        })
    }

    /// Both, in one line.
    pub fn line(&self) -> String {
        match (self.failed_line(), self.missing_line()) {
            (Some(f), Some(m)) => format!("{f}; {}", &m[self.cell().len() + 2..]),
            (Some(f), None) => f,
            (None, Some(m)) => m,
            (None, None) => self.cell(),
        }
    }
}

/// The sections a report lists failures in: the failed jobs, then the missing
/// measurements; each with its lines, only when it has some.
pub fn failure_sections(cells: &[FailedCell]) -> Vec<(&'static str, Vec<String>)> {
    let failed: Vec<String> = cells.iter().filter_map(FailedCell::failed_line).collect();
    let missing: Vec<String> = cells.iter().filter_map(FailedCell::missing_line).collect();
    [("failed jobs", failed), (MISSING_HEADING, missing)]
        .into_iter()
        .filter(|(_, l)| !l.is_empty())
        .collect()
}

/// A reason cut to one readable line.
fn short(reason: &str) -> String {
    let one: String = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(300) {
        None => one,
        Some((at, _)) => format!("{}…", &one[..at]),
    }
}

/// The cells with failed jobs, in the order of the jobs.
pub fn failed_cells(jobs: &[JobSummary]) -> Vec<FailedCell> {
    let mut out: Vec<FailedCell> = Vec::new();
    for j in jobs {
        let i = match out
            .iter()
            .position(|c| c.kernel == j.kernel && c.variant == j.variant && c.workload == j.workload)
        {
            Some(i) => i,
            None => {
                out.push(FailedCell {
                    kernel: j.kernel.clone(),
                    variant: j.variant.clone(),
                    workload: j.workload.clone(),
                    failed: 0,
                    jobs: 0,
                    reasons: Vec::new(),
                    missing: 0,
                    missing_reasons: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[i].jobs += 1;
        if j.failed {
            let c = &mut out[i];
            let lab = j.class.is_some_and(crate::failure::FailureClass::lab);
            let (n, reasons) = if lab {
                (&mut c.missing, &mut c.missing_reasons)
            } else {
                (&mut c.failed, &mut c.reasons)
            };
            *n += 1;
            let r = short(j.error.as_deref().unwrap_or("no reason recorded"));
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
    }
    out.retain(|c| c.failed + c.missing > 0);
    out
}

/// A node's content as flat `path: value` pairs, positions left out.
fn flatten(node: &Node, path: &str, out: &mut Vec<(String, String)>) {
    match &node.kind {
        Kind::Scalar(s, _) => out.push((path.to_string(), s.clone())),
        Kind::Seq(items) => {
            let all_scalars = items.iter().all(|i| matches!(i.kind, Kind::Scalar(..)));
            if all_scalars {
                let values: Vec<String> = items
                    .iter()
                    .map(|i| match &i.kind {
                        Kind::Scalar(s, _) => s.clone(),
                        _ => unreachable!(),
                    })
                    .collect();
                out.push((path.to_string(), format!("[{}]", values.join(", "))));
            } else {
                for (n, i) in items.iter().enumerate() {
                    flatten(i, &format!("{path}[{n}]"), out);
                }
            }
        }
        Kind::Map(entries) => {
            for (k, v) in entries {
                let key = match &k.kind {
                    Kind::Scalar(s, _) => s.clone(),
                    _ => "?".into(),
                };
                let p = if path.is_empty() { key } else { format!("{path}.{key}") };
                flatten(v, &p, out);
            }
        }
    }
}

/// The entries of a list section by name, each flattened.
fn section(root: &Node, name: &str) -> Vec<(String, Vec<(String, String)>)> {
    let Kind::Map(entries) = &root.kind else {
        return Vec::new();
    };
    let Some((_, list)) = entries
        .iter()
        .find(|(k, _)| matches!(&k.kind, Kind::Scalar(s, _) if s == name))
    else {
        return Vec::new();
    };
    let Kind::Seq(items) = &list.kind else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| {
            let mut flat = Vec::new();
            flatten(i, "", &mut flat);
            let name = flat.iter().find(|(k, _)| k == "name")?.1.clone();
            flat.retain(|(k, _)| k != "name");
            Some((name, flat))
        })
        .collect()
}

/// How the definition of a named entry differs between two scenario texts:
/// "loops: 200 → 2000", "pipe: (absent) → true".
fn differences(a: &[(String, String)], b: &[(String, String)]) -> Vec<String> {
    let mut keys: Vec<&String> = a.iter().chain(b).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let get = |side: &[(String, String)], k: &str| side.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
    keys.into_iter()
        .filter_map(|k| {
            let (va, vb) = (get(a, k), get(b, k));
            (va != vb).then(|| {
                format!(
                    "{k}: {} → {}",
                    va.unwrap_or_else(|| "(absent)".into()),
                    vb.unwrap_or_else(|| "(absent)".into())
                )
            })
        })
        .collect()
}

/// Entries of `kind` (workloads, variants, kernels) defined differently in the two scenario
/// texts: (name, differences). Entries that only one side has are not listed.
pub fn definition_changes(yaml_a: &str, yaml_b: &str, kind: &str) -> Vec<(String, Vec<String>)> {
    let (Ok(a), Ok(b)) = (yaml::parse(yaml_a), yaml::parse(yaml_b)) else {
        return Vec::new();
    };
    let (sa, sb) = (section(&a, kind), section(&b, kind));
    sa.iter()
        .filter_map(|(name, fa)| {
            let (_, fb) = sb.iter().find(|(n, _)| n == name)?;
            let d = differences(fa, fb);
            (!d.is_empty()).then(|| (name.clone(), d))
        })
        .collect()
}

/// The workloads, variants and kernels of run B that run A defines differently (by content),
/// and a warning for each saying how.
#[derive(Debug, Default, PartialEq)]
pub struct Unlike {
    pub workloads: Vec<String>,
    pub variants: Vec<String>,
    pub kernels: Vec<String>,
    pub warnings: Vec<String>,
}

/// Compares two runs' definitions: `a` and `b` are (run id, scenario, its YAML text).
pub fn unlike(a: (i64, &Scenario, &str), b: (i64, &Scenario, &str)) -> Unlike {
    let ((run_a, sa, ya), (run_b, sb, yb)) = (a, b);
    let mut out = Unlike {
        workloads: sb
            .workloads
            .iter()
            .filter(|w| sa.workload(&w.name).is_some_and(|x| x.kind != w.kind))
            .map(|w| w.name.clone())
            .collect(),
        variants: sb
            .variants
            .iter()
            .filter(|v| sa.variant(&v.name).is_some_and(|x| x != *v))
            .map(|v| v.name.clone())
            .collect(),
        kernels: sb
            .kernels
            .iter()
            .filter(|k| {
                sa.kernel(&k.name)
                    .is_some_and(|x| x.source != k.source || x.cmdline != k.cmdline)
            })
            .map(|k| k.name.clone())
            .collect(),
        warnings: Vec::new(),
    };
    for (kind, names) in [
        ("workloads", &out.workloads),
        ("variants", &out.variants),
        ("kernels", &out.kernels),
    ] {
        let described = definition_changes(ya, yb, kind);
        for name in names {
            let how = described
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, d)| d.join(", "))
                .unwrap_or_else(|| "defined differently".into());
            out.warnings.push(format!(
                "{kind} `{name}` differs between run {run_a} and run {run_b} ({how}): not compared"
            ));
        }
    }
    out
}

/// One aspect of one kernel's environment in two runs compared: what run A and run B had.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EnvAspect {
    pub kernel: String,
    pub what: &'static str,
    pub a: Vec<String>,
    pub b: Vec<String>,
    pub same: bool,
    /// A difference here is also a warning of the comparison.
    #[serde(skip)]
    pub warned: bool,
}

/// Every aspect of the environment of each kernel both runs have (machine and boots,
/// kernel command line, build and config, tool versions, tuning, settings kreg changed,
/// cgroups and what perf could not count), each with both runs' lines and whether they are
/// the same (as sets: the order lines were seen in does not matter).
pub fn environment_aspects(prov_a: &[KernelProvenance], prov_b: &[KernelProvenance]) -> Vec<EnvAspect> {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for pa in prov_a {
        let Some(pb) = prov_b.iter().find(|p| p.kernel == pa.kernel) else {
            continue;
        };
        // The knobs changed, whether or not they were put back at the end.
        let changes = |p: &KernelProvenance| sorted(&p.settings.iter().map(|s| s.change()).collect::<Vec<_>>());
        for (what, a, b, same, warned) in [
            ("boots", pa.boot_lines(), pb.boot_lines(), None, true),
            ("kernel command lines", pa.cmdlines(), pb.cmdlines(), None, true),
            (
                "kernel build and config",
                pa.build_lines(),
                pb.build_lines(),
                None,
                false,
            ),
            ("tool versions", pa.tool_lines(), pb.tool_lines(), None, true),
            ("tuning", pa.tuning_lines(), pb.tuning_lines(), None, false),
            (
                "settings kreg changed",
                pa.setting_lines(),
                pb.setting_lines(),
                Some(changes(pa) == changes(pb)),
                true,
            ),
            ("cgroups and perf", pa.setup_lines(), pb.setup_lines(), None, false),
        ] {
            let same = same.unwrap_or_else(|| sorted(&a) == sorted(&b));
            out.push(EnvAspect {
                kernel: pa.kernel.clone(),
                what,
                a,
                b,
                same,
                warned,
            });
        }
    }
    out
}

/// The differences a comparison of two runs warns about, one line each, per kernel in both
/// runs' provenance (A's first): boots, command lines, tool versions and the settings kreg
/// changed ("restored" aside).
pub fn environment_changes(prov_a: &[KernelProvenance], prov_b: &[KernelProvenance]) -> Vec<String> {
    environment_aspects(prov_a, prov_b)
        .into_iter()
        .filter(|e| e.warned && !e.same)
        .map(|e| {
            format!(
                "kernel {}: {} differ between the runs: {} | {}",
                e.kernel,
                e.what,
                e.a.join("; "),
                e.b.join("; ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_changes_name_what_differs_per_kernel() {
        let prov = |kernel: &str, release: &str, version: &str, restored: Option<bool>| KernelProvenance {
            kernel: kernel.into(),
            boots: vec![crate::results::BootSeen {
                host: "sut".into(),
                release: release.into(),
                cpus: 2,
                cpu_model: "QEMU".into(),
                cmdline: "quiet".into(),
            }],
            tools: vec![crate::results::ToolVersion {
                tool: "hackbench@sut".into(),
                version: version.into(),
            }],
            settings: restored
                .map(|restored| crate::results::SettingChange {
                    host: "sut".into(),
                    name: "kernel.sched_schedstats".into(),
                    before: "0".into(),
                    after: "1".into(),
                    restored,
                    knobs: 1,
                })
                .into_iter()
                .collect(),
            ..Default::default()
        };
        // k1: another tool version; whether a setting was put back is no difference.
        // k2: another release, and a setting changed in one run only.
        let a = [
            prov("k1", "6.1.0-1", "2.0", Some(true)),
            prov("k2", "6.12.1", "2.0", Some(false)),
        ];
        let b = [
            prov("k1", "6.1.0-1", "2.1", Some(false)),
            prov("k2", "6.12.2", "2.0", None),
            prov("k3", "6.13", "x", None),
        ];
        assert_eq!(
            environment_changes(&a, &b),
            [
                "kernel k1: tool versions differ between the runs: hackbench@sut 2.0 | hackbench@sut 2.1",
                "kernel k2: boots differ between the runs: sut: 6.12.1, 2 CPUs | sut: 6.12.2, 2 CPUs",
                "kernel k2: settings kreg changed differ between the runs: sut: kernel.sched_schedstats 0 → 1, NOT restored | ",
            ]
        );
        assert!(environment_changes(&a, &a).is_empty());
    }

    #[test]
    fn failed_cells_group_jobs_and_keep_distinct_reasons() {
        let job = |k: &str, failed: bool, e: Option<&str>| JobSummary {
            kernel: k.into(),
            variant: "v".into(),
            workload: "w".into(),
            failed,
            error: e.map(str::to_string),
            class: None,
        };
        let cells = failed_cells(&[
            job("a", false, None),
            job("b", true, Some("boot failed: no bzImage")),
            job("b", true, Some("boot failed:  no bzImage")),
            job("b", false, None),
        ]);
        assert_eq!(cells.len(), 1);
        assert_eq!(
            cells[0].line(),
            "kernel b, variant v, workload w: 2 of 3 jobs failed: boot failed: no bzImage"
        );
        // The lab's failures are missing measurements, apart from the kernel's.
        use crate::failure::FailureClass::*;
        let classed = |k: &str, e: &str, c| JobSummary {
            class: Some(c),
            ..job(k, true, Some(e))
        };
        let cells = failed_cells(&[
            classed("a", "the agent went silent", Infrastructure),
            job("a", false, None),
            classed("b", "the kernel panicked", Kernel),
            classed("b", "connection lost", Infrastructure),
        ]);
        assert_eq!(
            cells[0].line(),
            "kernel a, variant v, workload w: 1 of 2 jobs missing, the lab failed: the agent went silent"
        );
        assert_eq!(cells[0].failed_line(), None);
        assert_eq!(
            cells[1].line(),
            "kernel b, variant v, workload w: 1 of 2 jobs failed: the kernel panicked; 1 of 2 jobs missing, the lab failed: connection lost"
        );
        let sections = failure_sections(&cells);
        assert_eq!(sections.len(), 2);
        assert_eq!((sections[0].0, sections[0].1.len()), ("failed jobs", 1));
        assert_eq!((sections[1].0, sections[1].1.len()), (MISSING_HEADING, 2));
    }

    #[test]
    fn definitions_are_compared_by_content() {
        let a = "name: s\nworkloads:\n  - { name: hb, kind: hackbench, loops: 200 }\n  - { name: same, kind: hackbench }\nvariants: [ {name: v, features: [A]} ]\n";
        let b = "name: s\nworkloads:\n  - { name: hb, kind: hackbench, loops: 2000, pipe: true }\n  - { name: same, kind: hackbench }\nvariants: [ {name: v, features: [A, B]} ]\n";
        assert_eq!(
            definition_changes(a, b, "workloads"),
            vec![(
                "hb".to_string(),
                vec!["loops: 200 → 2000".to_string(), "pipe: (absent) → true".to_string()]
            )]
        );
        assert_eq!(
            definition_changes(a, b, "variants"),
            vec![("v".to_string(), vec!["features: [A] → [A, B]".to_string()])]
        );
    }
}
