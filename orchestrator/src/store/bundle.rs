//! A run's rows taken out whole, and put into another database: what `kreg export` writes
//! and `kreg import` reads. Every table a run owns, each row as JSON (PostgreSQL's own
//! `to_jsonb`, read back by `jsonb_populate_record`, so no column is forgotten or retyped);
//! the run keeps its id and its rows theirs, so that its report reads the same; ids already
//! taken make the import fail whole, nothing written.

use sqlx::{PgPool, Postgres, Transaction};

use super::{Result, StoreError};

/// The tables a run's rows live in, in the order they are put back (references first),
/// with the condition that picks the run's rows (`$1` is the run's id).
const TABLES: &[(&str, &str)] = &[
    ("scenarios", "id = (SELECT scenario_id FROM runs WHERE id = $1)"),
    ("runs", "id = $1"),
    ("jobs", "run_id = $1"),
    ("results", "run_id = $1"),
    ("raw_outputs", "run_id = $1"),
    ("hosts", "run_id = $1"),
    ("host_settings", "run_id = $1"),
    (
        "kernel_builds",
        "key IN (SELECT build_key FROM kernel_build_runs WHERE run_id = $1)",
    ),
    ("kernel_build_runs", "run_id = $1"),
    ("bisections", "run_id = $1"),
    ("bisect_commits", "run_id = $1"),
    ("bisect_measurements", "run_id = $1"),
    ("fleet_runs", "run_id = $1"),
    ("run_files", "run_id = $1"),
];

/// Tables whose rows another run may share (put back only when missing).
const SHARED: &[&str] = &["kernel_builds"];

/// Every row run `run_id` owns, table by table, in [`TABLES`]' order.
pub async fn export(db: &PgPool, run_id: i64) -> Result<Vec<(String, Vec<serde_json::Value>)>> {
    super::run(db, run_id).await?;
    let mut out = Vec::new();
    for (table, which) in TABLES {
        let rows: Vec<serde_json::Value> = sqlx::query_scalar(&format!(
            "SELECT to_jsonb(t) FROM {table} t WHERE {which} ORDER BY 1::text"
        ))
        .bind(run_id)
        .fetch_all(db)
        .await?;
        out.push((table.to_string(), rows));
    }
    Ok(out)
}

/// Puts `tables` (as [`export`] gave them) into this database in one transaction, the
/// run's blobs stored first by the caller; the run's id. A shared row (its scenario, a
/// kernel build) already there is kept; any other row whose id is taken fails the import.
pub async fn import(db: &PgPool, tables: &[(String, Vec<serde_json::Value>)]) -> Result<i64> {
    let mut tx = db.begin().await?;
    let mut run_id = None;
    // The scenario's text is kept once per content: the run points at this database's row.
    let mut scenario_id = None;
    for (table, rows) in tables {
        let Some((table, _)) = TABLES.iter().find(|(t, _)| *t == table.as_str()) else {
            return Err(StoreError::Malformed(format!(
                "a bundle's table {table:?} is not one kreg keeps"
            )));
        };
        for row in rows {
            match *table {
                "scenarios" => scenario_id = Some(scenario(&mut tx, row).await?),
                "runs" => {
                    let mut row = row.clone();
                    row["scenario_id"] = scenario_id
                        .ok_or_else(|| StoreError::Malformed("a bundle's run without its scenario".into()))?
                        .into();
                    insert(&mut tx, table, &row).await?;
                }
                _ => insert(&mut tx, table, row).await?,
            }
        }
        if *table == "runs" {
            run_id = rows.first().and_then(|r| r["id"].as_i64());
        }
    }
    let run_id = run_id.ok_or_else(|| StoreError::Malformed("a bundle without its run".into()))?;
    // The sequences past the ids put back.
    for table in ["runs", "jobs", "results", "raw_outputs", "hosts", "host_settings"] {
        sqlx::query(&format!(
            "SELECT setval(pg_get_serial_sequence('{table}', 'id'), GREATEST((SELECT max(id) FROM {table}), 1))"
        ))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(run_id)
}

/// The id of the scenario `row` holds: this database's row of the same text, else a new one.
async fn scenario(tx: &mut Transaction<'_, Postgres>, row: &serde_json::Value) -> Result<i64> {
    let sha = row["sha256"].as_str().unwrap_or_default();
    let known: Option<i64> = sqlx::query_scalar("SELECT id FROM scenarios WHERE sha256 = $1")
        .bind(sha)
        .fetch_optional(&mut **tx)
        .await?;
    if let Some(id) = known {
        return Ok(id);
    }
    Ok(sqlx::query_scalar(
        "INSERT INTO scenarios SELECT (jsonb_populate_record(NULL::scenarios, $1 || jsonb_build_object('id', nextval(pg_get_serial_sequence('scenarios', 'id'))))).* RETURNING id",
    )
    .bind(row)
    .fetch_one(&mut **tx)
    .await?)
}

async fn insert(tx: &mut Transaction<'_, Postgres>, table: &str, row: &serde_json::Value) -> Result<()> {
    let conflict = if SHARED.contains(&table) {
        " ON CONFLICT DO NOTHING"
    } else {
        ""
    };
    sqlx::query(&format!(
        "INSERT INTO {table} SELECT * FROM jsonb_populate_record(NULL::{table}, $1){conflict}"
    ))
    .bind(row)
    .execute(&mut **tx)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(d) if d.code().as_deref() == Some("23505") => StoreError::Malformed(format!(
            "{table}: a row of the bundle's run is taken in this database ({}); import into a database without that run (a fresh one)",
            d.message()
        )),
        _ => StoreError::from(e),
    })?;
    Ok(())
}
