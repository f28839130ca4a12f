//! `kreg resume RUN`: a stopped run goes on as its kind says.

use std::process::ExitCode;

use anyhow::Result;

use kreg::config::Config;
use kreg::plan::RunKind;
use kreg::store;

/// `kreg resume`'s arguments.
#[derive(clap::Args)]
pub struct ResumeArgs {
    pub run: i64,
}

/// `kreg resume RUN`, as the run's kind says: a run of `kreg run` driven on from its first
/// job not done, a bisection where it stands, a submitted run's failed slots queued again.
pub async fn resume(run: i64, cfg: &Config) -> Result<ExitCode> {
    let db = super::db::connect(cfg).await?;
    let row = store::run(&db, run).await?;
    match row.kind {
        RunKind::Matrix | RunKind::Adaptive => {
            files_changed(&db, run).await?;
            super::run::resume_run(&db, row, cfg).await
        }
        RunKind::Bisection => {
            files_changed(&db, run).await?;
            super::bisect::resume(&db, row, cfg).await
        }
        // Its machines were the rehearsal's own, gone with it; its stored scenario names
        // the real ones.
        RunKind::Rehearsal => anyhow::bail!(
            "run {run} is a rehearsal: its lab machines ended with it and its stored scenario names the real hosts; rehearse again with `kreg rehearse {}`",
            row.source_path
        ),
        // A submitted run's files are the submitter's: their paths are not looked at here.
        RunKind::Fleet => {
            let n = store::fleet::requeue_failed(&db, run).await?;
            println!("run {run}: a submitted run; {n} failed slot(s) queued again for the workers (their jobs not done run again on the same machines)");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Says which of the files run `run` carries no longer hold, at the paths its scenario
/// named, what the run recorded: the run goes on with the recorded content whatever the
/// paths hold now.
async fn files_changed(db: &sqlx::PgPool, run: i64) -> Result<()> {
    for f in store::blobs::run_files(db, run).await? {
        let path = std::path::Path::new(&f.path);
        let now = match store::blobs::digest(path) {
            Ok(b) if b.sha256 == f.sha256 => continue,
            Ok(b) => format!("now holds other content (SHA-256 {})", b.sha256),
            Err(e) => format!("cannot be read any more ({e})"),
        };
        eprintln!(
            "kreg: {} ({}) {now}; run {run} goes on with the content it recorded (SHA-256 {})",
            f.path, f.what, f.sha256
        );
    }
    Ok(())
}
