//! `kreg validate` and `kreg plan`: a scenario checked, and its job matrix in run order.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};

use kreg::{plan, scenario};

/// `kreg validate`'s arguments.
#[derive(clap::Args)]
pub struct ValidateArgs {
    files: Vec<PathBuf>,
    /// Check the file alone, not the files it names (a template for another machine).
    #[arg(long)]
    skip_files: bool,
}

/// `kreg plan`'s arguments.
#[derive(clap::Args)]
pub struct PlanArgs {
    file: PathBuf,
    /// Check the file alone, not the files it names.
    #[arg(long)]
    skip_files: bool,
    /// Also print the generated scripts (HammerDB's), passwords as ***.
    #[arg(long)]
    verbose: bool,
    /// The SUT's CPU count, for counts given per CPU or as a share of them (a lab's
    /// own count is known).
    #[arg(long)]
    cpus: Option<u32>,
    /// The plan of the scenario's rehearsal on the local lab instead: every cell once on
    /// one boot of each kernel, sizes cut (each cut said), what a VM cannot rehearse (with
    /// its FILE:LINE:COL), and what the real run will take.
    #[arg(long)]
    rehearsal: bool,
}

/// Loads a scenario file, printing every problem as FILE:LINE:COL: message.
pub fn load(file: &Path) -> Result<(String, scenario::Scenario)> {
    load_from(file, file)
}

/// [`load`] of the file at `path`, its problems said under the name `shown` (the path the
/// user gave, where `path` is where it resolves to).
pub fn load_from(path: &Path, shown: &Path) -> Result<(String, scenario::Scenario)> {
    match kreg::scenario_file::load(path, false) {
        Ok(x) => Ok(x),
        Err(diags) => {
            for d in &diags {
                eprintln!("{}", d.render(&shown.display().to_string()));
            }
            bail!("{} has {} problem(s)", shown.display(), diags.len())
        }
    }
}

pub fn validate(a: &ValidateArgs) -> Result<ExitCode> {
    let (files, skip_files) = (&a.files, a.skip_files);
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

pub fn plan(a: &PlanArgs) -> Result<ExitCode> {
    let (file, skip_files) = (a.file.as_path(), a.skip_files);
    let detail = plan::Detail {
        verbose: a.verbose,
        cpus: a.cpus,
    };
    let (text, s) = match kreg::scenario_file::load(file, skip_files) {
        Ok(x) => x,
        Err(_) => load(file)?,
    };
    let s = if a.rehearsal {
        let r = kreg::rehearse::rehearsal(&s, &text);
        print!("{}", rehearsal_head(&r, file));
        r.scenario
    } else {
        s
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

/// What `kreg plan --rehearsal` says before the rehearsal's own plan.
pub(super) fn rehearsal_head(r: &kreg::rehearse::Rehearsal, file: &Path) -> String {
    let mut out = format!(
        "rehearsal of scenario {} on the local lab: every workload on every kernel under every variant once (the plan below)\n",
        r.scenario.name
    );
    for p in &r.plan {
        out.push_str(&format!("  plan: {p}\n"));
    }
    for c in &r.cuts {
        out.push_str(&format!("  cut: {c}\n"));
    }
    for u in &r.not_rehearsable {
        let at =
            u.at.map(|(l, c)| format!("{}:{l}:{c}: ", file.display()))
                .unwrap_or_default();
        out.push_str(&format!(
            "  not rehearsable: {at}{}: {} (kept, optional)\n",
            u.what, u.why
        ));
    }
    out.push_str(&format!("  the real run: {}\n", r.real.text()));
    out
}
