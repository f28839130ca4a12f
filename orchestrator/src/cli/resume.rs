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
        RunKind::Matrix | RunKind::Adaptive => super::run::resume_run(&db, row, cfg).await,
        RunKind::Bisection => super::bisect::resume(&db, row, cfg).await,
        RunKind::Fleet => {
            let n = store::fleet::requeue_failed(&db, run).await?;
            println!("run {run}: a submitted run; {n} failed slot(s) queued again for the workers (their jobs not done run again on the same machines)");
            Ok(ExitCode::SUCCESS)
        }
    }
}
