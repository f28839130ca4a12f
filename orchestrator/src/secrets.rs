//! The secrets this process has read (database passwords, agent tokens, the password of
//! `DATABASE_URL`), so that no text kreg stores, prints or serves carries one: every raw
//! output and failure reason goes through [`redact`] on its way into the database, and
//! every message on its way to the terminal. A secret is remembered when it is read, for
//! the life of the process.

use std::borrow::Cow;
use std::sync::RwLock;

/// What a secret reads as wherever it would have appeared.
pub const MASK: &str = "[secret]";

/// Secrets shorter than this are not masked: a password of one or two characters would
/// mask every occurrence of those characters in every output. `kreg validate` could not
/// say which; such passwords are weak anyway.
pub const MIN_LEN: usize = 4;

static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Notes `secret` (once; trimmed of a line end) for [`redact`].
pub fn remember(secret: &str) {
    let s = secret.trim_end_matches(['\r', '\n']);
    if s.len() < MIN_LEN {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    if !known.iter().any(|k| k == s) {
        known.push(s.to_string());
        // Longest first: a secret that holds another is masked whole.
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
}

/// `text` with every remembered secret replaced by [`MASK`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    let mut out = Cow::Borrowed(text);
    for k in known.iter() {
        if out.contains(k.as_str()) {
            out = Cow::Owned(out.replace(k.as_str(), MASK));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_secrets_are_masked_longest_first_and_short_ones_are_not() {
        remember("pw-Secret-1\n");
        remember("pw-Secret-1-and-more");
        remember("ab");
        let text = "a pw-Secret-1-and-more b pw-Secret-1 c ab";
        assert_eq!(redact(text), format!("a {MASK} b {MASK} c ab"));
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }
}
