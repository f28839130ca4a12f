//! netperf between two hosts in network namespaces: netserver on the SUT, the clients on
//! the load generator, each host with its own kreg-agent. TCP_STREAM and UDP_RR under two
//! variants, every stored figure compared with the clients' own output; then a netserver
//! someone else left on the port: the job fails naming it and nothing is measured. Needs
//! root, iproute2 and Debian's netperf (non-free; scripts/test.sh installs it).

use common::netns::{agent_in, NsAgent};
use common::{fresh_db, kreg_run, Scratch, TOKEN};
use kreg_testkit as common;
use std::process::{Child, Command};

const NET: &str = "10.233";

fn scenario(sut: &NsAgent, ldg: &NsAgent, port: u16, variants: &str) -> String {
    format!(
        r#"
name: netperf-two-hosts
hosts:
  sut: {{ role: sut, transport: {{ kind: http, url: "{sut}", tls_fingerprint: "{sut_fp}", token_file: token }} }}
  ldg: {{ role: loadgen, transport: {{ kind: http, url: "{ldg}", tls_fingerprint: "{ldg_fp}", token_file: token }} }}
kernels: [ {{ name: current, source: running }} ]
variants:
{variants}
workloads:
  - {{ name: stream, kind: netperf, on: ldg, test: TCP_STREAM, clients: 1, duration: 2, server: {{ on: sut, address: {NET}.3.1, port: {port} }} }}
  - {{ name: rr, kind: netperf, on: ldg, test: UDP_RR, clients: 2, duration: 2, server: {{ on: sut, address: {NET}.3.1, port: {port} }} }}
iterations: 1
"#,
        sut = sut.url,
        ldg = ldg.url,
        sut_fp = sut.fingerprint,
        ldg_fp = ldg.fingerprint,
    )
}

/// `KEY=VALUE` of a client's `-k` output, read here independently of kreg.
fn key(stdout: &str, k: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{k}=")))
        .unwrap_or_else(|| panic!("no {k}= in {stdout}"))
        .trim()
        .to_string()
}

struct Foreign(Child);

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn tcp_stream_and_udp_rr_from_the_ldg_and_a_port_someone_holds() {
    let db = fresh_db("netperf").await;
    let dir = Scratch::new("netperf");
    let tag = format!("{}", std::process::id() % 10000 + 1);
    let net = common::netns::Net::new(&format!("n{tag}"), NET);
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let sut = agent_in(&net.names[0], &format!("{NET}.1.2"), &dir.0, &token_file);
    let ldg = agent_in(&net.names[1], &format!("{NET}.2.2"), &dir.0, &token_file);

    let file = dir.0.join("np.yaml");
    let variants = "  - { name: default }\n  - { name: batch, policy: batch }";
    std::fs::write(&file, scenario(&sut, &ldg, 12871, variants)).unwrap();
    let (ok, text) = kreg_run(&db, &dir.0, &file);
    assert!(ok, "kreg run failed\n{text}");
    let jobs: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT id, workload, variant FROM jobs WHERE state = 'done' ORDER BY ordinal")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(jobs.len(), 4, "{jobs:?}\n{text}");
    for (id, workload, variant) in &jobs {
        let metrics: Vec<(String, f64, String, String)> =
            sqlx::query_as("SELECT metric, value, unit, observed_policy FROM results WHERE job_id = $1")
                .bind(id)
                .fetch_all(&db.pool)
                .await
                .unwrap();
        let raw: Vec<(String, String)> = sqlx::query_as(
            "SELECT kind, content FROM raw_outputs WHERE job_id = $1 AND kind LIKE 'client%_stdout' ORDER BY kind",
        )
        .bind(id)
        .fetch_all(&db.pool)
        .await
        .unwrap();
        let get = |name: &str| {
            metrics
                .iter()
                .find(|m| m.0 == name)
                .unwrap_or_else(|| panic!("{workload}/{variant}: no {name} in {metrics:?}"))
        };
        if workload == "stream" {
            assert_eq!(raw.len(), 1, "{raw:?}");
            let m = get("throughput");
            assert_eq!(m.1, key(&raw[0].1, "THROUGHPUT").parse::<f64>().unwrap());
            assert_eq!(m.2, key(&raw[0].1, "THROUGHPUT_UNITS"));
            assert_eq!(m.2, "10^6bits/s");
            assert!(m.1 > 0.0);
            // A stream test's send-call times are not transaction latencies: none stored.
            assert!(metrics.iter().all(|m| !m.0.starts_with("lat_")), "{metrics:?}");
        } else {
            assert_eq!(raw.len(), 2, "{raw:?}");
            let sum: f64 = raw
                .iter()
                .map(|(_, o)| key(o, "THROUGHPUT").parse::<f64>().unwrap())
                .sum();
            let m = get("transactions_per_s");
            assert!((m.1 - sum).abs() < 1e-6 * sum, "{} vs {sum}", m.1);
            assert_eq!(m.2, "Trans/s");
            let p99: f64 = raw
                .iter()
                .map(|(_, o)| key(o, "P99_LATENCY").parse::<f64>().unwrap())
                .sum::<f64>()
                / 2.0;
            assert!((get("lat_p99_us").1 - p99).abs() < 1e-9, "{metrics:?}");
        }
        // The clients ran under the variant's policy.
        let want = if variant == "batch" { "batch" } else { "other" };
        assert_eq!(
            get(if workload == "stream" {
                "throughput"
            } else {
                "transactions_per_s"
            })
            .3,
            want
        );
    }

    // A netserver kreg did not start, listening on every address of the SUT on the port:
    // the job fails with its pid, and nothing is measured.
    let port = 12873;
    let mut foreign = Command::new("ip");
    foreign
        .args([
            "netns",
            "exec",
            &net.names[0],
            "netserver",
            "-D",
            "-p",
            &port.to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let foreign = Foreign(foreign.spawn().expect("netserver starts"));
    let pid = foreign.0.id();
    // Until it listens.
    for _ in 0..50 {
        let ss = Command::new("ip")
            .args([
                "netns",
                "exec",
                &net.names[0],
                "ss",
                "-ltnH",
                &format!("sport = :{port}"),
            ])
            .output()
            .unwrap();
        if !String::from_utf8_lossy(&ss.stdout).trim().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM results")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    std::fs::write(&file, scenario(&sut, &ldg, port, "  - { name: default }")).unwrap();
    let (ok, text) = kreg_run(&db, &dir.0, &file);
    assert!(!ok, "a run against someone else's netserver succeeded\n{text}");
    let errors: Vec<String> =
        sqlx::query_scalar("SELECT error FROM jobs WHERE run_id = (SELECT max(id) FROM runs) AND error IS NOT NULL")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert!(!errors.is_empty(), "{text}");
    // netserver binds the IPv6 wildcard (dual-stack) unless told otherwise.
    let holder = format!("pid {pid} (netserver) listens on [::]:{port}");
    for e in &errors {
        assert!(
            e.contains(&format!("port {port} for {NET}.3.1 is already taken")),
            "{e}"
        );
        assert!(e.contains(&holder), "{e}");
    }
    assert!(text.contains(&holder), "{text}");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM results")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(after, before, "nothing is measured against a foreign netserver");
    drop((foreign, sut, ldg, net));
}
