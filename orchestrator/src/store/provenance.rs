//! A run's provenance per kernel, from what its jobs and hosts recorded: the boots, tool
//! versions, builds, settings kreg changed, the tuning read back, the cgroups and the perf
//! events that could not be counted, and whether the SUT had /proc/schedstat.

use super::Result;
use crate::plan::JobState;
use crate::record::RawKind;
use crate::results::{BootSeen, BuildUsed, KernelProvenance, SettingChange, SetupUsed, ToolVersion, TuningUsed};

/// One item of a kernel's provenance, built as JSON by the query.
#[derive(sqlx::FromRow)]
struct KernelItem<T> {
    kernel: String,
    item: sqlx::types::Json<T>,
}

#[derive(sqlx::FromRow)]
struct ToolsRow {
    kernel: String,
    tool_versions: serde_json::Value,
}

/// The settings kreg changed per kernel.
async fn settings_of(db: &sqlx::PgPool, run_id: i64) -> Result<Vec<KernelItem<SettingChange>>> {
    // A tuning setting's knobs together (a governor has one per CPU); a lone knob named
    // with its path.
    Ok(sqlx::query_as(
        "SELECT kernel, item FROM (
           SELECT j.kernel, s.host, COALESCE(s.item, s.setting) AS what,
                  jsonb_build_object(
                    'host', s.host,
                    'name', CASE WHEN count(DISTINCT s.setting) = 1 AND min(s.item) IS NOT NULL
                                 THEN min(s.item) || ' ' || min(s.setting) ELSE COALESCE(s.item, s.setting) END,
                    'before', string_agg(DISTINCT s.before, ' / '), 'after', string_agg(DISTINCT s.after, ' / '),
                    'knobs', count(DISTINCT s.setting),
                    'restored', bool_and(s.restored_at IS NOT NULL)) AS item
           FROM host_settings s
           JOIN (SELECT DISTINCT run_id, boot_id, kernel FROM jobs WHERE run_id = $1) j
             ON j.run_id = s.run_id AND j.boot_id = s.boot_id
           WHERE s.run_id = $1
           GROUP BY j.kernel, s.host, COALESCE(s.item, s.setting)) t
         ORDER BY kernel, host, what",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?)
}

/// The tuning each kernel's jobs ran with, per variant, as read back before each job.
async fn tuning_of(db: &sqlx::PgPool, run_id: i64) -> Result<Vec<(String, TuningUsed)>> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT DISTINCT j.kernel, j.variant, o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id
         WHERE o.run_id = $1 AND (o.kind = $2 OR o.kind LIKE $3) ORDER BY 1, 2, 3",
    )
    .bind(run_id)
    .bind(RawKind::Tuning(None).name())
    .bind(RawKind::Tuning(Some("%".into())).name())
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(kernel, variant, content)| {
            let record = serde_json::from_str::<crate::tuning::Record>(&content).map_err(|e| e.to_string());
            (kernel, TuningUsed { variant, record })
        })
        .collect())
}

/// Per kernel: the cgroup each variant's workload ran in, and the perf events the SUT
/// could not count, from their typed records.
async fn cgroups_and_counters_of(db: &sqlx::PgPool, run_id: i64) -> Result<Vec<(String, SetupUsed)>> {
    let rows: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT DISTINCT j.kernel, j.variant, j.workload, o.kind, o.content FROM raw_outputs o JOIN jobs j ON j.id = o.job_id
         WHERE o.run_id = $1 AND o.kind IN ($2, $3) ORDER BY 1, 2, 3",
    )
    .bind(run_id)
    .bind(RawKind::CgroupSetup.name())
    .bind(RawKind::PerfStatUncounted.name())
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(kernel, variant, workload, kind, content)| {
            let item = if RawKind::parse(&kind) == Some(RawKind::CgroupSetup) {
                let what = serde_json::from_str::<crate::record::CgroupSetup>(&content)
                    .map(|s| s.what)
                    .map_err(|e| e.to_string());
                SetupUsed::Cgroup {
                    variant,
                    workload,
                    what,
                }
            } else {
                SetupUsed::Uncounted(content.lines().map(str::to_string).collect())
            };
            (kernel, item)
        })
        .collect())
}

/// The kernels of a run on which `sut` had no /proc/schedstat.
async fn without_schedstat(db: &sqlx::PgPool, run_id: i64, sut: &str) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT DISTINCT j.kernel FROM hosts h JOIN jobs j ON j.run_id = h.run_id AND j.boot_id = h.boot_id
         WHERE h.run_id = $1 AND h.name = $2 AND h.schedstat_version IS NULL",
    )
    .bind(run_id)
    .bind(sut)
    .fetch_all(db)
    .await?)
}

/// Each item once, in the order first seen, under its kernel.
fn gather<T: PartialEq>(
    out: &mut Vec<KernelProvenance>,
    rows: impl IntoIterator<Item = (String, T)>,
    list: fn(&mut KernelProvenance) -> &mut Vec<T>,
) {
    for (kernel, item) in rows {
        let p = match out.iter().position(|p| p.kernel == kernel) {
            Some(i) => &mut out[i],
            None => {
                out.push(KernelProvenance {
                    kernel,
                    ..Default::default()
                });
                out.last_mut().expect("pushed")
            }
        };
        let v = list(p);
        if !v.contains(&item) {
            v.push(item);
        }
    }
}

fn items<T>(rows: Vec<KernelItem<T>>) -> impl Iterator<Item = (String, T)> {
    rows.into_iter().map(|r| (r.kernel, r.item.0))
}

/// Provenance per kernel; `sut` names the host whose schedstat support is reported.
pub async fn provenance(db: &sqlx::PgPool, run_id: i64, sut: &str) -> Result<Vec<KernelProvenance>> {
    // Boots: a host row is tied to its kernel through the jobs that ran on its boot id.
    let boots: Vec<KernelItem<BootSeen>> = sqlx::query_as(
        "SELECT DISTINCT j.kernel, h.name,
                jsonb_build_object('host', h.name, 'release', h.kernel_release, 'cpus', h.nr_cpus,
                                   'cpu_model', h.cpu_model, 'cmdline', h.cmdline) AS item
         FROM hosts h JOIN jobs j ON j.run_id = h.run_id AND j.boot_id = h.boot_id
         WHERE h.run_id = $1 ORDER BY 1, 2",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?;
    let tools: Vec<ToolsRow> =
        sqlx::query_as("SELECT DISTINCT kernel, tool_versions FROM jobs WHERE run_id = $1 AND state = $2")
            .bind(run_id)
            .bind(JobState::Done.as_str())
            .fetch_all(db)
            .await?;
    let builds: Vec<KernelItem<BuildUsed>> = sqlx::query_as(
        "SELECT r.kernel, jsonb_build_object('key', b.key, 'config_hash', b.config_hash) AS item
         FROM kernel_build_runs r JOIN kernel_builds b ON b.key = r.build_key WHERE r.run_id = $1",
    )
    .bind(run_id)
    .fetch_all(db)
    .await?;
    let mut out: Vec<KernelProvenance> = Vec::new();
    gather(&mut out, items(boots), |p| &mut p.boots);
    let versions = tools.into_iter().flat_map(|t| {
        let map = t.tool_versions.as_object().cloned().unwrap_or_default();
        map.into_iter().map(move |(tool, v)| {
            let version = v.as_str().unwrap_or("").to_string();
            (t.kernel.clone(), ToolVersion { tool, version })
        })
    });
    gather(&mut out, versions, |p| &mut p.tools);
    gather(&mut out, items(builds), |p| &mut p.builds);
    gather(&mut out, items(settings_of(db, run_id).await?), |p| &mut p.settings);
    gather(&mut out, tuning_of(db, run_id).await?, |p| &mut p.tuning);
    gather(&mut out, cgroups_and_counters_of(db, run_id).await?, |p| &mut p.setup);
    for k in without_schedstat(db, run_id, sut).await? {
        match out.iter_mut().find(|p| p.kernel == k) {
            Some(p) => p.no_schedstat = true,
            None => out.push(KernelProvenance {
                kernel: k,
                no_schedstat: true,
                ..Default::default()
            }),
        }
    }
    for p in out.iter_mut() {
        p.tools.sort();
    }
    Ok(out)
}
