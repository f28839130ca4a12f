//! HTML helpers: escaping, the page frame, and the small pieces pages share.

use std::fmt::Write;

/// Text made safe for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether a page follows the run database's changes, and which.
pub enum Live {
    No,
    /// Every change (the runs page).
    All,
    /// The changes of one run.
    Run(i64),
}

/// A whole page: title, navigation, body. Live pages carry the events URL their script
/// follows; the parts they refresh are marked `data-live` with an id.
pub fn layout(title: &str, body: &str, live: &Live) -> String {
    let events = match live {
        Live::No => String::new(),
        Live::All => " data-events=\"/api/v1/events\"".to_string(),
        Live::Run(id) => format!(" data-events=\"/api/v1/events?run={id}\""),
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{t} · kreg</title><link rel=\"icon\" href=\"data:,\">\
<link rel=\"stylesheet\" href=\"/assets/kreg.css\"><script src=\"/assets/kreg.js\" defer></script></head>\
<body{events}><header><nav><a class=\"brand\" href=\"/\">kreg</a><a href=\"/\">Runs</a>\
<a href=\"/kernels\">Kernels</a><a href=\"/history\">History</a><a href=\"/alerts\">Alerts</a><a href=\"/fleet\">Fleet</a></nav></header>\
<main><h1>{t}</h1>\n{body}</main></body></html>\n",
        t = esc(title)
    )
}

/// A table in a horizontally scrolling box (narrow windows scroll the table, not the page).
pub fn table(class: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    table_with_ids(class, head, rows, &[])
}

/// [`table`] whose rows carry ids (`ids[i]` for row i; rows past the ids have none), so that
/// a live page can update a row in place.
pub fn table_with_ids(class: &str, head: &[&str], rows: &[Vec<String>], ids: &[String]) -> String {
    table_with_foot(class, head, rows, ids, None)
}

/// [`table_with_ids`] with a footer row (its id, its cells as HTML).
pub fn table_with_foot(
    class: &str,
    head: &[&str],
    rows: &[Vec<String>],
    ids: &[String],
    foot: Option<&(String, Vec<String>)>,
) -> String {
    let mut out = format!("<div class=\"scroll\"><table class=\"{class}\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for (i, r) in rows.iter().enumerate() {
        match ids.get(i) {
            Some(id) => {
                let _ = write!(out, "<tr id=\"{}\">", esc(id));
            }
            None => out.push_str("<tr>"),
        }
        for c in r {
            let _ = write!(out, "<td>{c}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody>");
    if let Some((id, cells)) = foot {
        let _ = write!(out, "<tfoot><tr id=\"{}\">", esc(id));
        for c in cells {
            let _ = write!(out, "<td>{c}</td>");
        }
        out.push_str("</tr></tfoot>");
    }
    out.push_str("</table></div>");
    out
}

/// A definition list of (term, already-escaped HTML) pairs.
pub fn facts(items: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"facts\">");
    for (k, v) in items {
        let _ = write!(out, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    }
    out.push_str("</dl>");
    out
}

pub fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(text))
}

/// A block of text (an output, a config, a log), escaped.
pub fn pre(text: &str) -> String {
    format!("<pre>{}</pre>", esc(text))
}

/// A verdict with its colour class ("no change" → `v-no-change`).
pub fn verdict(v: &str) -> String {
    format!("<span class=\"verdict v-{}\">{}</span>", v.replace(' ', "-"), esc(v))
}

pub fn time(t: &chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "<time datetime=\"{}\">{}</time>",
        t.to_rfc3339(),
        t.format("%Y-%m-%d %H:%M:%S UTC")
    )
}

/// "2 h 03 min", "4 min 05 s", "12 s".
pub fn duration(s: i64) -> String {
    match s {
        s if s >= 3600 => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{} min {:02} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

/// The end of a long text: its last `lines` lines.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_break_out_of_markup() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        let page = layout("run <1>", "", &Live::Run(1));
        assert!(page.contains("<title>run &lt;1&gt; · kreg</title>"));
        assert!(page.contains("data-events=\"/api/v1/events?run=1\""));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(12), "12 s");
        assert_eq!(duration(245), "4 min 05 s");
        assert_eq!(duration(7380), "2 h 03 min");
    }
}
