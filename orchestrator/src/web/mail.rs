//! The report page's blocks for a mail: the report as plain text of at most 80 columns
//! (`kreg report --format mail` prints the same), then in each shape kernel threads post
//! (`--format kernel-table`, `base-head`, `compare-kernels`, `tip-patch`), each with a button
//! that copies it and its download.

use super::html::{self, esc};
use crate::report::{self, Format};
use crate::view::Loaded;

/// What each shape is, for the block's title.
fn about(f: Format) -> &'static str {
    match f {
        Format::KernelTable => "kernels and runtime parameters, a baseline row per variant",
        Format::BaseHead => "base±sd%, head±sd%, change per workload",
        Format::CompareKernels => "mmtests' compare-kernels, Amean/Hmean (x.xx%)",
        Format::TipPatch => "tip[pct imp](CV) patch[pct imp](CV) blocks",
        _ => "",
    }
}

fn one(loaded: &Loaded, query: &str, format: Format, title: &str) -> String {
    let run = loaded.run_id;
    let name = format.name();
    let id = match format {
        Format::Mail => "mail-text".to_string(),
        _ => format!("shape-{name}"),
    };
    let file = format.download_file();
    format!(
        "<details class=\"mail\" data-format=\"{name}\"><summary>{}</summary>\
<p><button type=\"button\" data-copy=\"{id}\">Copy</button> {} · <code>kreg report {run} --format {name}</code></p>\
<pre id=\"{id}\">{}</pre></details>",
        esc(title),
        html::link(&format!("/runs/{run}/download/{file}{query}"), "download"),
        esc(&loaded.report(false).render(format))
    )
}

/// The folded blocks, under the report's tables; `query` keeps the page's settings for the
/// downloads.
pub(super) fn block(loaded: &Loaded, query: &str) -> String {
    let mut out = one(loaded, query, Format::Mail, "As text for a mail (80 columns)");
    for (name, f) in report::Format::NAMES.iter().filter(|(_, f)| f.is_shape()) {
        out.push_str(&one(
            loaded,
            query,
            *f,
            &format!("In a thread's shape: {name} ({})", about(*f)),
        ));
    }
    out
}
