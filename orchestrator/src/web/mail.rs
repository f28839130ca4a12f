//! The report page's block for a mail: the report as plain text of at most 80 columns
//! (`kreg report --format mail` prints the same), with a button that copies it and its
//! download.

use super::html::{self, esc};
use crate::report;
use crate::view::Loaded;

/// The folded block, under the report's tables; `query` keeps the page's settings for the
/// download.
pub(super) fn block(loaded: &Loaded, query: &str) -> String {
    let run = loaded.run_id;
    format!(
        "<details class=\"mail\"><summary>As text for a mail (80 columns)</summary>\
<p><button type=\"button\" data-copy=\"mail-text\">Copy</button> {} · <code>kreg report {run} --format mail</code></p>\
<pre id=\"mail-text\">{}</pre></details>",
        html::link(&format!("/runs/{run}/download/report-mail.txt{query}"), "download"),
        esc(&loaded.report(false).render(report::Format::Mail))
    )
}
