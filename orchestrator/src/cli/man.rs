//! `kreg man DIR`: the manual pages, made from the command line's own definition: `kreg.1`,
//! one page per subcommand (`kreg-report.1`, `kreg-machines-add.1`, …) in DIR/man1, and the
//! agent's `kreg-agent.8` (a daemon's section; shipped with the agent's crate and checked
//! there against its arguments) in DIR/man8. `make install-man` writes them under
//! /usr/local/share/man; `kreg agent install` puts the agent's on the machine.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use kreg::ssh::install::AGENT_PAGE;

/// `kreg man`'s arguments.
#[derive(clap::Args)]
pub struct ManArgs {
    /// A MANPATH folder (e.g. /usr/local/share/man): the pages go to its man1 and man8,
    /// made when missing.
    dir: PathBuf,
}

/// Every page of `cmd` and its subcommands (clap's own `help` left out) and the agent's, as
/// (path under a MANPATH folder, text).
pub fn pages(cmd: &clap::Command) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    walk(cmd, cmd.get_name().to_string(), &mut out)?;
    out.push(("man8/kreg-agent.8".into(), AGENT_PAGE.as_bytes().to_vec()));
    Ok(out)
}

fn walk(cmd: &clap::Command, name: String, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone().name(name.clone()).bin_name(name.replace('-', " ")))
        .render(&mut page)
        .with_context(|| format!("the page of {name}"))?;
    out.push((format!("man1/{name}.1"), page));
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        walk(sub, format!("{name}-{}", sub.get_name()), out)?;
    }
    Ok(())
}

pub fn man(a: &ManArgs, cmd: clap::Command) -> Result<ExitCode> {
    let dir: &Path = &a.dir;
    let pages = pages(&cmd)?;
    for (file, text) in &pages {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot make {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!("{} manual pages under {} (man1, man8)", pages.len(), dir.display());
    Ok(ExitCode::SUCCESS)
}
