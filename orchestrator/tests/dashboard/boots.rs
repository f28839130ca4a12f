//! One boot a kernel: the report page shows the change as unconfirmed and the warm-ups
//! marked.

use super::*;

/// Two kernels, each measured in a boot of its own (`boots: 1`), one warm-up run a boot:
/// the report page shows the change as unconfirmed (in the CLI's words, marked as such),
/// says the warm-ups were not judged, and the samples page lists them marked.
///
/// The loopback agent cannot boot a second kernel, so both kernels run on this machine's
/// running kernel; what a second boot leaves in the database is then stood in: the jobs of
/// `next` get a boot id of their own, and their values are made 10% higher.
#[tokio::test]
async fn one_boot_a_kernel_shows_an_unconfirmed_change_and_warmups_marked() {
    let db = fresh_db("dash_unconfirmed").await;
    let agent = Agent::start();
    let dir = Scratch::new("dash_unconfirmed");
    let file = dir.0.join("s.yaml");
    std::fs::write(
        &file,
        format!(
            r#"
name: dashboard-one-boot
{hosts}kernels: [ {{ name: current, source: running }}, {{ name: next, source: running }} ]
variants: [ {{ name: default }} ]
workloads:
  - name: probe
    kind: command
    argv: [sh, -c, "n=$(od -An -N1 -tu1 /dev/urandom); echo value: $((100 + n % 5))"]
    timeout: 60
    metrics:
      value: {{ regex: "value: ([0-9.]+)", unit: ops, higher_is_better: true, kind: throughput }}
iterations: 6
warmup: 1
"#,
            hosts = agent.hosts_yaml()
        ),
    )
    .unwrap();
    let out = kreg(&db, &dir.0).arg("run").arg(&file).output().unwrap();
    common::assert_ok(&out, "run");
    for sql in [
        "UPDATE jobs SET boot_id = 'stand-in-boot-of-next' WHERE kernel = 'next'",
        "UPDATE results r SET value = r.value * 1.1 FROM jobs j WHERE j.id = r.job_id AND j.kernel = 'next'",
    ] {
        sqlx::query(sql).execute(&db.pool).await.unwrap();
    }
    let rep = report_json(&db, &dir.0, 1);
    let next = rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kernel"] == "next")
        .expect("a row of next")
        .clone();
    assert_eq!(next["comparison"]["verdict"], "unconfirmed improvement", "{next}");

    let server = Server::start(&db, &dir.0);
    let b = Browser::start().await;
    let base = &server.base;
    visit(&b, &format!("{base}/runs/1/report?show=all"), "one-boot-report").await;
    // Left at a phone's width by `visit`: the report's table is wider than the screen, says
    // so above it, and is shaded at its right edge.
    let phone = b
        .js("const h = document.querySelector('.scroll-hint'); return [h !== null && !h.hidden && h.offsetHeight > 0, document.querySelectorAll('.scroll.overflows').length]")
        .await;
    assert!(phone[0] == json!(true) && phone[1].as_u64() > Some(0), "{phone}");
    let hint = b.js("return document.querySelector('.scroll-hint').textContent").await;
    assert!(hint.as_str().unwrap_or("").contains("verdict"), "{hint}");
    // The report as text for a mail, on the page, no line over 80 columns: exactly what
    // `kreg report --format mail` prints.
    let mail = b.js("return document.getElementById('mail-text').textContent").await;
    let mail = mail.as_str().unwrap().to_string();
    assert!(mail.lines().all(|l| l.chars().count() <= 80), "{mail}");
    assert!(
        mail.contains("unconfirmed improvement") && mail.contains("90% CI"),
        "{mail}"
    );
    let cli = kreg(&db, &dir.0)
        .args(["report", "1", "--format", "mail"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&cli.stdout).trim_end(), mail.trim_end());
    // The same report in each thread's shape, on the page as `kreg report --format SHAPE`
    // prints it, within 80 columns, with kreg's verdict beside the figures.
    for shape in ["kernel-table", "base-head", "compare-kernels", "tip-patch"] {
        let on_page = b
            .js(&format!("return document.getElementById('shape-{shape}').textContent"))
            .await;
        let on_page = on_page
            .as_str()
            .unwrap_or_else(|| panic!("no block {shape}"))
            .to_string();
        assert!(on_page.lines().all(|l| l.chars().count() <= 80), "{on_page}");
        assert!(
            on_page.contains("impr?"),
            "{shape}: the unconfirmed improvement\n{on_page}"
        );
        let cli = kreg(&db, &dir.0)
            .args(["report", "1", "--format", shape])
            .output()
            .unwrap();
        common::assert_ok(&cli, shape);
        assert_eq!(
            String::from_utf8_lossy(&cli.stdout).trim_end(),
            on_page.trim_end(),
            "{shape}"
        );
        let got = reqwest::get(format!("{base}/runs/1/download/report-{shape}.txt"))
            .await
            .unwrap();
        assert_eq!(got.status(), 200, "{shape}");
        assert_eq!(got.text().await.unwrap().trim_end(), on_page.trim_end(), "{shape}");
    }
    b.client.set_window_size(1280, 900).await.unwrap();
    b.js("document.querySelectorAll('details.mail').forEach(d => d.open = d.dataset.format == 'tip-patch' || d.dataset.format == 'mail'); document.querySelector('details.mail').scrollIntoView(); return 0")
        .await;
    std::fs::write(
        shots_dir().join("report-mail-1280.png"),
        b.client.screenshot().await.unwrap(),
    )
    .unwrap();
    let page = b.text("main").await;
    assert!(page.contains("unconfirmed improvement"), "{page}");
    assert!(
        page.contains("unconfirmed: each side's runs share boots of their own"),
        "{page}"
    );
    assert!(
        page.contains("warm-up (stored, not judged): kernel next, variant default, probe: 1 run"),
        "{page}"
    );
    let marked = b
        .js("return [...document.querySelectorAll('.v-unconfirmed-improvement')].map(e => e.textContent.trim())")
        .await;
    assert!(
        marked
            .as_array()
            .is_some_and(|m| m.iter().any(|t| t == "unconfirmed improvement")),
        "{marked}"
    );
    let samples = format!("{base}/runs/1/samples?workload=probe&metric=value&kernel=next&variant=default");
    visit(&b, &samples, "one-boot-samples").await;
    let rows = b
        .js("return [...document.querySelectorAll('table.samples tbody tr')].map(tr => tr.children[0].textContent.trim())")
        .await;
    let rows: Vec<String> = serde_json::from_value(rows).unwrap();
    assert_eq!(rows.len(), 7, "{rows:?}");
    assert_eq!(rows[0], "warm-up, not judged", "{rows:?}");
    assert!(rows[1..].iter().all(|r| r.parse::<u32>().is_ok()), "{rows:?}");
    assert!(b.text("main").await.contains("1 warm-up run"));
    let api: Value = reqwest::get(samples.replace("/runs/1/samples", "/api/v1/runs/1/samples"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let flags: Vec<bool> = api["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["warmup"].as_bool().unwrap())
        .collect();
    assert_eq!(flags.iter().filter(|w| **w).count(), 1, "{api}");
    b.close().await;
}
