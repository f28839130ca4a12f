//! Two hosts in network namespaces on this machine: a SUT running MariaDB and an LDG
//! running sysbench oltp_read_write against it over a veth pair, each with its own
//! kreg-agent; the controller reaches both over veth links of its own. Kernel `running`,
//! variants default and batch, 3 iterations. Needs root, iproute2, mariadb-server and
//! sysbench (scripts/test.sh installs them). The agents serve HTTPS; the scenario pins
//! their certificates.

use common::netns::{agent_in, Net};
use common::{fresh_db, kreg, Scratch, TOKEN};
use kreg_testkit as common;

#[tokio::test]
async fn mariadb_on_the_sut_sysbench_from_the_ldg() {
    let db = fresh_db("twohosts").await;
    let dir = Scratch::new("twohosts");
    let tag = format!("{}", std::process::id() % 10000);
    let net = Net::new(&tag, "10.231");
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    std::fs::write(dir.0.join("db.pass"), "s3cret-'pw\n").unwrap();
    let sut = agent_in(&net.names[0], "10.231.1.2", &dir.0, &token_file);
    let ldg = agent_in(&net.names[1], "10.231.2.2", &dir.0, &token_file);
    let datadir = dir.0.join("mariadb");
    let scenario = format!(
        r#"
name: two-hosts
hosts:
  sut: {{ role: sut, transport: {{ kind: http, url: "{sut}", tls_fingerprint: "{sut_fp}", token_file: token }} }}
  ldg: {{ role: loadgen, transport: {{ kind: http, url: "{ldg}", tls_fingerprint: "{ldg_fp}", token_file: token }} }}
kernels: [ {{ name: current, source: running }} ]
variants:
  - {{ name: default }}
  - {{ name: batch, policy: batch }}
workloads:
  - name: oltp
    kind: sysbench
    on: ldg
    test: oltp_read_write
    threads: 2
    time: 3
    tables: 2
    table_size: 500
    server: {{ on: sut, kind: mariadb, address: 10.231.3.1, port: 3306, datadir: {datadir}, database: sbtest, user: sb, password_file: db.pass }}
iterations: 3
"#,
        sut = sut.url,
        ldg = ldg.url,
        sut_fp = sut.fingerprint,
        ldg_fp = ldg.fingerprint,
        datadir = datadir.display()
    );
    let file = dir.0.join("two.yaml");
    std::fs::write(&file, scenario).unwrap();
    // While it runs, no command line on the machine holds the password (every user of a
    // host can read them all in /proc).
    let mut child = kreg(&db, &dir.0)
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out_reader = drain(Box::new(child.stdout.take().unwrap()));
    let err_reader = drain(Box::new(child.stderr.take().unwrap()));
    let (mut looks, mut seen) = (0u64, Vec::new());
    let out = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break std::process::Output {
                status,
                stdout: out_reader.join().unwrap(),
                stderr: err_reader.join().unwrap(),
            };
        }
        looks += 1;
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
                if String::from_utf8_lossy(&cmd).contains("s3cret") {
                    seen.push(String::from_utf8_lossy(&cmd).replace('\0', " "));
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(
        seen.is_empty(),
        "the password on a command line ({looks} looks): {seen:?}"
    );
    let left: Vec<_> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("kreg-sysbench."))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "sysbench's private folder left behind: {left:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kreg run failed\n{stdout}\n{stderr}");

    // tps and latency per iteration, with the policy seen on the mariadbd threads.
    let rows: Vec<(String, i32, String, f64, String)> = sqlx::query_as(
        "SELECT j.variant, j.iteration, r.metric, r.value, r.observed_policy FROM results r JOIN jobs j ON j.id = r.job_id
         WHERE r.metric IN ('tps', 'lat_avg_ms', 'lat_p95_ms') ORDER BY j.ordinal, r.metric",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2 * 3 * 3, "{rows:?}");
    for (variant, _, metric, value, policy) in &rows {
        assert!(*value > 0.0, "{metric} = {value}");
        let want = if variant == "batch" { "batch" } else { "other" };
        assert_eq!(policy, want);
    }
    // Every mariadbd thread was listed, each under the variant's policy.
    let listings: Vec<(String, String)> = sqlx::query_as(
        "SELECT j.variant, o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id WHERE o.kind = 'server_threads' ORDER BY j.ordinal",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(listings.len(), 6);
    for (variant, listing) in &listings {
        let lines: Vec<&str> = listing.lines().collect();
        assert!(lines.len() > 3, "mariadbd runs many threads: {listing}");
        let want = if variant == "batch" { "batch" } else { "other" };
        assert!(lines.iter().all(|l| l.ends_with(want)), "{variant}: {listing}");
    }
    // The password never reaches the database.
    let leaked: i64 = sqlx::query_scalar("SELECT count(*) FROM raw_outputs WHERE content LIKE '%s3cret%'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(leaked, 0);
    let leaked: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE error LIKE '%s3cret%'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(leaked, 0);
    // Both hosts were recorded.
    let hosts: i64 = sqlx::query_scalar("SELECT count(DISTINCT name) FROM hosts")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(hosts, 2);
    drop((sut, ldg));
}
