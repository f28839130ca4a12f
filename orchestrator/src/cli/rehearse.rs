//! `kreg rehearse SCENARIO`: the scenario file, unchanged, run on the local lab before the
//! real machines are booked (`kreg::rehearsal`), ending with the rehearsal's sheet.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Result};

use kreg::config::Config;
use kreg::rehearsal::{self, LabSpec};
use kreg::rehearse::sheet::{Outcome, Step};
use kreg::report::Format;

/// `kreg rehearse`'s arguments.
#[derive(clap::Args)]
pub struct RehearseArgs {
    file: PathBuf,
    /// The lab machine's image folder (disk.raw, made by scripts/lab-machine.sh); by
    /// default the cache's `machine`.
    #[arg(long)]
    image: Option<PathBuf>,
    /// CPUs of each lab machine.
    #[arg(long, default_value_t = 2)]
    cpus: u32,
    #[arg(long, default_value_t = 2048)]
    memory_mib: u32,
    /// Threads per core of the SUT (2: an SMT topology).
    #[arg(long, default_value_t = 1)]
    threads_per_core: u32,
    /// Only the cells KERNEL/VARIANT/WORKLOAD (each a name of the scenario or *), as
    /// `kreg run --only`. Repeatable
    #[arg(long, value_name = "KERNEL/VARIANT/WORKLOAD")]
    only: Vec<String>,
    /// The shape of the report printed before the sheet (as `kreg report --format`).
    #[arg(long, value_parser = super::report::format_arg(), default_value = "text")]
    format: Format,
}

pub async fn rehearse(a: &RehearseArgs, cfg: &Config) -> Result<ExitCode> {
    let file = a.file.as_path();
    // The kernels' images and packages are the real run's: the rehearsal stands in for
    // them, so only the other files the scenario names are checked.
    let (text, s) = match kreg::scenario_file::load(file, true) {
        Ok(x) => x,
        Err(_) => super::validate::load(file)?,
    };
    let mut r = kreg::rehearse::rehearsal(&s, &text);
    let replaced = rehearsal::lab_replaced_files(&r.scenario);
    r.scenario.files.retain(|f| !replaced.contains(&f.path));
    let stand_ins = rehearsal::stand_in(&mut r.scenario);
    let missing = kreg::scenario_file::check_files(&r.scenario);
    if !missing.is_empty() {
        for d in &missing {
            eprintln!("{}", d.render(&file.display().to_string()));
        }
        return Err(anyhow!(
            "{}: {} file(s) the rehearsal needs are missing",
            file.display(),
            missing.len()
        ));
    }
    r.scenario.name = format!("{}-rehearsal", s.name);
    print!("{}", super::validate::rehearsal_head(&r, file));
    for k in &stand_ins {
        if let Some(by) = &k.by {
            println!("  kernel {}: {} stood in by {by}", k.kernel, k.given);
        }
    }
    let image = a
        .image
        .clone()
        .unwrap_or_else(|| rehearsal::default_image(&cfg.cache_dir));
    let dir = cfg
        .data_dir
        .join("rehearsals")
        .join(format!("{}-{}", s.name, std::process::id()));
    let kreg_bin = std::env::current_exe()?;
    let spec = LabSpec {
        image: &image,
        dir: &dir,
        agent_bin: &cfg.agent_bin,
        kreg_bin: &kreg_bin,
        cpus: a.cpus,
        memory_mib: a.memory_mib,
        threads_per_core: a.threads_per_core,
    };
    let lab = rehearsal::start(&r.scenario, &spec, &mut |l| println!("{l}"))
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let (run, _) = super::run::record_and_drive_scenario(
        file,
        lab.scenario.clone(),
        Some(kreg::plan::RunKind::Rehearsal),
        &a.only,
        cfg,
    )
    .await?;
    let db = super::db::connect(cfg).await?;
    // Its stored scenario is the file as written: resuming it would reach for the real
    // machines. A rehearsal that stopped is rehearsed again instead.
    let row = kreg::store::run(&db, run).await?;
    if row.state != kreg::plan::RunState::Done {
        kreg::store::set_run_state(&db, run, kreg::plan::RunState::Failed).await?;
    }
    let mut sheet = rehearsal::sheet::of_run(&db, run, &r, &stand_ins, &text).await?;
    report_step(&mut sheet, &db, run, a.format).await;
    drop(lab);
    println!("\nrehearsal sheet of {} (run {run}):", file.display());
    print!("{}", sheet.render(&file.display().to_string()));
    println!("the real run: {}", r.real.text());
    let failed = sheet.failed();
    if failed == 0 {
        println!("rehearsal passed: every step rehearsable was done");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "rehearsal FAILED at {failed} step(s); the machines' consoles are under {}",
            dir.display()
        );
        Ok(ExitCode::from(3))
    }
}

/// The run's report in the asked shape, printed, and said on the sheet.
async fn report_step(sheet: &mut kreg::rehearse::sheet::Sheet, db: &sqlx::PgPool, run: i64, format: Format) {
    let settings = kreg::stats::Settings::default();
    match kreg::view::report_text(db, run, None, &settings, format, false).await {
        Ok(text) => {
            // The run printed its report as text already.
            if format != Format::Text {
                println!();
                super::report::print(&text, format);
            }
            let name = Format::NAMES
                .iter()
                .find(|(_, f)| *f == format)
                .map(|(n, _)| *n)
                .unwrap_or("text");
            sheet.push(
                Step::Report,
                name,
                Outcome::Done(format!(
                    "`kreg report {run} --format {name}`: {} lines",
                    text.lines().count()
                )),
            );
        }
        Err(e) => sheet.push(
            Step::Report,
            "report",
            Outcome::Failed {
                reason: format!("{e:#}"),
                at: None,
            },
        ),
    }
}
