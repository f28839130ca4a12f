//! `kreg validate` and `kreg plan`: a scenario checked, and its job matrix in run order.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};

use kreg::{plan, scenario};

/// Loads a scenario file, printing every problem as FILE:LINE:COL: message.
pub fn load(file: &Path) -> Result<(String, scenario::Scenario)> {
    match kreg::scenario_file::load(file, false) {
        Ok(x) => Ok(x),
        Err(diags) => {
            for d in &diags {
                eprintln!("{}", d.render(&file.display().to_string()));
            }
            bail!("{} has {} problem(s)", file.display(), diags.len())
        }
    }
}

pub fn validate(files: &[PathBuf], skip_files: bool) -> Result<ExitCode> {
    if files.is_empty() {
        bail!("give at least one scenario file");
    }
    let mut bad = false;
    for f in files {
        match kreg::scenario_file::load(f, skip_files) {
            Ok((_, s)) => {
                println!("{}: ok ({} jobs)", f.display(), kreg::scenario_file::job_count(&s));
                // On stderr: stdout holds one line per good file, as scripts read it.
                if let Some(note) = plan::rank_reach(&s) {
                    eprintln!("{}: note: {note}", f.display());
                }
            }
            Err(diags) => {
                bad = true;
                for d in diags {
                    println!("{}", d.render(&f.display().to_string()));
                }
            }
        }
    }
    Ok(if bad { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

pub fn plan(file: &Path, skip_files: bool, detail: plan::Detail) -> Result<ExitCode> {
    let s = match kreg::scenario_file::load(file, skip_files) {
        Ok((_, s)) => s,
        Err(_) => load(file)?.1,
    };
    use kreg::kernel::perf::support;
    let perfs = support::perfs(&s, || support::controller_perf(kreg::lab::initramfs::PERF.0));
    print!("{}", plan::render_full(&s, &plan::expand(&s), detail, &perfs));
    for why in support::refusals(&s, &perfs) {
        println!("refused: {why}");
    }
    if let Some(note) = plan::rank_reach(&s) {
        println!("note: {note}");
    }
    Ok(ExitCode::SUCCESS)
}
