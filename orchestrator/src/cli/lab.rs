//! `kreg lab …`: a lab VM or lab machine kept up by hand, and a lab machine's reset button.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use kreg::config::Config;
use kreg::{lab, scenario};

#[derive(Subcommand)]
pub enum LabCmd {
    /// Boot a lab VM from a Debian kernel package and keep it up until Ctrl-C.
    Up {
        #[arg(long, default_value = "linux-image-6.12-amd64")]
        kernel: String,
        #[arg(long, default_value_t = 2)]
        cpus: u32,
        #[arg(long, default_value_t = 1024)]
        memory_mib: u32,
    },
    /// Start a lab machine (a disk with GRUB and Debian made by scripts/lab-machine.sh) and
    /// keep it up until Ctrl-C; prints the http host entry to put in a scenario.
    Machine {
        /// The folder holding disk.raw.
        #[arg(long)]
        image: PathBuf,
        #[arg(long, default_value_t = 2)]
        cpus: u32,
        #[arg(long, default_value_t = 1024)]
        memory_mib: u32,
        /// root's authorized_keys on the machine (e.g. ~/.ssh/id_ed25519.pub): also prints
        /// an ssh host entry.
        #[arg(long)]
        authorized_keys: Option<PathBuf>,
    },
    /// Press the reset button of a lab machine: `system_reset` on its qemu monitor socket
    /// (for a host's `reset:` command).
    Reset { monitor: PathBuf },
}

pub async fn dispatch(cmd: LabCmd, cfg: &Config) -> Result<ExitCode> {
    match cmd {
        LabCmd::Up {
            kernel,
            cpus,
            memory_mib,
        } => lab_up(cfg, &kernel, cpus, memory_mib).await,
        LabCmd::Machine {
            image,
            cpus,
            memory_mib,
            authorized_keys,
        } => lab_machine(cfg, &image, cpus, memory_mib, authorized_keys.as_deref()).await,
        LabCmd::Reset { monitor } => {
            lab::machine::reset(&monitor)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A folder of its own for this VM under the data folder, with a new agent token written
/// to `token` (mode 0600): (folder, token, token file).
fn lab_dir(cfg: &Config, kind: &str) -> Result<(PathBuf, String, PathBuf)> {
    let dir = cfg.data_dir.join("lab").join(format!("{kind}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let token = kreg::token::random().map_err(|e| anyhow::anyhow!(e))?;
    let token_file = dir.join("token");
    std::fs::write(&token_file, &token)?;
    std::fs::set_permissions(&token_file, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok((dir, token, token_file))
}

async fn lab_machine(
    cfg: &Config,
    image: &Path,
    cpus: u32,
    memory_mib: u32,
    authorized_keys: Option<&Path>,
) -> Result<ExitCode> {
    let (dir, token, token_file) = lab_dir(cfg, "machine")?;
    let keys = match authorized_keys {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?),
        None => None,
    };
    let machine = lab::machine::Machine::start(&lab::machine::MachineSpec {
        golden: image.join("disk.raw"),
        dir: dir.clone(),
        agent_bin: Some(cfg.agent_bin.clone()),
        token: token.clone(),
        authorized_keys: keys.clone(),
        cpus,
        memory_mib,
        threads_per_core: 1,
        lan: None,
    })?;
    let client = kreg_protocol::client::AgentClient::new(&machine.url(), &token);
    let id = kreg::boot::wait_for_agent(&client, None, std::time::Duration::from_secs(600), None)
        .await
        .map_err(|e| anyhow::anyhow!("{e}; console:\n{}", machine.console_tail(25)))?;
    println!("lab machine up: kernel {}, {} CPUs", id.kernel_release, id.nr_cpus);
    println!("host entry for a scenario:");
    println!(
        "  sut: {{ role: sut, transport: {{ kind: http, url: \"{}\", token_file: \"{}\", reset: [kreg, lab, reset, \"{}\"], console: [tail, -n, \"200\", \"{}\"] }} }}",
        machine.url(),
        token_file.display(),
        machine.monitor.display(),
        machine.console.display()
    );
    if keys.is_some() {
        let known = dir.join("known_hosts");
        std::fs::write(
            &known,
            lab::machine::Machine::known_hosts_line(&image.join("disk.raw"), machine.ssh_port)? + "\n",
        )?;
        println!("or over SSH (kreg installs its own agent there, on port 7879):");
        println!(
            "  sut: {{ role: sut, transport: {{ kind: ssh, address: \"127.0.0.1:{}\", known_hosts: \"{}\", agent_port: 7879, reset: [kreg, lab, reset, \"{}\"] }} }}",
            machine.ssh_port,
            known.display(),
            machine.monitor.display()
        );
    }
    println!("console: {}", machine.console.display());
    println!("Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    Ok(ExitCode::SUCCESS)
}

async fn lab_up(cfg: &Config, kernel: &str, cpus: u32, memory_mib: u32) -> Result<ExitCode> {
    let source = scenario::KernelSource::Deb {
        package: kernel.to_string(),
    };
    let cache = cfg.cache_dir.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        kreg::kernel::prepare(&source, &cache, None, &mut |l: &str| eprintln!("{l}"))
    })
    .await??
    .expect("deb");
    let (dir, token, token_file) = lab_dir(cfg, "up")?;
    let initrd = dir.join("initrd.cpio");
    std::fs::write(
        &initrd,
        lab::initramfs::build(
            &cfg.agent_bin,
            &token,
            prepared.modules_dir.as_deref(),
            lab::initramfs::Perf::None,
        )?,
    )?;
    let spec = lab::VmSpec {
        vmlinuz: prepared.vmlinuz.clone(),
        initrd,
        cpus,
        memory_mib,
        parallel: false,
        accel: cfg.lab_accel.clone(),
        dir: dir.clone(),
        cmdline: lab::CMDLINE.to_string(),
    };
    let (vm, _client, id) = lab::boot(&spec, &token, std::time::Duration::from_secs(300))
        .await
        .map_err(anyhow::Error::msg)?;
    println!("lab VM up: kernel {}, {} CPUs", id.kernel_release, id.nr_cpus);
    println!("agent: {}  token file: {}", vm.url(), token_file.display());
    println!("console: {}", vm.console.display());
    println!("Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    Ok(ExitCode::SUCCESS)
}
