//! Text that came from hosts, tools or files, made safe to show: control characters (an
//! escape sequence would drive the terminal) and the bidirectional overrides (which reorder
//! what a reader sees) written out as `\x1b`, `\u{202e}`. Pure.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is; `keep` are the controls a multi-line
/// text keeps.
fn hostile(c: char, keep: &[char]) -> bool {
    (c.is_control() && !keep.contains(&c)) || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape<'a>(s: &'a str, keep: &[char]) -> Cow<'a, str> {
    if !s.chars().any(|c| hostile(c, keep)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            _ if !hostile(c, keep) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Lines for a terminal: newlines and tabs kept, every other control character escaped.
pub fn printable(s: &str) -> Cow<'_, str> {
    escape(s, &['\n', '\t'])
}

/// One line, whatever the text holds: newlines escaped too.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escape(s, &[])
}

/// A p-value as reports print it, with its name: `p=1.23e-4`; one too small for a double
/// (it underflowed to 0) is `p < 1e-300`, never `p=0.00e0`.
pub fn p_value(p: f64) -> String {
    if p < 1e-300 {
        "p < 1e-300".into()
    } else {
        format!("p={p:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_written_out_and_plain_text_is_untouched() {
        assert!(matches!(printable("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            printable("\x1b[2J\x1b]0;owned\x07ok\n"),
            "\\x1b[2J\\x1b]0;owned\\x07ok\n"
        );
        assert_eq!(printable("a\rb\u{9b}c\u{202e}d"), "a\\rb\\u{9b}c\\u{202e}d");
        assert_eq!(one_line("line 1\nline 2\t|"), "line 1\\nline 2\\t|");
    }
}
