//! The kernel pipeline on a small local git repository holding a stand-in tree (see
//! common/standin.rs). Fetch, ref, config, patches, cache, and boot in the lab by kexec all
//! run for real; only the compile is stood in for. Installing into a machine's /boot and
//! booting by kexec or GRUB is tests/machine.rs. The real compile of Debian's
//! linux-source-6.1 is `scripts/test-kernel.sh`.

use std::process::Command;

use sha2::Digest;

use common::standin::{standin_repo, PATCH};
use common::{fresh_db, git, kreg, Agent, Scratch};
use kreg_testkit as common;

#[tokio::test]
async fn built_kernel_boots_by_kexec_once_built_then_cached_and_a_bad_init_fails_alone() {
    let db = fresh_db("kbuild").await;
    let dir = Scratch::new("kbuild");
    let cache = dir.0.join("cache");
    let (repo, release) = standin_repo(&dir.0);
    std::fs::write(dir.0.join("fix.patch"), PATCH).unwrap();
    let builds = dir.0.join("builds.log");
    let scenario = format!(
        r#"
name: kbuild
hosts:
  sut: {{ role: sut, transport: {{ kind: lab }} }}
kernels:
  - {{ name: deb61, source: {{ deb: linux-image-amd64 }} }}
  - name: built
    source: {{ git: "{repo}", ref: v1 }}
    config: {{ base: defconfig, set: [CONFIG_HZ=1000, CONFIG_SCHEDSTATS=y] }}
    patches: [fix.patch]
    perf: tree
  - name: bad-init
    source: {{ git: "{repo}", ref: v1 }}
    config: {{ base: defconfig, set: [CONFIG_HZ=1000, CONFIG_SCHEDSTATS=y] }}
    patches: [fix.patch]
    cmdline: rdinit=/no/such/init
  - {{ name: deb61-again, source: {{ deb: linux-image-amd64 }} }}
baseline: deb61
boot: {{ timeout: 3m }}
workloads:
  - {{ name: hb, kind: hackbench, groups: 1, loops: 20, pipe: true }}
collect: [perf_stat]
"#,
        repo = repo.display()
    );
    let file = dir.0.join("k.yaml");
    std::fs::write(&file, &scenario).unwrap();
    let run = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kreg"));
        c.env("DATABASE_URL", &db.url)
            .env("KREG_DATA_DIR", &dir.0)
            .env("KREG_CACHE_DIR", &cache)
            .env("KREG_AGENT_BIN", common::agent_bin())
            .env("KREG_TEST_BUILD_LOG", &builds)
            .arg("run")
            .arg(&file);
        c.output().unwrap()
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "only bad-init fails\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("build built:   BUILD   arch/x86/boot/bzImage"),
        "the build log reaches the terminal:\n{stderr}"
    );

    let jobs: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT kernel, state, error FROM jobs ORDER BY ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        jobs.iter().map(|j| (j.0.as_str(), j.1.as_str())).collect::<Vec<_>>(),
        [
            ("deb61", "done"),
            ("built", "done"),
            ("bad-init", "failed"),
            ("deb61-again", "done")
        ],
        "{jobs:#?}\n{stderr}"
    );
    let bad = jobs[2].2.as_deref().unwrap();
    assert!(
        bad.starts_with("boot failed: kexec from") && bad.contains("the VM stopped"),
        "{bad}"
    );
    assert!(bad.contains("Kernel panic"), "the console tail says why: {bad}");
    // built came by kexec and runs the release its tree reports.
    let hosts: Vec<(String, String)> = sqlx::query_as("SELECT kernel_release, boot_method FROM hosts ORDER BY id")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(hosts[1], (release.clone(), "kexec".to_string()), "{hosts:?}");

    // One compile, for both `built` and `bad-init` (same tree, config, patches, compiler),
    // and one of tools/perf, told to leave Python out.
    let compiles = |what: &str| {
        std::fs::read_to_string(&builds)
            .unwrap()
            .lines()
            .filter(|l| *l == what)
            .count()
    };
    assert_eq!((compiles("compiled"), compiles("perf compiled 1")), (1, 1));
    // The tree's perf ran in the guest of `built` (its initramfs's perf), the host's in the
    // Debian kernels' guests; each job records which.
    let perfs: Vec<_> = std::fs::read_dir(cache.join("perf")).unwrap().flatten().collect();
    assert_eq!(perfs.len(), 1);
    let tree_perf = std::fs::read(perfs[0].path().join("perf")).unwrap();
    let tree_sha = hex::encode(sha2::Sha256::digest(&tree_perf));
    let versions: Vec<(String, serde_json::Value)> =
        sqlx::query_as("SELECT kernel, tool_versions FROM jobs WHERE state = 'done' ORDER BY ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let perf_of = |k: &str| {
        versions.iter().find(|v| v.0 == k).unwrap().1["perf@sut"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        perf_of("built"),
        format!("built from the tree of kernel built, sha256 {tree_sha}")
    );
    let host_sha = hex::encode(sha2::Sha256::digest(std::fs::read("/usr/bin/perf").unwrap()));
    assert_eq!(perf_of("deb61"), format!("sha256 {host_sha}"));
    let counted: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT j.kernel FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.metric = 'perf_context_switches' ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(counted, ["built", "deb61", "deb61-again"]);
    let builds_dir = cache.join("builds");
    let keys: Vec<_> = std::fs::read_dir(&builds_dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("meta.json").exists())
        .collect();
    assert_eq!(keys.len(), 1);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(keys[0].path().join("meta.json")).unwrap()).unwrap();
    let key = meta["key"].as_str().unwrap();
    let config = std::fs::read_to_string(keys[0].path().join("config")).unwrap();
    assert!(
        config.contains(&format!("CONFIG_LOCALVERSION=\"-kreg-{}\"", &key[..8])),
        "{config}"
    );
    assert!(
        config.contains("CONFIG_HZ=1000") && config.contains("CONFIG_SCHEDSTATS=y"),
        "{config}"
    );
    assert_eq!(meta["release"], release.as_str());
    // The tree was v1 with the patch applied: the later commit is not in it.
    assert_eq!(
        meta["tree_hash"].as_str().unwrap(),
        git(&repo, &["rev-parse", "v1^{tree}"])
    );

    // The same kernel asked for again (in a scenario of its own): nothing is compiled.
    let again = scenario.replace("  - { name: deb61, source: { deb: linux-image-amd64 } }\n", "");
    let again = &again[..again.find("  - name: bad-init").unwrap()];
    std::fs::write(
        &file,
        format!("{again}workloads:\n  - {{ name: hb, kind: hackbench, groups: 1, loops: 20, pipe: true }}\n")
            .replace("baseline: deb61\n", ""),
    )
    .unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        (compiles("compiled"), compiles("perf compiled 1")),
        (1, 1),
        "built twice"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is in the cache") && stderr.contains("perf of this tree is in the cache"),
        "{stderr}"
    );

    // The build, its final .config and its log are in Postgres, with the runs that used it.
    let (stored_key, stored_config, log): (String, String, String) =
        sqlx::query_as("SELECT key, config, build_log FROM kernel_builds")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(stored_key, key);
    assert_eq!(stored_config, config);
    assert!(log.contains("BUILD   arch/x86/boot/bzImage"), "{log}");
    // Each use with the commit its ref named then (what an alert's bisection starts from).
    let v1 = git(&repo, &["rev-parse", "v1^{commit}"]);
    let uses: Vec<(i64, String, Option<String>)> =
        sqlx::query_as("SELECT run_id, kernel, git_commit FROM kernel_build_runs ORDER BY run_id, kernel")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        uses,
        [
            (1, "bad-init".to_string(), Some(v1.clone())),
            (1, "built".to_string(), Some(v1.clone())),
            (2, "built".to_string(), Some(v1.clone()))
        ]
    );
    let out = Command::new(env!("CARGO_BIN_EXE_kreg"))
        .arg("kernels")
        .env("DATABASE_URL", &db.url)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains(key) && listing.contains("1:bad-init 1:built 2:built"),
        "{listing}"
    );
}

#[tokio::test]
async fn dropped_options_and_bad_patches_are_named() {
    let db = fresh_db("kconfig").await;
    let agent = Agent::start();
    let dir = Scratch::new("kconfig");
    let (repo, _) = standin_repo(&dir.0);
    // Its context is not in the tree: with --fuzz=0 it must not apply.
    std::fs::write(
        dir.0.join("bad.patch"),
        PATCH.replace(" stand-in tree\n+", " stand-in tree, other\n+"),
    )
    .unwrap();
    let scenario = format!(
        r#"
name: kconfig
{hosts}kernels:
  - {{ name: dropped, source: {{ git: "{repo}", ref: v1 }}, config: {{ base: tinyconfig, set: [CONFIG_NEEDS_PCI=y, CONFIG_HZ=300] }} }}
  - {{ name: badpatch, source: {{ git: "{repo}", ref: v1 }}, config: {{ base: tinyconfig }}, patches: [bad.patch] }}
  - {{ name: noref, source: {{ git: "{repo}", ref: v9 }}, config: {{ base: tinyconfig }} }}
workloads:
  - {{ name: w, kind: command, argv: [true], metrics: {{ v: {{ regex: "(1)", higher_is_better: true }} }} }}
"#,
        hosts = agent.hosts_yaml(),
        repo = repo.display()
    );
    let file = dir.0.join("k.yaml");
    std::fs::write(&file, scenario).unwrap();
    let out = kreg(&db, &dir.0)
        .env("KREG_CACHE_DIR", dir.0.join("cache"))
        .env("KREG_TEST_BUILD_LOG", dir.0.join("builds.log"))
        .arg("run")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let errors: Vec<(String, String)> = sqlx::query_as("SELECT kernel, error FROM jobs ORDER BY ordinal")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert!(
        errors[0]
            .1
            .contains("CONFIG_NEEDS_PCI=y did not survive olddefconfig (now not set); it depends on: PCI"),
        "{}",
        errors[0].1
    );
    assert!(errors[1].1.contains("bad.patch does not apply"), "{}", errors[1].1);
    assert!(errors[2].1.contains("ref \"v9\" does not exist"), "{}", errors[2].1);
}
