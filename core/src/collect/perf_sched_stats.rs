//! `perf sched stats report` (perf 6.19 and later): what it prints, read back into figures.
//!
//! The report has a section per CPU and per domain of each CPU, each preceded by the same
//! sections for all CPUs together (`CPU: <ALL CPUS SUMMARY>`, where perf prints the mean
//! over CPUs, rounded down). A field line is `NAME : VALUE`, followed by a percentage in
//! parentheses or a mean interval in jiffies between dollar signs; a line starting with `*`
//! is a figure perf derived from others. `perf sched stats diff` prints the same with two
//! values (`V1, V2 | CHANGE% |`): [`parse`] reads both forms, and [`metrics`] the report of
//! one recording.

use crate::parse::{perr, plausible, Metric, MetricKind, ParseError};
use crate::Error;

const TOOL: &str = "perf sched stats";

/// One `CPU: …` section: the summary or one CPU, its own counters or one of its domains.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// `None` for `<ALL CPUS SUMMARY>`.
    pub cpu: Option<u32>,
    /// The domain's name (`SMT`, `MC`, `PKG`, `NUMA`), or its level when the kernel gives
    /// none; `None` for the CPU's own counters.
    pub domain: Option<String>,
    /// The CPUs of the domain, as perf prints them (`0-3`); per-CPU domain sections only.
    pub domain_cpus: Option<String>,
    pub fields: Vec<Field>,
}

/// A field line: its name, whether perf derived it, and a value per recording (two in a diff).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub derived: bool,
    pub values: Vec<f64>,
}

/// A whole report (one recording) or diff (two).
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `Time elapsed (in jiffies)`, per recording.
    pub elapsed_jiffies: Vec<u64>,
    pub sections: Vec<Section>,
}

impl Report {
    /// How many recordings the text compares: 1 for a report, 2 for a diff.
    pub fn sides(&self) -> usize {
        self.elapsed_jiffies.len()
    }

    /// The summary sections: all CPUs' own counters first, then one per domain level.
    pub fn summary(&self) -> impl Iterator<Item = &Section> {
        self.sections.iter().filter(|s| s.cpu.is_none())
    }

    /// One CPU's sections.
    pub fn cpu(&self, cpu: u32) -> impl Iterator<Item = &Section> {
        self.sections.iter().filter(move |s| s.cpu == Some(cpu))
    }
}

/// Reads a report or a diff. Anything else, or a report cut short, is an error naming the
/// line; a value that is no number is never read as zero.
pub fn parse(text: &str) -> Result<Report, ParseError> {
    let mut elapsed: Option<Vec<u64>> = None;
    let mut sections: Vec<Section> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let at = |m: Error| perr(TOOL, format!("line {}: {m}: {:?}", n + 1, line));
        if let Some(rest) = line.strip_prefix("CPU: ") {
            sections.push(section_header(rest).map_err(at)?);
            continue;
        }
        if let Some(rest) = line.strip_prefix("Time elapsed (in jiffies)") {
            let values = values_after_colon(rest).map_err(at)?;
            let whole = values
                .iter()
                .map(|v| (v.fract() == 0.0).then_some(*v as u64))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| at(Error::unreadable("the elapsed time is not a whole number of jiffies")))?;
            elapsed = Some(whole);
            continue;
        }
        let Some(section) = sections.last_mut() else {
            continue; // the legend before the first section
        };
        if skipped(line) {
            continue;
        }
        let (derived, body) = match line.strip_prefix('*') {
            Some(b) => (true, b),
            None => (false, line),
        };
        let Some((name, rest)) = body.split_once(':') else {
            return Err(at(Error::unreadable("not a field line (NAME : VALUE)")));
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(at(Error::unreadable(
                "a field without its name (perf printed descriptions: kreg reads the report without --verbose)",
            )));
        }
        let values = values_after_colon(&format!(":{rest}")).map_err(at)?;
        section.fields.push(Field {
            name: name.to_string(),
            derived,
            values,
        });
    }
    let elapsed = elapsed.ok_or_else(|| {
        perr(
            TOOL,
            "no `Time elapsed (in jiffies)` line: this is not the output of `perf sched stats report` or `diff`",
        )
    })?;
    check(&elapsed, &sections)?;
    whole::check(&sections, elapsed.len())?;
    Ok(Report {
        elapsed_jiffies: elapsed,
        sections,
    })
}

/// Separators, column headers and rulers with a title (`--- <Category busy> ---`,
/// `--- <Wakeup Info> ---`) inside a section.
fn skipped(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with("DESC") || (t.starts_with("---") && t.ends_with("---"))
}

/// `<ALL CPUS SUMMARY>`, `N`, `<ALL CPUS SUMMARY> | DOMAIN: D`, `N | DOMAIN: D | DOMAIN_CPUS: L`.
fn section_header(rest: &str) -> Result<Section, Error> {
    let mut parts = rest.split('|').map(str::trim);
    let who = parts.next().unwrap_or("");
    let cpu = if who == "<ALL CPUS SUMMARY>" {
        None
    } else {
        Some(
            who.parse::<u32>()
                .map_err(|_| Error::unreadable(format!("`{who}` is neither a CPU number nor <ALL CPUS SUMMARY>")))?,
        )
    };
    let mut domain = None;
    let mut domain_cpus = None;
    for part in parts {
        if let Some(d) = part.strip_prefix("DOMAIN:") {
            domain = Some(d.trim().to_string());
        } else if let Some(c) = part.strip_prefix("DOMAIN_CPUS:") {
            domain_cpus = Some(c.trim().to_string());
        } else {
            return Err(Error::unreadable(format!("unknown part `{part}` in a section header")));
        }
    }
    if domain.as_deref() == Some("") {
        return Err(Error::unreadable("a domain without its name or level"));
    }
    Ok(Section {
        cpu,
        domain,
        domain_cpus,
        fields: Vec::new(),
    })
}

/// The value(s) after `:` and before what perf appends (`( P% )`, `$ J $`, `| C% |`).
fn values_after_colon(rest: &str) -> Result<Vec<f64>, Error> {
    let rest = rest.trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or(Error::unreadable("no `:` before the value"))?;
    let end = rest.find(['(', '$', '|']).unwrap_or(rest.len());
    let figures = &rest[..end];
    let values = figures
        .split(',')
        .map(|v| {
            let v = v.trim();
            v.parse::<f64>()
                .ok()
                .filter(|x| plausible(*x))
                .ok_or_else(|| Error::unreadable(format!("`{v}` is not a count")))
        })
        .collect::<Result<Vec<f64>, Error>>()?;
    if values.len() > 2 {
        return Err(Error::unreadable(format!(
            "{} values where a report has one and a diff two",
            values.len()
        )));
    }
    Ok(values)
}

/// Every field has a value per recording; the summary's own section is there and has fields;
/// every section has fields (a report cut short ends in an empty one).
fn check(elapsed: &[u64], sections: &[Section]) -> Result<(), ParseError> {
    let sides = elapsed.len();
    if !sections.iter().any(|s| s.cpu.is_none() && s.domain.is_none()) {
        return Err(perr(TOOL, "no `CPU: <ALL CPUS SUMMARY>` section"));
    }
    let names = |s: &Section| s.fields.iter().map(|f| f.name.clone()).collect::<Vec<String>>();
    for s in sections {
        let name = section_name(s);
        if s.fields.is_empty() {
            return Err(perr(
                TOOL,
                format!("section `{name}` has no fields (the report is cut short)"),
            ));
        }
        // A CPU's sections have the fields of the summary's of the same kind.
        let model = sections
            .iter()
            .find(|m| m.cpu.is_none() && m.domain.is_some() == s.domain.is_some())
            .expect("the summary's own section is there");
        if s.domain.is_none() && names(s) != names(model) || s.domain.is_some() && s.fields.len() != model.fields.len()
        {
            return Err(perr(
                TOOL,
                format!(
                    "section `{name}` has {} fields where the summary's has {} (the report is cut short or mixed)",
                    s.fields.len(),
                    model.fields.len()
                ),
            ));
        }
        if let Some(f) = s.fields.iter().find(|f| f.values.len() != sides) {
            return Err(perr(
                TOOL,
                format!(
                    "section `{name}`, field {}: {} value(s) where the elapsed time has {sides}",
                    f.name,
                    f.values.len()
                ),
            ));
        }
    }
    Ok(())
}

/// A section as perf heads it, without the `CPU: `.
pub fn section_name(s: &Section) -> String {
    let who = s
        .cpu
        .map(|c| c.to_string())
        .unwrap_or_else(|| "<ALL CPUS SUMMARY>".into());
    match &s.domain {
        Some(d) => format!("{who} | DOMAIN: {d}"),
        None => who,
    }
}

/// The metric name of a summary field: `sched_stats_sched_count` for the CPUs' own
/// counters, `sched_stats_mc_busy_lb_count` for a domain level's (`domain1_…` when the
/// kernel names no domains).
pub fn metric_name(domain: Option<&str>, field: &str) -> String {
    match domain {
        None => format!("sched_stats_{field}"),
        Some(d) if d.chars().all(|c| c.is_ascii_digit()) => format!("sched_stats_domain{d}_{field}"),
        Some(d) => format!("sched_stats_{}_{field}", d.to_ascii_lowercase()),
    }
}

/// Whether a stored metric is one of [`metrics`]'.
pub fn is_metric(name: &str) -> bool {
    name.starts_with("sched_stats_")
}

/// The summary's figures of one recording as metrics: counts per CPU (perf's mean over
/// CPUs), the derived means as means. A diff (two recordings) is refused: its figures
/// belong to two jobs.
pub fn metrics(report: &Report) -> Result<Vec<Metric>, ParseError> {
    if report.sides() != 1 {
        return Err(perr(
            TOOL,
            "this is `perf sched stats diff` output (two recordings): kreg reads the report of one",
        ));
    }
    let mut out = Vec::new();
    for s in report.summary() {
        for f in &s.fields {
            let kind = if f.derived && f.name.contains("avg") {
                MetricKind::Mean
            } else {
                MetricKind::Count
            };
            let unit = match f.name.as_str() {
                "rq_cpu_time" | "run_delay" => "ns",
                _ => "",
            };
            out.push(Metric::new(
                metric_name(s.domain.as_deref(), &f.name),
                f.values[0],
                unit,
                false,
                kind,
            ));
        }
    }
    Ok(out)
}

/// One counter both kreg's /proc/schedstat delta and perf's report have, on one CPU (and
/// one of its domains).
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    pub cpu: u32,
    /// The domain's level (`None`: the CPU's own counters).
    pub domain: Option<u32>,
    /// perf's name (`sched_count`, `busy_lb_count`).
    pub field: String,
    pub kreg: u64,
    pub perf: u64,
}

impl Compared {
    /// perf's recording lies inside kreg's snapshots: a counter can only have grown as
    /// much or more over kreg's window.
    pub fn agrees(&self) -> bool {
        self.perf <= self.kreg
    }
}

/// kreg's name of a perf field: `busy_lb_count` → `busy.lb_count`; the others as they are.
fn kreg_field(perf: &str) -> String {
    for t in ["busy", "idle", "newidle"] {
        if let Some(rest) = perf.strip_prefix(t).and_then(|r| r.strip_prefix('_')) {
            if rest.starts_with("lb_") {
                return format!("{t}.{rest}");
            }
        }
    }
    perf.to_string()
}

/// Every counter of every CPU and domain that both have (perf's derived figures are not
/// counters); an error when the two do not describe the same CPUs and domains. Domains pair
/// by level (their order on the CPU), and by name too where both name them.
pub fn cross_check(report: &Report, kreg: &crate::schedstat::Diff) -> Result<Vec<Compared>, Error> {
    if report.sides() != 1 {
        return Err(Error::unreadable("a diff is not the report of one recording"));
    }
    let domain_names = crate::schedstat::domain_fields(kreg.version);
    let mut out = Vec::new();
    for mine in &kreg.cpus {
        if report.cpu(mine.cpu).next().is_none() {
            return Err(Error::unreadable(format!(
                "kreg's snapshots have CPU {}, perf's report has no section for it",
                mine.cpu
            )));
        }
    }
    for s in report.sections.iter().filter(|s| s.cpu.is_some()) {
        let cpu = s.cpu.expect("filtered");
        let mine =
            kreg.cpus.iter().find(|c| c.cpu == cpu).ok_or_else(|| {
                Error::unreadable(format!("perf reports CPU {cpu}, kreg's snapshots have no such CPU"))
            })?;
        let perf_levels = report.cpu(cpu).filter(|x| x.domain.is_some()).count();
        if perf_levels != mine.domains.len() {
            return Err(Error::unreadable(format!(
                "CPU {cpu}: perf reports {perf_levels} domain level(s), kreg's snapshots have {}",
                mine.domains.len()
            )));
        }
        let (names, values, domain): (Vec<String>, Vec<u64>, Option<u32>) = match &s.domain {
            None => (
                crate::schedstat::CPU_FIELDS.iter().map(|f| f.to_string()).collect(),
                mine.values.to_vec(),
                None,
            ),
            Some(d) => {
                let level = report
                    .cpu(cpu)
                    .filter(|x| x.domain.is_some())
                    .position(|x| std::ptr::eq(x, s))
                    .expect("s is one of them");
                let found = &mine.domains[level];
                let same = match d.parse::<u32>() {
                    Ok(i) => i == found.index,
                    Err(_) => found.name.as_deref().is_none_or(|n| n.eq_ignore_ascii_case(d)),
                };
                if !same {
                    return Err(Error::unreadable(format!(
                        "CPU {cpu}: perf's domain level {level} is {d}, kreg's is {}",
                        found.name.clone().unwrap_or_else(|| format!("domain{}", found.index))
                    )));
                }
                (domain_names.clone(), found.values.clone(), Some(found.index))
            }
        };
        for f in s.fields.iter().filter(|f| !f.derived) {
            let Some(i) = names.iter().position(|n| *n == kreg_field(&f.name)) else {
                continue;
            };
            out.push(Compared {
                cpu,
                domain,
                field: f.name.clone(),
                kreg: values[i],
                perf: f.values[0] as u64,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
mod whole;
