//! `kreg report` and `kreg compare`: a run's tables (`kreg::view`) rendered for the terminal,
//! mail or a program.

use std::process::ExitCode;

use anyhow::Result;
use clap::builder::TypedValueParser as _;

use kreg::report::Format;
use kreg::{report, view};

/// `--format`: one of [`Format::NAMES`].
pub(super) fn format_arg() -> impl clap::builder::TypedValueParser<Value = Format> {
    clap::builder::PossibleValuesParser::new(Format::NAMES.map(|(n, _)| n))
        .map(|s| s.parse::<Format>().expect("a name of Format::NAMES"))
}

/// How a report is printed.
#[derive(clap::Args)]
pub struct StyleArgs {
    #[arg(long, value_parser = format_arg(), default_value = "text")]
    format: Format,
    /// Box-drawing characters in text tables (the default on a terminal; plain ASCII
    /// otherwise, for mail).
    #[arg(long)]
    boxes: bool,
}

/// `kreg report`'s arguments.
#[derive(clap::Args)]
pub struct ReportArgs {
    run: i64,
    /// Compare against this kernel instead of the scenario's baseline.
    #[arg(long, conflicts_with = "baseline_variant")]
    baseline: Option<String>,
    /// Compare variants instead: each row against this variant on the same kernel.
    #[arg(long)]
    baseline_variant: Option<String>,
    /// The false-alarm rate per row (after the multiple-comparison control, spent over
    /// the looks of an adaptive run).
    #[arg(long, default_value_t = kreg::stats::Settings::default().alpha)]
    alpha: f64,
    /// Smallest change worth calling one, in percent.
    #[arg(long, default_value_t = 2.0)]
    min_effect: f64,
    #[command(flatten)]
    style: StyleArgs,
}

/// `kreg compare`'s arguments.
#[derive(clap::Args)]
pub struct CompareArgs {
    run_a: i64,
    run_b: i64,
    #[command(flatten)]
    style: StyleArgs,
}

pub(super) fn boxes(asked: bool) -> bool {
    use std::io::IsTerminal;
    asked || std::io::stdout().is_terminal()
}

/// The rendered report on stdout. What hosts and tools said (a failed job's stderr, a
/// warning) may hold escape sequences: shown escaped, never sent to the terminal raw. JSON
/// escapes them itself.
pub(super) fn print(text: &str, format: Format) {
    let text = match format {
        Format::Json => std::borrow::Cow::Borrowed(text),
        _ => kreg::text::printable(text),
    };
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
}

/// `kreg compare A B`: B's rows against A's where the two runs define things alike.
pub async fn compare(cfg: &kreg::config::Config, a: &CompareArgs) -> Result<ExitCode> {
    let db = super::db::connect(cfg).await?;
    let loaded = view::load_compare(&db, a.run_a, a.run_b).await?;
    print(
        &loaded.report(boxes(a.style.boxes)).render(a.style.format),
        a.style.format,
    );
    Ok(ExitCode::SUCCESS)
}

/// `kreg report` with its settings checked.
pub async fn report(cfg: &kreg::config::Config, a: &ReportArgs) -> Result<ExitCode> {
    let baseline = match (&a.baseline, &a.baseline_variant) {
        (_, Some(v)) => Some(report::Baseline::Variant(v.clone())),
        (Some(k), None) => Some(report::Baseline::Kernel(k.clone())),
        (None, None) => None,
    };
    let settings = kreg::stats::Settings::checked(a.alpha, a.min_effect).map_err(anyhow::Error::msg)?;
    let db = super::db::connect(cfg).await?;
    let text = view::report_text(&db, a.run, baseline, &settings, a.style.format, boxes(a.style.boxes)).await?;
    print(&text, a.style.format);
    Ok(ExitCode::SUCCESS)
}
