//! `kreg kernels`: the kernels kreg built, and the runs that used them.

use std::process::ExitCode;

use anyhow::Result;
use sqlx::PgPool;

use kreg::store;

pub async fn kernels(db: &PgPool) -> Result<ExitCode> {
    // Oldest first: the list grows at the bottom, as a terminal reads it.
    let builds = store::pages::builds(db).await?;
    if builds.is_empty() {
        println!("no kernels built yet");
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "key",
        "release",
        "config hash",
        "compiler",
        "built on",
        "built",
        "used by (run:kernel)",
        "files",
    ]);
    for b in builds.into_iter().rev() {
        table.add_row(vec![
            b.key,
            b.release,
            b.made.config_hash[..12.min(b.made.config_hash.len())].to_string(),
            b.made.compiler,
            b.built_on,
            b.created_at.format("%Y-%m-%d %H:%M").to_string(),
            b.used_by.join(" "),
            b.path,
        ]);
    }
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}
