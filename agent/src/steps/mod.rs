//! One module per typed step. [`run`] is the only dispatcher.

pub mod cgroup;
pub mod common;
pub mod exec;
pub mod grub;
pub mod identity;
pub mod install;
pub mod kernels;
pub mod kexec;
pub mod knob;
pub mod latency;
pub mod modules_tar;
pub mod place;
pub mod process;
pub mod schedstat;
pub mod sweep;
pub mod taskstats;

use std::path::Path;

use crate::wire::{ErrorKind, Step, StepError, StepOutput};
use common::err;

pub async fn run(
    step: Step,
    data_dir: &Path,
    layout: &install::Layout,
    procs: &process::Table,
) -> Result<StepOutput, StepError> {
    match step {
        Step::Identity => identity::run().await.map(StepOutput::Identity),
        Step::Exec(req) => exec::run(req).await.map(StepOutput::Exec),
        Step::ReadKnob { path } => knob::read(&path).await.map(StepOutput::Knob),
        Step::WriteKnob { path, value } => knob::write(&path, &value).await.map(StepOutput::Knob),
        Step::Schedstat => schedstat::run().await.map(StepOutput::Schedstat),
        Step::Interrupts => tokio::fs::read_to_string("/proc/interrupts")
            .await
            .map(|raw| StepOutput::Interrupts { raw })
            .map_err(|e| err(ErrorKind::Io, format!("reading /proc/interrupts: {e}"))),
        Step::Kexec(req) => kexec::load(&req, data_dir).await,
        Step::Spawn(req) => procs.spawn(req).await.map(StepOutput::Process),
        Step::Poll { id, since } => procs.poll(id, since).await.map(StepOutput::Process),
        Step::Stop {
            id,
            grace_secs,
            interrupt,
        } => procs.stop(id, grace_secs, interrupt).await.map(StepOutput::Process),
        Step::Threads { pid } => process::threads(pid).map(|threads| StepOutput::Threads { pid, threads }),
        Step::Listeners { port } => {
            blocking(move || process::listeners(port).map(|sockets| StepOutput::Listeners { port, sockets })).await
        }
        Step::InstallKernel(req) => install::install(&req, data_dir, layout).await,
        Step::KexecInstalled { release, cmdline } => install::kexec_installed(&release, &cmdline, layout).await,
        Step::GrubReboot { release, cmdline } => grub::grub_reboot(&release, &cmdline, layout).await,
        Step::Reboot => Ok(StepOutput::Rebooting { entry: None }),
        Step::InstalledKernels => kernels::list(layout),
        Step::RemoveKernel { release } => kernels::remove(&release, layout),
        Step::PlaceFile(req) => {
            let dir = data_dir.to_path_buf();
            tokio::task::spawn_blocking(move || place::run(&req, &dir))
                .await
                .map_err(|e| err(ErrorKind::Io, format!("placing the file: {e}")))?
                .map(StepOutput::Placed)
        }
        Step::Sweep {
            owner,
            keep_spawned,
            others,
        } => match others {
            true => sweep::others(&owner).await,
            false => sweep::run(&owner, keep_spawned, procs).await,
        }
        .map(|killed| StepOutput::Swept { killed }),
        Step::MakeCgroups(tree) => blocking(move || cgroup::make(&tree).map(StepOutput::Cgroups)).await,
        Step::RemoveCgroups { name } => {
            blocking(move || cgroup::remove(&name).map(|removed| StepOutput::CgroupsRemoved { removed })).await
        }
    }
}

async fn blocking(f: impl FnOnce() -> Result<StepOutput, StepError> + Send + 'static) -> Result<StepOutput, StepError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| err(ErrorKind::Io, format!("a blocking step ended badly: {e}")))?
}
