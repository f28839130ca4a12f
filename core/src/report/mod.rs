//! `kreg report`: per workload metric, one row per kernel × variant with the summary
//! statistics and, against the baseline kernel with the same variant, the change, the test
//! behind it and a verdict. The report controls false discoveries across all its rows
//! (Benjamini–Hochberg). Pure: samples in, tables out; `render` writes them.

use crate::Error;
pub mod blocks;
mod compact;
mod mail;
mod notes;
mod provenance;
pub mod provisional;
mod render;
pub mod sched_stats;
mod shapes;
mod table;
pub mod warmup;

pub use notes::{
    definition_changes, environment_aspects, environment_changes, failed_cells, failure_sections, unlike, EnvAspect,
    FailedCell, JobSummary, Unlike, MISSING_HEADING,
};

/// The formats a report is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
    /// Plain text for a mail: no line over 80 columns.
    Mail,
    /// Kernels × runtime parameters, "baseline" rows, the change per kernel (seed 004's).
    KernelTable,
    /// `base±sd%  head±sd%  change` per workload (seed 002's).
    BaseHead,
    /// mmtests' compare-kernels: `Amean`/`Hmean` with `(x.xx%)`, changes marked.
    CompareKernels,
    /// `tip[pct imp](CV)  patch[pct imp](CV)` blocks.
    TipPatch,
}

impl Format {
    /// Every format by the name the command line and the dashboard take.
    pub const NAMES: [(&'static str, Format); 9] = [
        ("text", Format::Text),
        ("markdown", Format::Markdown),
        ("csv", Format::Csv),
        ("json", Format::Json),
        ("mail", Format::Mail),
        ("kernel-table", Format::KernelTable),
        ("base-head", Format::BaseHead),
        ("compare-kernels", Format::CompareKernels),
        ("tip-patch", Format::TipPatch),
    ];

    /// The formats in the shapes kernel threads post, plain text of at most 80 columns.
    pub fn is_shape(self) -> bool {
        matches!(
            self,
            Format::KernelTable | Format::BaseHead | Format::CompareKernels | Format::TipPatch
        )
    }

    /// The file the dashboard serves this format as (`report.md`, `report-mail.txt`,
    /// `report-tip-patch.txt`).
    pub fn download_file(self) -> String {
        match self {
            Format::Markdown => "report.md".into(),
            Format::Csv => "report.csv".into(),
            Format::Json => "report.json".into(),
            Format::Text => "report.txt".into(),
            f => format!("report-{}.txt", f.name()),
        }
    }

    /// The format a download's file name asks for.
    pub fn from_download(file: &str) -> Option<Format> {
        Format::NAMES
            .iter()
            .map(|(_, f)| *f)
            .find(|f| f.download_file() == file)
    }

    pub fn name(self) -> &'static str {
        Format::NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .expect("every format is named")
    }
}

impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Format, Error> {
        Format::NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::NAMES.iter().map(|(n, _)| *n).collect();
                Error::invalid(format!("{s:?} is not a format ({})", names.join(", ")))
            })
    }
}

/// A report: its tables and everything said around them. One value, four formats.
pub struct Report<'a> {
    pub run_id: i64,
    pub scenario: &'a Scenario,
    pub baseline: &'a Baseline,
    pub tables: &'a [MetricTable],
    pub settings: &'a Settings,
    pub prov: &'a [KernelProvenance],
    /// The caller's warnings (e.g. what differs between two compared runs).
    pub warnings: Vec<String>,
    /// Cells whose jobs failed: every format lists them with their reasons.
    pub failed: Vec<FailedCell>,
    /// Box-drawing characters in text tables (for a terminal); plain ASCII otherwise.
    pub boxes: bool,
    /// The `perf sched stats` section, when jobs recorded it.
    pub sched_stats: Option<&'a sched_stats::SchedStats>,
    /// Where the run stands when it has not finished: its verdicts are provisional.
    pub provisional: Option<&'a provisional::Provisional>,
}

impl Report<'_> {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => compact::render_text(self),
            Format::Markdown => compact::render_markdown(self),
            Format::Csv => render::render_csv(self),
            Format::Json => render::render_json(self),
            Format::Mail => mail::render_mail(self),
            Format::KernelTable => shapes::kernel_table(self),
            Format::BaseHead => shapes::base_head(self),
            Format::CompareKernels => shapes::compare_kernels(self),
            Format::TipPatch => shapes::tip_patch(self),
        }
    }

    /// What the reader must see before any number: environments that differ, settings not
    /// put back, the caller's warnings, and failed jobs.
    pub fn warning_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.provisional.iter().map(|p| p.line()).collect();
        out.extend(
            provenance_lines(self.prov, self.running())
                .into_iter()
                .filter(Line::is_warning)
                .map(|l| l.to_string()),
        );
        out.extend(self.warnings.iter().map(|w| format!("WARNING: {w}")));
        let cells = |n: fn(&FailedCell) -> usize| {
            let with: Vec<usize> = self.failed.iter().map(n).filter(|n| *n > 0).collect();
            (with.iter().sum::<usize>(), with.len())
        };
        let (n, c) = cells(|c| c.failed);
        if n > 0 {
            out.push(format!(
                "WARNING: {n} job(s) failed in {c} kernel/variant/workload cell(s); their samples are missing from the tables (failed jobs are listed below)"
            ));
        }
        let (n, c) = cells(|c| c.missing);
        if n > 0 {
            out.push(format!(
                "WARNING: {n} measurement(s) missing in {c} kernel/variant/workload cell(s): the lab failed (infrastructure), so they are no results, neither a failure of the kernel nor of the workload (listed below)"
            ));
        }
        out
    }

    /// Whether the run is still going: what kreg changed is in effect, not left behind.
    fn running(&self) -> bool {
        self.provisional
            .is_some_and(|p| p.state == crate::plan::RunState::Running)
    }

    /// Provenance lines that are not warnings.
    pub fn info_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = provenance_lines(self.prov, self.running())
            .into_iter()
            .filter(|l| !l.is_warning())
            .map(|l| l.to_string())
            .collect();
        out.extend(self.machines_line());
        out
    }

    /// Said when the run's samples come from several machines (a run spread over a fleet's
    /// pairs): how rows were compared.
    fn machines_line(&self) -> Option<String> {
        let all = self
            .tables
            .iter()
            .flat_map(|t| t.rows.iter().flat_map(|r| r.machines.iter()));
        let machines = blocks::machines_of(all);
        (machines.len() > 1).then(|| {
            format!(
                "machines: {} ({}): every row is compared with its baseline within each machine (the machine a block: each machine's values shifted by its baseline level's difference from the overall one), never pooled across machines as replicates",
                machines.len(),
                machines.join(", ")
            )
        })
    }
}

use crate::results::KernelProvenance;
use crate::scenario::Scenario;
use crate::stats::Settings;

pub use table::{compare_runs, comparisons, default_baseline, next_round, tables, Baseline, MetricTable, Row};

pub fn fmt_value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The command line without what names the image itself.
fn comparable_cmdline(c: &str) -> String {
    c.split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A line of a report's header or of a section's notes: a warning the reader must see
/// before any number, or a note. Shown as text, a warning starts "WARNING: ".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Warning(String),
    Note(String),
}

impl Line {
    pub fn is_warning(&self) -> bool {
        matches!(self, Line::Warning(_))
    }
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Line::Warning(w) => write!(f, "WARNING: {w}"),
            Line::Note(n) => f.write_str(n),
        }
    }
}

/// Provenance lines for the top of a report, warnings first: compared sides that ran on
/// other CPU models or with other kernel command lines.
pub fn provenance_lines(prov: &[KernelProvenance], running: bool) -> Vec<Line> {
    let mut out = Vec::new();
    let models: Vec<String> = {
        let mut m: Vec<String> = prov
            .iter()
            .flat_map(|p| p.cpu_models())
            .filter(|m| !m.is_empty())
            .collect();
        m.sort();
        m.dedup();
        m
    };
    if models.len() > 1 {
        out.push(Line::Warning(format!(
            "the kernels ran on different CPU models: {}",
            models.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" | ")
        )));
    }
    let cmdlines: Vec<String> = {
        let mut c: Vec<String> = prov
            .iter()
            .flat_map(|p| p.cmdlines())
            .map(|c| comparable_cmdline(&c))
            .collect();
        c.sort();
        c.dedup();
        c
    };
    if cmdlines.len() > 1 {
        out.push(Line::Warning(format!(
            "the kernels booted with different command lines: {}",
            cmdlines.join(" | ")
        )));
    }
    let not_restored: Vec<String> = prov
        .iter()
        .flat_map(|p| &p.settings)
        .filter(|s| !s.restored)
        .map(|s| s.to_string())
        .collect();
    if !not_restored.is_empty() && !running {
        out.push(Line::Warning(format!(
            "settings kreg changed and could not put back yet (`kreg resume` or a reboot does): {}",
            not_restored.join("; ")
        )));
    }
    out.push(Line::Note(tuning_sentence(prov).into()));
    for p in prov {
        let mut parts = vec![format!("kernel {}: {}", p.kernel, p.boot_lines().join("; "))];
        if !p.tuning.is_empty() {
            parts.push(format!("tuning {}", p.tuning_lines().join(" | ")));
        }
        if !p.setup.is_empty() {
            parts.push(p.setup_lines().join(" | "));
        }
        if !p.settings.is_empty() {
            let settings = if running {
                p.setting_lines_running()
            } else {
                p.setting_lines()
            };
            parts.push(format!("settings changed {}", settings.join(", ")));
        }
        if p.no_schedstat {
            parts.push("no /proc/schedstat on the SUT: no scheduler statistics".to_string());
        }
        if !p.boots.is_empty() {
            parts.push(format!("CPU {}", p.cpu_models().join(" / ")));
        }
        if !p.builds.is_empty() {
            parts.push(format!("built {}", p.build_lines().join(", ")));
        }
        if !p.tools.is_empty() {
            parts.push(format!("tools {}", p.tool_lines().join(", ")));
        }
        out.push(Line::Note(parts.join("; ")));
    }
    out
}

/// What the report says about tuning before the per-kernel lines.
fn tuning_sentence(prov: &[KernelProvenance]) -> &'static str {
    if prov.iter().any(|p| !p.tuning.is_empty()) {
        "tuning: applied by kreg as listed per kernel (read back before every job), put back after each kernel's jobs; other settings as the hosts had them"
    } else if prov.iter().any(|p| !p.settings.is_empty()) {
        "tuning: none applied by kreg (governor, turbo and sysctls as the hosts had them) but for the settings listed per kernel, which kreg changed for the run and puts back"
    } else {
        "tuning: none applied by kreg (governor, turbo and sysctls as the hosts had them)"
    }
}

#[cfg(test)]
mod tests;
