//! Workers on hosts that share nothing with the submitter. Each `kreg worker` runs in a
//! network namespace and a mount namespace of its own: private /tmp and /root (the
//! submitter's folder, this test's scratch and the checkout are not there; the worker's
//! data, cache and the operator's token file are its own), PostgreSQL and the machines
//! reached over a bridge. The pool is three lab machines (Debian disks made by
//! scripts/lab-machine.sh, their agents relayed onto the bridge), one pair each. The
//! scenario builds a kernel from a git URL (a git daemon on the bridge serving the stand-in
//! tree) with a config file and a patch of the submitter's, kexecs it on each machine, and
//! runs a tool uploaded as a tarball. Once the first job is stored the submitter's files
//! change, then go; the third worker starts only then. Every job runs once, with the tool,
//! config and patch the submission stored.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kreg::lab::machine::{Machine, MachineSpec};
use kreg_protocol::client::AgentClient;
use kreg_testkit::machine::golden_image;
use kreg_testkit::standin::{standin_repo, PATCH};
use kreg_testkit::{kreg_bin, Scratch};

use super::harness::{kreg_out, until_finished, Worker};
use super::soak_env::{Net, Pg, Site};

const SITE: Site = Site {
    bridge: "kregiso0",
    subnet: "10.214.0",
    tag: "iso",
    pg_port: 5498,
};
const GIT_PORT: u16 = 9418 + 77;
const TOKEN: &str = "isolated-token-0123456789abcdef";
/// What the original tool prints; the one written over it prints 99.
const VALUE: f64 = 41.0;

/// A TCP relay from the bridge to a lab machine's forwarded port on this machine's loopback
/// (qemu forwards to 127.0.0.1 only): the workers' namespaces reach the bridge, not it.
async fn relay(to: u16) -> u16 {
    let listener = tokio::net::TcpListener::bind((SITE.subnet.to_string() + ".1", 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                if let Ok(mut out) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
    port
}

/// `git daemon` serving `base` on the bridge, killed on drop.
struct GitDaemon(Child);

impl GitDaemon {
    fn start(base: &Path) -> GitDaemon {
        // git-daemon itself (`git daemon` would leave it running when killed).
        let exec_path = Command::new("git").arg("--exec-path").output().unwrap();
        let exec_path = String::from_utf8(exec_path.stdout).unwrap();
        let mut child = Command::new(Path::new(exec_path.trim()).join("git-daemon"))
            .args(["--reuseaddr", "--export-all"])
            .arg(format!("--base-path={}", base.display()))
            .arg(format!("--listen={}.1", SITE.subnet))
            .arg(format!("--port={GIT_PORT}"))
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Serving once `git ls-remote` answers.
        let url = format!("git://{}.1:{GIT_PORT}/linux", SITE.subnet);
        for _ in 0..100 {
            let ok = Command::new("git").args(["ls-remote", &url]).output().unwrap();
            if ok.status.success() {
                return GitDaemon(child);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("git daemon did not answer at {url}");
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Inside the namespaces: /tmp, /root and /mnt private and empty, the kreg binary's folder
/// bound under /mnt, the operator's token file written where the pool names it, a file
/// only this host has in /root; the submitter's folder must not be seen.
const ISOLATE: &str = r#"set -e
mount -t tmpfs kreg-stage /mnt
mkdir /mnt/bin
mount --bind "$KREG_BIN_DIR" /mnt/bin
mount -t tmpfs kreg-tmp /tmp
mount -t tmpfs kreg-root /root
if [ -e "$SUBMITTER" ]; then echo "the submitter's folder is visible: $SUBMITTER" >&2; exit 3; fi
mkdir -p "$(dirname "$TOKEN_FILE")"
printf %s "$TOKEN" > "$TOKEN_FILE"
echo "this worker's own" > /root/worker-only.txt
exec /mnt/bin/kreg "$@"
"#;

fn isolated_worker(url: &str, dir: &Path, i: usize, ns: &str, submitter: &Path) -> Worker {
    let name = format!("w{i}");
    let log = dir.join(format!("{name}.log"));
    let out = std::fs::File::create(&log).unwrap();
    let bin = kreg_bin();
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "unshare", "--mount", "--propagation", "private"])
        .args(["sh", "-c", ISOLATE, "isolate"])
        .args([
            "worker",
            "--name",
            &name,
            "--lease",
            "10",
            "--poll",
            "0.3",
            "--until-empty",
        ])
        .env("KREG_BIN_DIR", bin.parent().unwrap())
        .env("SUBMITTER", submitter)
        .env("TOKEN_FILE", dir.join("token"))
        .env("TOKEN", TOKEN)
        .env("DATABASE_URL", url)
        .env("HOME", "/root")
        .env("KREG_DATA_DIR", "/root/kreg")
        .env_remove("KREG_CACHE_DIR")
        .env_remove("KREG_AGENT_BIN")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    Worker { child, log }
}

/// The submitter's folder: the scenario, its tool tarball, config file (Debian's, which the
/// machine's initramfs tools read, and a line of the test's) and patch; `original` or as
/// edited after the submission.
fn submitter_files(dir: &Path, debian_config: &str, original: bool) {
    let (value, mark) = if original {
        (VALUE as u32, "ORIGINAL")
    } else {
        (99, "EDITED")
    };
    let tree = dir.join("src/uptool-1");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("uptool"),
        format!("#!/bin/sh\nsleep 1\necho \"value: {value} on $(uname -r)\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tree.join("uptool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let st = Command::new("tar")
        .arg("-czf")
        .arg(dir.join("uptool.tar.gz"))
        .arg("-C")
        .arg(dir.join("src"))
        .arg("uptool-1")
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(
        dir.join("kernel.config"),
        format!("{debian_config}CONFIG_KREG_TEST_{mark}=y\n"),
    )
    .unwrap();
    let patch = if original {
        PATCH.to_string()
    } else {
        PATCH.replace("patched by", "edited after submit, patched by")
    };
    std::fs::write(dir.join("fix.patch"), patch).unwrap();
}

fn scenario(extra_tool: &str) -> String {
    format!(
        r#"name: isolated
hosts:
  sut: {{ role: sut, transport: {{ kind: lab }} }}
kernels:
  - name: built
    source: {{ git: "git://{subnet}.1:{GIT_PORT}/linux", ref: v1 }}
    config: {{ base: kernel.config, set: [CONFIG_SCHEDSTATS=y] }}
    patches: [fix.patch]
boot: {{ timeout: 600s }}
tools:
  - {{ name: uptool, on: [sut], from: {{ tarball: uptool.tar.gz, binary: uptool }} }}
{extra_tool}workloads:
  - name: up
    kind: command
    argv: ["uptool"]
    metrics: {{ value: {{ regex: "value: ([0-9]+)", higher_is_better: true }} }}
iterations: 6
"#,
        subnet = SITE.subnet
    )
}

async fn machines(dir: &Path) -> (Vec<Machine>, String) {
    let golden = golden_image();
    let mut machines = Vec::new();
    let mut pool = String::from("machines:\n");
    for i in 0..3 {
        let m = Machine::start(&MachineSpec {
            golden: golden.clone(),
            dir: dir.join(format!("m{i}")),
            agent_bin: Some(kreg_testkit::agent_bin()),
            token: TOKEN.into(),
            authorized_keys: None,
            cpus: 1,
            memory_mib: 1024,
            threads_per_core: 1,
            lan: None,
        })
        .unwrap();
        let port = relay(m.port).await;
        pool += &format!(
            "  m{i}: {{ role: sut, transport: {{ kind: http, url: \"http://{}.1:{port}\", token_file: token, insecure: true }} }}\n",
            SITE.subnet
        );
        machines.push(m);
    }
    for m in &machines {
        let client = AgentClient::new(&m.url(), TOKEN);
        kreg::boot::wait_for_agent(&client, None, Duration::from_secs(900), None)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", m.console_tail(30)));
    }
    (machines, pool)
}

async fn values(db: &sqlx::PgPool) -> Vec<(i64, String, f64)> {
    sqlx::query_as("SELECT j.id, j.machine, r.value FROM results r JOIN jobs j ON j.id = r.job_id ORDER BY j.id")
        .fetch_all(db)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_that_share_nothing_run_what_the_submission_stored() {
    let dir = Scratch::new("fleet-isolated");
    let net = Net::new(&SITE, 3);
    let pg = Pg::new(&dir.0.join("pg"), &SITE);
    let db = sqlx::PgPool::connect(&pg.url).await.unwrap();
    let served = dir.0.join("git");
    std::fs::create_dir_all(&served).unwrap();
    let (repo, _) = standin_repo(&served);
    let debian_config = std::fs::read_to_string(repo.join("debian.config")).unwrap();
    let _git = GitDaemon::start(&served);
    let (machines, pool) = machines(&dir.0).await;
    std::fs::write(dir.0.join("token"), TOKEN).unwrap();
    std::fs::write(dir.0.join("pool.yaml"), pool).unwrap();
    let cli = dir.0.join("cli");
    let run = |args: &[&str]| kreg_out(&pg.url, &cli, args);
    let (ok, out) = run(&["machines", "add", dir.0.join("pool.yaml").to_str().unwrap()]);
    assert!(ok, "{out}");

    let mine = dir.0.join("submitter");
    std::fs::create_dir_all(&mine).unwrap();
    submitter_files(&mine, &debian_config, true);
    std::fs::write(mine.join("s.yaml"), scenario("")).unwrap();
    let (ok, out) = run(&["submit", mine.join("s.yaml").to_str().unwrap(), "--pairs", "3"]);
    assert!(ok && out.contains("run 1:"), "{out}");

    // One worker; once it has stored a job, the submitter's files change and then go, and
    // two more workers start: the slots still queued then (a worker drives one at a time,
    // and each slot first boots its kernel) are built, booted and run after the change.
    let mut workers = vec![isolated_worker(&pg.url, &dir.0, 0, &net.namespaces[0], &mine)];
    let deadline = std::time::Instant::now() + Duration::from_secs(1800);
    while values(&db).await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no job stored in 30 minutes\n{}",
            workers[0].text()
        );
        if let Some(st) = workers[0].child.try_wait().unwrap() {
            panic!(
                "the worker ended ({st}) before any job was stored:\n{}",
                workers[0].text()
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    submitter_files(&mine, &debian_config, false);
    std::fs::remove_dir_all(&mine).unwrap();
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM run_slots WHERE state = 'queued'")
        .fetch_one(&db)
        .await
        .unwrap();
    // (Each slot boots its kernel first, so the third cannot have started yet.)
    assert!(queued >= 1, "the files changed once every slot had started");
    eprintln!("the submitter's files changed and went; {queued} slot(s) not started yet");
    for i in 1..3 {
        workers.push(isolated_worker(&pg.url, &dir.0, i, &net.namespaces[i], &mine));
    }
    let logs = |ws: &[Worker]| ws.iter().map(|w| w.text()).collect::<Vec<_>>().join("\n----\n");
    assert!(until_finished(&db, 1800).await, "{}", logs(&workers));

    // Every job once, on the three machines, with the stored tool.
    let got = values(&db).await;
    assert_eq!(got.len(), 6, "{got:?}\n{}", logs(&workers));
    let jobs: std::collections::BTreeSet<i64> = got.iter().map(|g| g.0).collect();
    assert_eq!(jobs.len(), 6, "a job stored twice: {got:?}");
    assert!(got.iter().all(|g| g.2 == VALUE), "{got:?}");
    let on: std::collections::BTreeSet<&str> = got.iter().map(|g| g.1.as_str()).collect();
    assert_eq!(on.len(), 3, "{got:?}");
    let (done, all): (i64, i64) =
        sqlx::query_as("SELECT count(*) FILTER (WHERE state = 'done'), count(*) FROM jobs WHERE run_id = 1")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!((done, all), (6, 6));
    // One build, whoever built it and when: the stored config file and patch (the edited
    // ones would give another key), booted on every machine.
    let builds: Vec<(String, String)> = sqlx::query_as(
        "SELECT DISTINCT b.key, b.config FROM kernel_build_runs k JOIN kernel_builds b ON b.key = k.build_key WHERE k.run_id = 1",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(builds.len(), 1, "{builds:?}");
    assert!(
        builds[0].1.contains("CONFIG_KREG_TEST_ORIGINAL=y") && !builds[0].1.contains("EDITED"),
        "{}",
        builds[0].1
    );
    let booted: Vec<String> = sqlx::query_scalar("SELECT DISTINCT kernel_release FROM hosts WHERE run_id = 1")
        .fetch_all(&db)
        .await
        .unwrap();
    assert_eq!(booted.len(), 1, "{booted:?}");
    let workers_text = logs(&workers);
    assert!(
        !workers_text.contains("submitter's folder is visible"),
        "{workers_text}"
    );

    // A file only the workers' hosts have: the submitter has no such file, so the
    // submission is refused there, and no worker is given anything to read.
    let elsewhere = dir.0.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    submitter_files(&elsewhere, &debian_config, true);
    let theirs =
        "  - { name: theirs, on: [sut], install_dir: /usr/local/bin, from: { upload: /root/worker-only.txt } }\n";
    std::fs::write(elsewhere.join("s.yaml"), scenario(theirs)).unwrap();
    let (ok, out) = run(&["submit", elsewhere.join("s.yaml").to_str().unwrap()]);
    assert!(!ok && out.contains("/root/worker-only.txt"), "{out}");
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(runs, 1);
    drop(workers);
    drop(machines);
}
