//! Whether a `perf sched stats` report is whole: every field its schedstat version prints,
//! in every section, and a section for every CPU and every domain level the report itself
//! names. A report cut anywhere (inside a section or at a section's border) or reported on
//! a machine with fewer CPUs than it was recorded on fails here, saying what is missing.

use crate::Error;
use std::collections::BTreeSet;

use super::{section_name, Section};
use crate::parse::{perr, ParseError};
use crate::schedstat::{domain_fields, CPU_FIELDS};

const TOOL: &str = "perf sched stats";

/// A domain section's layout: the schedstat versions that print it, and its counters in
/// perf's names (`busy_lb_count`), in order.
struct Layout {
    versions: &'static str,
    counters: Vec<String>,
    types: [&'static str; 3],
}

fn layouts() -> Vec<Layout> {
    let perf = |v: u32| -> Vec<String> { domain_fields(v).iter().map(|f| f.replace('.', "_")).collect() };
    vec![
        Layout {
            versions: "15",
            counters: perf(15),
            types: ["idle", "busy", "newidle"],
        },
        Layout {
            versions: "16",
            counters: perf(16),
            types: ["busy", "idle", "newidle"],
        },
        Layout {
            versions: "17",
            counters: perf(17),
            types: ["busy", "idle", "newidle"],
        },
    ]
}

fn counters(s: &Section) -> Vec<&str> {
    s.fields
        .iter()
        .filter(|f| !f.derived)
        .map(|f| f.name.as_str())
        .collect()
}

/// A CPU's own section has exactly the nine counters every version prints, in order.
fn cpu_section(s: &Section) -> Result<(), Error> {
    let got = counters(s);
    if got != CPU_FIELDS {
        let missing: Vec<&str> = CPU_FIELDS.iter().copied().filter(|f| !got.contains(f)).collect();
        return Err(Error::unreadable(format!(
            "section `{}` has {} of the {} counters every schedstat version prints{} (the report is cut short or mixed)",
            section_name(s),
            got.len(),
            CPU_FIELDS.len(),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; missing {}", missing.join(", "))
            }
        )));
    }
    Ok(())
}

/// A domain section has one version's counters, in order, and perf's two derived figures
/// per load-balance type (`*busy_lb_success_count`, `*busy_lb_avg_…`).
fn domain_section(s: &Section) -> Result<&'static str, Error> {
    let got = counters(s);
    let all = layouts();
    let Some(layout) = all.iter().find(|l| l.counters == got) else {
        let nearest = all
            .iter()
            .max_by_key(|l| l.counters.iter().zip(&got).take_while(|(a, b)| a == b).count())
            .expect("three layouts");
        let at = nearest.counters.iter().zip(&got).take_while(|(a, b)| a == b).count();
        let what = match nearest.counters.get(at) {
            Some(f) => format!("{f} is missing after {} counter(s)", at),
            None => format!(
                "{} counters where schedstat v{} has {}",
                got.len(),
                nearest.versions,
                at
            ),
        };
        return Err(Error::unreadable(format!(
            "section `{}` is not a whole domain section of schedstat v15, v16 or v17: {what} (the report is cut short or mixed)",
            section_name(s)
        )));
    };
    for t in layout.types {
        let derived: Vec<&str> = s
            .fields
            .iter()
            .filter(|f| f.derived && f.name.starts_with(&format!("{t}_")))
            .map(|f| f.name.as_str())
            .collect();
        let ok = derived.len() == 2
            && derived[0] == format!("{t}_lb_success_count")
            && derived[1].starts_with(&format!("{t}_lb_avg_"));
        if !ok {
            return Err(Error::unreadable(format!(
                "section `{}` lacks perf's derived figures of {t} load balancing ({}): the report is cut short or mixed",
                section_name(s),
                if derived.is_empty() { "none".into() } else { derived.join(", ") }
            )));
        }
    }
    Ok(layout.versions)
}

/// Every section's fields are whole and of one schedstat version; every CPU the domains
/// span has its own section and one per domain level of the summary, named alike.
pub(super) fn check(sections: &[Section], sides: usize) -> Result<(), ParseError> {
    let fail = |m: String| perr(TOOL, m);
    let mut version = None;
    for s in sections {
        if s.domain.is_none() {
            cpu_section(s).map_err(|e| fail(e.to_string()))?;
            continue;
        }
        let v = domain_section(s).map_err(|e| fail(e.to_string()))?;
        match version {
            None => version = Some(v),
            Some(w) if w != v => {
                return Err(fail(format!(
                    "section `{}` is of schedstat v{v}, earlier ones of v{w}: two reports mixed",
                    section_name(s)
                )))
            }
            Some(_) => {}
        }
    }
    // A diff prints the summary alone: there are no CPUs to count.
    match sides {
        1 => cpus(sections),
        _ => Ok(()),
    }
}

/// The domain levels of the summary, in order, and each CPU's: equal for every CPU the
/// domains span, and every such CPU there.
fn cpus(sections: &[Section]) -> Result<(), ParseError> {
    let fail = |m: String| perr(TOOL, m);
    let levels: Vec<&str> = sections
        .iter()
        .filter(|s| s.cpu.is_none())
        .filter_map(|s| s.domain.as_deref())
        .collect();
    let mut present = BTreeSet::new();
    let mut spanned = BTreeSet::new();
    for s in sections.iter().filter(|s| s.cpu.is_some() && s.domain.is_some()) {
        let Some(list) = &s.domain_cpus else {
            return Err(fail(format!("section `{}` has no DOMAIN_CPUS", section_name(s))));
        };
        let cpus = crate::tuning::resolve::parse_cpus(list)
            .ok_or_else(|| fail(format!("section `{}`: `{list}` is not a CPU list", section_name(s))))?;
        spanned.extend(cpus);
    }
    for s in sections.iter().filter(|s| s.cpu.is_some()) {
        present.insert(s.cpu.expect("filtered"));
    }
    if present.is_empty() {
        return Err(fail(
            "the report has the summary but no CPU's own section (it is cut short)".into(),
        ));
    }
    if !levels.is_empty() && spanned.is_empty() {
        return Err(fail(format!(
            "the summary has {} domain level(s) but no CPU's domain section is there (the report is cut short)",
            levels.len()
        )));
    }
    let missing: Vec<String> = spanned.difference(&present).map(u32::to_string).collect();
    if !missing.is_empty() {
        return Err(fail(format!(
            "the domains span CPU(s) {} but the report has no section for CPU {} (cut short, or reported on a machine with fewer CPUs than it was recorded on: report where it was recorded)",
            crate::tuning::cpu_list(&spanned.iter().copied().collect::<Vec<_>>()),
            missing.join(", ")
        )));
    }
    for cpu in &present {
        let own = sections
            .iter()
            .filter(|s| s.cpu == Some(*cpu) && s.domain.is_none())
            .count();
        if own != 1 {
            return Err(fail(format!(
                "CPU {cpu} has {own} sections of its own counters where a report has one"
            )));
        }
        let mine: Vec<&str> = sections
            .iter()
            .filter(|s| s.cpu == Some(*cpu))
            .filter_map(|s| s.domain.as_deref())
            .collect();
        // A CPU in no domain (isolated from load balancing) has none.
        if mine != levels && (!mine.is_empty() || spanned.contains(cpu)) {
            return Err(fail(format!(
                "CPU {cpu} has domain section(s) [{}] where the summary has [{}] (the report is cut short or mixed)",
                mine.join(", "),
                levels.join(", ")
            )));
        }
    }
    Ok(())
}
