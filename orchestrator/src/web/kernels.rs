//! The kernels kreg built: release, content key, compiler, build id, the runs that used
//! each; one build's config and log; the config differences of two builds.

use std::collections::BTreeMap;
use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde::Serialize;

use super::html::{self, esc, Live};
use super::params::Params;
use super::{json, ApiResult, AppState, PageResult};
use crate::view::{self, queries, ViewError};

pub async fn list_api(State(st): State<AppState>) -> ApiResult {
    json(&queries::builds(&st.db).await?)
}

fn used_by(list: &[String]) -> String {
    list.iter()
        .map(|u| match u.split_once(':') {
            Some((run, kernel)) => format!(
                "{} ({})",
                html::link(&format!("/runs/{run}"), &format!("run {run}")),
                esc(kernel)
            ),
            None => esc(u),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub async fn list_page(State(st): State<AppState>) -> PageResult {
    let builds = queries::builds(&st.db).await?;
    let rows: Vec<Vec<String>> = builds
        .iter()
        .map(|b| {
            vec![
                html::link(&format!("/kernels/{}", b.key), &b.key),
                esc(&b.release),
                format!(
                    "<code>{}</code>",
                    esc(&b.made.config_hash[..12.min(b.made.config_hash.len())])
                ),
                esc(&b.made.compiler),
                format!("<code>{}</code>", esc(&b.made.build_id)),
                esc(&b.built_on),
                html::time(&b.created_at),
                used_by(&b.used_by),
            ]
        })
        .collect();
    let mut body = if builds.is_empty() {
        "<p>No kernels built yet: a scenario's kernel with <code>build:</code> makes one.</p>".to_string()
    } else {
        html::table(
            "kernels",
            &[
                "key", "release", "config", "compiler", "build id", "built on", "built", "used by",
            ],
            &rows,
        )
    };
    if builds.len() >= 2 {
        let opts: String = builds
            .iter()
            .map(|b| format!("<option value=\"{0}\">{0} ({1})</option>", esc(&b.key), esc(&b.release)))
            .collect();
        let _ = write!(
            body,
            "<form class=\"pick\" method=\"get\" action=\"/kernels/diff\"><label>config of <select name=\"a\">{opts}</select></label>\
<label>against <select name=\"b\">{opts}</select></label><button type=\"submit\">Compare configs</button></form>"
        );
    }
    Ok(Html(html::layout("Kernels", &body, &Live::No)))
}

pub async fn api(State(st): State<AppState>, Path(key): Path<String>) -> ApiResult {
    json(&queries::build(&st.db, &key).await?)
}

pub async fn page(State(st): State<AppState>, Path(key): Path<String>) -> PageResult {
    let b = queries::build(&st.db, &key).await?;
    let mut body = html::facts(&[
        ("release", esc(&b.release)),
        ("content key", format!("<code>{}</code>", esc(&b.key))),
        ("localversion", esc(&b.made.localversion)),
        ("tree", format!("<code>{}</code>", esc(&b.made.tree_hash))),
        ("config hash", format!("<code>{}</code>", esc(&b.made.config_hash))),
        ("patches hash", format!("<code>{}</code>", esc(&b.made.patches_hash))),
        ("compiler", esc(&b.made.compiler)),
        ("build id", format!("<code>{}</code>", esc(&b.made.build_id))),
        ("built on", esc(&b.built_on)),
        ("files", esc(&b.path)),
        ("built", html::time(&b.created_at)),
        ("used by", used_by(&b.used_by)),
    ]);
    let _ = write!(
        body,
        "<details class=\"raw\"><summary>.config</summary>{}</details><details class=\"raw\" open><summary>Build log (last 200 lines)</summary>{}</details>",
        html::pre(b.config.as_deref().unwrap_or("")),
        html::pre(&html::tail(b.build_log.as_deref().unwrap_or(""), 200))
    );
    Ok(Html(html::layout(&format!("Kernel {}", b.release), &body, &Live::No)))
}

/// A config's options: `CONFIG_X=v`, and `# CONFIG_X is not set` as "n".
fn options(config: &str) -> BTreeMap<&str, &str> {
    let mut out = BTreeMap::new();
    for line in config.lines() {
        if let Some(rest) = line.strip_prefix("# ").and_then(|l| l.strip_suffix(" is not set")) {
            if rest.starts_with("CONFIG_") {
                out.insert(rest, "n");
            }
        } else if let Some((k, v)) = line.split_once('=') {
            if k.starts_with("CONFIG_") {
                out.insert(k, v);
            }
        }
    }
    out
}

#[derive(Serialize)]
pub struct ConfigDiff {
    pub a: String,
    pub b: String,
    /// (option, value in a, value in b); `None` where the option is absent.
    pub changes: Vec<(String, Option<String>, Option<String>)>,
}

pub fn config_diff(a: &str, b: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let (oa, ob) = (options(a), options(b));
    let mut names: Vec<&str> = oa.keys().chain(ob.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter(|n| oa.get(n) != ob.get(n))
        .map(|n| {
            (
                n.to_string(),
                oa.get(n).map(|v| v.to_string()),
                ob.get(n).map(|v| v.to_string()),
            )
        })
        .collect()
}

async fn diff_view(st: &AppState, q: Vec<(String, String)>) -> view::Result<ConfigDiff> {
    let p = Params::new(q, &["a", "b"])?;
    let (Some(a), Some(b)) = (p.get("a"), p.get("b")) else {
        return Err(ViewError::Invalid("give two builds: ?a=KEY&b=KEY".into()));
    };
    let (ba, bb) = (queries::build(&st.db, a).await?, queries::build(&st.db, b).await?);
    Ok(ConfigDiff {
        changes: config_diff(ba.config.as_deref().unwrap_or(""), bb.config.as_deref().unwrap_or("")),
        a: ba.key,
        b: bb.key,
    })
}

pub async fn diff_api(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> ApiResult {
    json(&diff_view(&st, q).await?)
}

pub async fn diff_page(State(st): State<AppState>, Query(q): Query<Vec<(String, String)>>) -> PageResult {
    let d = diff_view(&st, q).await?;
    let show = |v: &Option<String>| esc(v.as_deref().unwrap_or("(absent)"));
    let rows: Vec<Vec<String>> = d
        .changes
        .iter()
        .map(|(n, a, b)| vec![format!("<code>{}</code>", esc(n)), show(a), show(b)])
        .collect();
    let body = format!(
        "<p>{} options differ between {} and {}.</p>{}",
        d.changes.len(),
        html::link(&format!("/kernels/{}", d.a), &d.a),
        html::link(&format!("/kernels/{}", d.b), &d.b),
        html::table("configdiff", &["option", &d.a, &d.b], &rows)
    );
    Ok(Html(html::layout("Config differences", &body, &Live::No)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn config_differences_name_each_option_once() {
        let a = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=1\n";
        let b = "CONFIG_A=y\nCONFIG_B=m\nCONFIG_D=\"x\"\n";
        let d = super::config_diff(a, b);
        let names: Vec<&str> = d.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["CONFIG_B", "CONFIG_C", "CONFIG_D"]);
        assert_eq!(d[0].1.as_deref(), Some("n"));
        assert_eq!(d[1].2, None);
    }
}
