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
/// Seconds as a person reads them: "4.2 s", "3 min 10 s", "1 h 05 min".
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0);
    if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{} min {:02} s", (s / 60.0) as u64, (s as u64) % 60)
    } else {
        format!("{} h {:02} min", (s / 3600.0) as u64, ((s as u64) % 3600) / 60)
    }
}

pub fn p_value(p: f64) -> String {
    if p < 1e-300 {
        "p < 1e-300".into()
    } else {
        format!("p={p:.2e}")
    }
}

/// One word for a POSIX shell, whatever it holds: left bare only when every character is
/// one no shell treats specially, else in single quotes (a `'` inside written `'\''`).
/// Every command kreg prints for a person to paste, and every argument sent to sshd, is
/// quoted this way: a git ref may hold `$( ) ;`, a name a newline.
pub fn shell_quote(arg: &str) -> Cow<'_, str> {
    let plain =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | ':' | '=' | '@' | ',' | '+' | '%');
    if !arg.is_empty() && arg.chars().all(plain) {
        return Cow::Borrowed(arg);
    }
    Cow::Owned(format!("'{}'", arg.replace('\'', r"'\''")))
}

/// An argv as one line a shell splits back into the same words.
pub fn shell_words<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| shell_quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each word round-trips through a real shell: `sh -c 'printf "%s\0" WORDS'` prints
    /// back exactly the words given, and nothing runs.
    #[test]
    fn quoted_words_come_back_from_a_real_shell_unchanged() {
        let words = [
            "plain",
            "g$(touch${IFS}pwned)",
            "a;b",
            "it's",
            "",
            "new\nline",
            "`id`",
            "x|y&z>w<v",
            "* ? [a] ~ # !",
            "tab\there",
            "ünïcode",
            "--flag=1,2",
        ];
        let line = format!("printf '%s\\0' {}", shell_words(&words));
        let out = std::process::Command::new("sh").arg("-c").arg(&line).output().unwrap();
        assert!(out.status.success(), "{line}: {out:?}");
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(got, words, "{line}");
        assert_eq!(shell_quote("v6.9-rc1"), "v6.9-rc1");
    }

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
