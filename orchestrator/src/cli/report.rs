//! `kreg report` and `kreg compare`: a run's tables (`kreg::view`) rendered for the terminal,
//! mail or a program.

use std::process::ExitCode;

use anyhow::Result;
use sqlx::PgPool;

use kreg::{report, view};

use crate::Format;

/// A format, and whether text tables may use box-drawing characters (asked for, or
/// printing to a terminal).
pub type Style = (Format, bool);

fn boxes(asked: bool) -> bool {
    use std::io::IsTerminal;
    asked || std::io::stdout().is_terminal()
}

/// The rendered report on stdout. What hosts and tools said (a failed job's stderr, a
/// warning) may hold escape sequences: shown escaped, never sent to the terminal raw. JSON
/// escapes them itself.
fn print(text: &str, format: Format) {
    let text = match format {
        Format::Json => std::borrow::Cow::Borrowed(text),
        _ => kreg::text::printable(text),
    };
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
}

/// A run's report with the default baseline and settings (what `kreg run` prints at its end).
pub async fn print_report(db: &PgPool, run_id: i64, (format, boxes_asked): Style) -> Result<()> {
    let loaded = view::load_report(db, run_id, None, &kreg::stats::Settings::default()).await?;
    print(&loaded.report(boxes(boxes_asked)).render(format.into()), format);
    Ok(())
}

/// `kreg compare A B`: B's rows against A's where the two runs define things alike.
pub async fn compare(db: &PgPool, run_a: i64, run_b: i64, (format, boxes_asked): Style) -> Result<ExitCode> {
    let loaded = view::load_compare(db, run_a, run_b).await?;
    print(&loaded.report(boxes(boxes_asked)).render(format.into()), format);
    Ok(ExitCode::SUCCESS)
}

/// `kreg report` with its settings checked.
pub async fn report(
    cfg: &kreg::config::Config,
    run: i64,
    baseline: Option<report::Baseline>,
    (format, boxes_asked): Style,
    alpha: f64,
    min_effect: f64,
) -> Result<ExitCode> {
    let settings = kreg::stats::Settings::checked(alpha, min_effect).map_err(anyhow::Error::msg)?;
    let db = super::db::connect(cfg).await?;
    let loaded = view::load_report(&db, run, baseline, &settings).await?;
    print(&loaded.report(boxes(boxes_asked)).render(format.into()), format);
    Ok(ExitCode::SUCCESS)
}
