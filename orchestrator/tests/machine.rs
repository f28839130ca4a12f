//! kreg against a machine: the lab machine (Debian bookworm on a disk, GRUB in the MBR,
//! the kernel's initramfs made by initramfs-tools, made by scripts/lab-machine.sh) reached
//! over http like any SUT, with `kreg lab reset` (qemu's system_reset) as its power button.
//! Kernels are installed into its /boot/kreg and /lib/modules by the agent, which runs
//! depmod and update-initramfs; they boot by a one-shot GRUB entry or by kexec; a kernel
//! that hangs is followed by a reset, after which GRUB's untouched default brings the
//! machine back to its own kernel, and the run goes on.
//!
//! The kernels: the stand-in build (Debian's 6.12 image and part of its modules, see
//! common/standin.rs); Debian's 6.1 image cut in half, which GRUB loads and whose
//! decompressor fails, so that the machine resets itself and comes back on its default
//! entry (a wrong kernel); and the stand-in build with `rdinit=/no/such/init panic=0`,
//! which cannot mount its root and then waits forever (a hang, ended by the reset command).
//! The kexec run keeps one kreg kernel (`keep_kernels: 1`): the grub run's other kernel is
//! removed from the machine before it installs its first. Last, a run killed inside a
//! sched-feature variant, over SSH, is resumed on the same boot, and the feature ends as it
//! was.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kreg::lab::machine::{Machine, MachineSpec};
use kreg_protocol::client::AgentClient;
use kreg_protocol::wire::ExecRequest;

use common::machine::{cache_dir, golden_image};
use common::standin::standin_repo;
use common::{fresh_db, Scratch};
use kreg_testkit as common;

const TOKEN: &str = "machine-token-0123456789abcdef";

async fn exec(client: &AgentClient, argv: &[&str]) -> String {
    let r = client
        .exec(ExecRequest {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            timeout_secs: 60,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(r.success(), "{argv:?}: {}", r.stderr);
    r.stdout
}

#[tokio::test]
async fn installed_kernels_boot_once_by_grub_and_by_kexec_and_a_hang_falls_back() {
    let db = fresh_db("machine").await;
    let dir = Scratch::new("machine");
    let golden = golden_image();
    let identity = common::sshd::keygen(&dir.0, "id_machine", "ed25519", "");
    let machine = Machine::start(&MachineSpec {
        golden: golden.clone(),
        dir: dir.0.join("machine"),
        agent_bin: Some(common::agent_bin()),
        token: TOKEN.into(),
        authorized_keys: Some(std::fs::read_to_string(identity.with_extension("pub")).unwrap()),
        cpus: 2,
        memory_mib: 1024,
        threads_per_core: 1,
        lan: None,
    })
    .unwrap();
    let client = AgentClient::new(&machine.url(), TOKEN);
    let first = kreg::boot::wait_for_agent(&client, None, Duration::from_secs(600), None)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", machine.console_tail(30)));
    let own = first.kernel_release.clone();
    assert!(own.starts_with("6.1.0-"), "{own}");
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();

    let (repo, release) = standin_repo(&dir.0);
    let deb61 = kreg::kernel::prepare(
        &kreg::scenario::KernelSource::Deb {
            package: "linux-image-amd64".into(),
        },
        &cache_dir(),
        None,
        &mut |l: &str| eprintln!("{l}"),
    )
    .unwrap()
    .unwrap();
    assert_ne!(deb61.release, own, "the hanging kernel needs a release of its own");
    let image = std::fs::read(&deb61.vmlinuz).unwrap();
    let half = dir.0.join("vmlinuz-half");
    std::fs::write(&half, &image[..image.len() / 2]).unwrap();

    // The boot timeout: a good kexec'd boot takes under a minute under TCG here, but this
    // sandbox was seen to slow its guests down more than tenfold for minutes at a time (the
    // same kernel reached its root mount 5 s after one kexec and 77 s after another, and
    // sshd 290 s after a third), so the good kernels get 600 s; the hanging one panics,
    // which kreg sees on the console and resets at once.
    let scenario = |name: &str, boot: &str, kernels: &str| {
        format!(
            r#"
name: {name}
hosts:
  sut:
    role: sut
    transport:
      kind: http
      url: "{url}"
      token_file: "{token}"
      boot: {boot}
      reset: ["{kreg}", lab, reset, "{monitor}"]
      console: [tail, -n, "200", "{console}"]
kernels:
{kernels}
boot: {{ timeout: 600s }}
workloads:
  - {{ name: hb, kind: hackbench, groups: 1, loops: 20, pipe: true }}
"#,
            url = machine.url(),
            token = token_file.display(),
            kreg = env!("CARGO_BIN_EXE_kreg"),
            monitor = machine.monitor.display(),
            console = machine.console.display(),
        )
    };
    let built = format!(
        "{{ git: \"{}\", ref: v1 }}, config: {{ base: defconfig, set: [CONFIG_SCHEDSTATS=y] }}",
        repo.display()
    );
    let run = |file: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
            .env("DATABASE_URL", &db.url)
            .env("KREG_DATA_DIR", &dir.0)
            .env("KREG_CACHE_DIR", cache_dir())
            .env("KREG_TEST_BUILD_LOG", dir.0.join("builds.log"))
            .arg("run")
            .arg(file)
            .output()
            .unwrap();
        let text = format!(
            "{}\n{}\nconsole:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            machine.console_tail(40)
        );
        (out.status.code(), text)
    };

    // GRUB: the built kernel once, then the hanging one; the machine's default is untouched.
    let grub = dir.0.join("grub.yaml");
    std::fs::write(
        &grub,
        scenario(
            "machine-grub",
            "grub-reboot",
            &format!(
                "  - {{ name: own, source: running }}\n  - {{ name: built, source: {built} }}\n  - {{ name: hang, source: {{ path: \"{}\" }} }}\n",
                half.display()
            ),
        ),
    )
    .unwrap();
    let (code, text) = run(&grub);
    assert_eq!(code, Some(3), "only `hang` fails:\n{text}");
    let jobs: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT kernel, state, error FROM jobs WHERE run_id = 1 ORDER BY ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let states: Vec<(&str, &str)> = jobs.iter().map(|j| (j.0.as_str(), j.1.as_str())).collect();
    assert_eq!(
        states,
        [("own", "done"), ("built", "done"), ("hang", "failed")],
        "{text}"
    );
    let why = jobs[2].2.as_deref().unwrap();
    // It reset itself; GRUB's one-shot entry was used up, so the default came back.
    assert!(
        why.contains(&format!(
            "grub-reboot into {} on sut: booted {own}, expected {}",
            deb61.release, deb61.release
        )),
        "{why}"
    );
    // The console command's last lines follow (here: the default kernel's boot).
    assert!(
        why.contains(&format!("the machine is back on {own}; console:\n")),
        "{why}"
    );
    let hosts: Vec<(String, String)> =
        sqlx::query_as("SELECT kernel_release, boot_method FROM hosts WHERE run_id = 1 ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        hosts,
        [
            (own.clone(), "none".to_string()),
            (release.clone(), "grub-reboot".to_string())
        ]
    );
    // After the reset: the machine's own kernel, GRUB_DEFAULT as it was, no one-shot entry
    // left pending, and kreg's kernels in a submenu of their own after the distribution's.
    let now = client.identity().await.unwrap();
    assert_eq!(now.kernel_release, own);
    assert_ne!(now.boot_id, first.boot_id);
    let env = exec(&client, &["grub-editenv", "list"]).await;
    assert!(
        env.lines().all(|l| l == "next_entry=" || !l.starts_with("next_entry")),
        "{env}"
    );
    assert!(exec(&client, &["cat", "/etc/default/grub"])
        .await
        .contains("GRUB_DEFAULT=0\n"));
    let cfg = exec(&client, &["cat", "/boot/grub/grub.cfg"]).await;
    let kreg_menu = cfg.find("submenu 'kreg kernels'").expect("kreg's submenu");
    assert!(cfg.find(&format!("vmlinuz-{own}")).unwrap() < kreg_menu);
    assert!(cfg[kreg_menu..].contains(&format!("'kreg-{release}'")));
    // The built kernel's modules went in with depmod's index, its initramfs came from
    // initramfs-tools, and its config and System.map sit where tools look for them.
    let listing = exec(
        &client,
        &[
            "ls",
            &format!("/lib/modules/{release}/modules.dep"),
            &format!("/boot/kreg/{release}/initrd.img"),
            &format!("/boot/config-{release}"),
            &format!("/boot/System.map-{release}"),
        ],
    )
    .await;
    assert_eq!(listing.lines().count(), 4, "{listing}");
    let mut ours: Vec<String> = exec(&client, &["ls", "/boot/kreg"])
        .await
        .lines()
        .map(String::from)
        .collect();
    ours.sort();
    let mut both = vec![release.clone(), deb61.release.clone()];
    both.sort();
    assert_eq!(ours, both);

    // kexec: a kernel that hangs first, then one compiled on the machine itself (a patch of
    // this test run's own makes it a build no cache holds), which must still come up.
    let stamp = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    std::fs::write(
        dir.0.join("unique.patch"),
        common::standin::PATCH.replace("patched by kreg's test", &format!("test run {stamp}")),
    )
    .unwrap();
    let kexec = dir.0.join("kexec.yaml");
    std::fs::write(
        &kexec,
        scenario(
            "machine-kexec",
            "kexec",
            &format!(
                "  - {{ name: hang, source: {built}, cmdline: rdinit=/no/such/init panic=0 }}\n  - {{ name: built, source: {}, build_on: sut, cmdline: sched_verbose }}\n",
                built.replace("[CONFIG_SCHEDSTATS=y] }", "[CONFIG_SCHEDSTATS=y, CONFIG_HZ=1000] }, patches: [unique.patch]")
            ),
        )
        // One kreg kernel kept: installing the first one here removes the older ones.
        .replace("boot: kexec\n", "boot: kexec\n      keep_kernels: 1\n"),
    )
    .unwrap();
    let (code, text) = run(&kexec);
    assert_eq!(code, Some(3), "only `hang` fails:\n{text}");
    // make ran on the machine, its output streamed back to the terminal as it came.
    assert!(text.contains("build built: compiling on sut"), "{text}");
    assert!(text.contains("build built:   BUILD   arch/x86/boot/bzImage"), "{text}");
    let (built_on, config): (String, String) =
        sqlx::query_as("SELECT built_on, config FROM kernel_builds WHERE built_on <> 'controller'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(built_on, "sut");
    assert!(
        config.contains("CONFIG_LOCALVERSION=\"-kreg-"),
        "the build's own config"
    );
    let jobs: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT kernel, state, error FROM jobs WHERE run_id = 2 ORDER BY ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let states: Vec<(&str, &str)> = jobs.iter().map(|j| (j.0.as_str(), j.1.as_str())).collect();
    assert_eq!(states, [("hang", "failed"), ("built", "done")], "{text}");
    // A panic on the console: the reset command at once, then GRUB's default entry.
    let why = jobs[0].2.as_deref().unwrap();
    assert!(
        why.contains(&format!(
            "kexec into {release} on sut: the kernel panicked (Kernel panic - not syncing: VFS: Unable to mount root fs"
        )),
        "{why}"
    );
    assert!(
        why.contains(&format!("the machine is back on {own} (known good); console:\n")),
        "{why}"
    );
    // The hung kernel's last words, read from the console before the reset.
    assert!(why.contains("Kernel panic - not syncing"), "{why}");
    let (rel, method, cmdline): (String, String, String) = sqlx::query_as(
        "SELECT kernel_release, boot_method, cmdline FROM hosts WHERE run_id = 2 ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((rel.as_str(), method.as_str()), (release.as_str(), "kexec"));
    // The known-good kernel's command line, without GRUB's BOOT_IMAGE, plus the entry's.
    assert!(
        cmdline.ends_with(" sched_verbose") && !cmdline.contains("BOOT_IMAGE"),
        "{cmdline}"
    );
    assert!(cmdline.contains("init=/sbin/kreg-machine-init"), "{cmdline}");
    // keep_kernels: 1: the grub run's other kernel was removed before this run installed
    // its first; the running one stays.
    assert_eq!(exec(&client, &["ls", "/boot/kreg"]).await.trim(), release);

    // Over SSH (the rehearsal test boots two machines this way, kexec after kexec, and
    // checks the reconnections): here, the killed run below reaches the machine through its
    // sshd, kreg installing its own agent (on port 7879: the machine's init runs one of
    // its own on 7878).
    let known = dir.0.join("known_hosts");
    std::fs::write(
        &known,
        Machine::known_hosts_line(&golden, machine.ssh_port).unwrap() + "\n",
    )
    .unwrap();
    let ssh_yaml = scenario("machine-ssh", "kexec", "").replace(
        &format!("      kind: http\n      url: \"{}\"\n      token_file: \"{}\"\n", machine.url(), token_file.display()),
        &format!(
            "      kind: ssh\n      address: \"127.0.0.1:{}\"\n      identity: \"{}\"\n      known_hosts: \"{}\"\n      agent_port: 7879\n",
            machine.ssh_port,
            identity.display(),
            known.display()
        ),
    );
    assert!(ssh_yaml.contains("kind: ssh"));

    // A controller killed inside a sched-feature variant, on a kernel that outlives it: the
    // feature was noted (as the kernel booted with it) before it changed, and `kreg resume`
    // on the same boot puts it back before it reads the kernel's defaults, so that the
    // feature ends as it was, not as the killed run left it.
    let ssh = |cmd: &str| {
        let out = Command::new("ssh")
            .args(["-i"])
            .arg(&identity)
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known.display()))
            .args([
                "-o",
                "BatchMode=yes",
                "-p",
                &machine.ssh_port.to_string(),
                "root@127.0.0.1",
                cmd,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let features = || ssh("cat /sys/kernel/debug/sched/features");
    let booted_with = features();
    let on = booted_with.split_whitespace().any(|t| t == "TTWU_QUEUE");
    assert!(on || booted_with.contains("NO_TTWU_QUEUE"), "{booted_with}");
    let (was, flip) = if on {
        ("TTWU_QUEUE", "NO_TTWU_QUEUE")
    } else {
        ("NO_TTWU_QUEUE", "TTWU_QUEUE")
    };
    let hosts = &ssh_yaml[ssh_yaml.find("hosts:").unwrap()..ssh_yaml.find("kernels:").unwrap()];
    let kill_yaml = dir.0.join("kill.yaml");
    std::fs::write(
        &kill_yaml,
        format!(
            "name: machine-features\n{hosts}kernels: [ {{ name: own, source: running }} ]\nvariants: [ {{ name: flipped, features: [{flip}] }} ]\nworkloads:\n  - {{ name: slow, kind: command, argv: [sh, -c, 'sleep 8; echo value: 1'], metrics: {{ value: {{ regex: 'value: ([0-9.]+)', unit: '', higher_is_better: true }} }} }}\niterations: 2\n"
        ),
    )
    .unwrap();
    let kreg_cmd = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kreg"));
        c.env("DATABASE_URL", &db.url)
            .env("KREG_DATA_DIR", &dir.0)
            .env("KREG_CACHE_DIR", cache_dir());
        c
    };
    let mut child = kreg_cmd()
        .arg("run")
        .arg(&kill_yaml)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::kill_when(
        &db,
        &mut child,
        "SELECT count(*) FROM jobs WHERE run_id = 3 AND state = 'running'",
        1,
        "the first job of the feature variant",
    )
    .await;
    assert!(
        features().split_whitespace().any(|t| t == flip),
        "the killed run left {flip} set"
    );
    let noted: Vec<(String, String, Option<chrono::DateTime<chrono::Utc>>)> = sqlx::query_as(
        "SELECT setting, before, restored_at FROM host_settings WHERE run_id = 3 AND setting LIKE 'sched feature %'",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert_eq!(
        (noted[0].0.as_str(), noted[0].1.as_str()),
        ("sched feature TTWU_QUEUE", was)
    );
    assert!(noted[0].2.is_none(), "not put back yet: {noted:?}");
    let out = kreg_cmd().args(["resume", "3"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "left by the interrupted attempt: sut: sched feature TTWU_QUEUE put back to {was}"
        )),
        "{said}"
    );
    assert_eq!(features(), booted_with, "every feature as the kernel booted with it");
    let (done, open): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM jobs WHERE run_id = 3 AND state = 'done'),
                (SELECT count(*) FROM host_settings WHERE run_id = 3 AND restored_at IS NULL)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((done, open), (2, 0), "{said}");
}
