//! The reader's side of a YAML file: typed getters that check each value where it stands
//! and collect every problem with its position, so a file is reported in one pass.

use std::path::{Path, PathBuf};

use super::{Kind, Node, Section};

/// One problem in a scenario file, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl Diagnostic {
    /// `FILE:LINE:COL: message`, the form editors and compilers use.
    pub fn render(&self, file: &str) -> String {
        // One line whatever the message holds (a library's error, a value with newlines).
        format!(
            "{}:{}:{}: {}",
            crate::text::one_line(file),
            self.line,
            self.col,
            crate::text::one_line(&self.message)
        )
    }
}

/// A file named in the document, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRef {
    pub path: PathBuf,
    pub line: usize,
    pub col: usize,
    /// What it is, as the messages name it ("a patch file", "token_file", …).
    pub what: String,
    pub kind: FileKind,
    /// The name as the scenario wrote it (a secret's name on a fleet worker, which maps it
    /// to a file of its own).
    pub written: String,
}

/// Whether a run carries a file (stored by its content with the run, and taken from there by
/// whoever drives it) or reads it where it is driven (a secret: a token, a password, an ssh
/// key or its known hosts, which stay the reading host's own and never enter the database).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Carried,
    Secret,
}

/// The longest message a diagnostic carries: a value quoted in it is cut, not echoed whole.
const MAX_MESSAGE: usize = 400;

/// The allowed name closest to `word` when it is a likely typo (a few edits away).
pub fn closest<'a>(word: &str, allowed: &[&'a str]) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    let word = word.to_ascii_lowercase();
    allowed
        .iter()
        .map(|a| (distance(&word, a), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 4) && *d < a.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

pub(crate) struct Cx<'a> {
    pub(crate) diags: Vec<Diagnostic>,
    pub(crate) base_dir: &'a Path,
    /// Every file the scenario names, with where.
    pub(crate) files: Vec<FileRef>,
}

/// `message`, cut to [`MAX_MESSAGE`] characters when a quoted value made it long.
fn clip_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE) {
        None => message,
        Some((at, _)) => format!("{}… (cut; the message is {} bytes)", &message[..at], message.len()),
    }
}

/// The entries of a mapping whose keys were all checked against the allowed list.
pub(crate) struct Fields<'n> {
    pub(crate) node: &'n Node,
    pub(crate) entries: Vec<(&'n str, &'n Node)>,
}

impl<'n> Fields<'n> {
    pub(crate) fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

impl<'a> Cx<'a> {
    pub(crate) fn error(&mut self, node: &Node, message: impl Into<String>) {
        self.diags.push(Diagnostic {
            line: node.line,
            col: node.col,
            message: clip_message(message.into()),
        });
    }

    /// A file the scenario names that its runs carry (see [`FileKind`]), taken from its
    /// folder when relative, and noted with its position so that `kreg validate` can check
    /// it exists.
    pub(crate) fn file(&mut self, node: &Node, what: &str) -> Option<PathBuf> {
        self.file_of(node, what, FileKind::Carried)
    }

    /// A secret file the scenario names (see [`FileKind`]), noted as [`Cx::file`] does.
    pub(crate) fn secret(&mut self, node: &Node, what: &str) -> Option<PathBuf> {
        self.file_of(node, what, FileKind::Secret)
    }

    fn file_of(&mut self, node: &Node, what: &str, kind: FileKind) -> Option<PathBuf> {
        let s = self.string(node, what)?;
        if s.is_empty() || s.contains('\0') {
            self.error(node, format!("{what}: {s:?} is not a file name"));
            return None;
        }
        let path = self.base_dir.join(&s);
        self.files.push(FileRef {
            path: path.clone(),
            line: node.line,
            col: node.col,
            what: what.to_string(),
            kind,
            written: s.clone(),
        });
        Some(path)
    }

    pub(crate) fn expected(&mut self, node: &Node, what: &str, expected: &str) {
        let found = node.type_name();
        self.error(node, format!("{what}: expected {expected}, found {found}"));
    }

    /// The mapping `node` read as `section`: a key it does not take is refused (with the
    /// closest it does), one given twice too.
    pub(crate) fn map<'n>(&mut self, node: &'n Node, what: &str, section: &Section) -> Option<Fields<'n>> {
        let allowed = &section.all();
        let Kind::Map(entries) = &node.kind else {
            self.expected(node, what, "a mapping");
            return None;
        };
        let mut out = Vec::new();
        for (k, v) in entries {
            let Kind::Scalar(key, _) = &k.kind else {
                self.expected(k, &format!("a key of {what}"), "a plain name");
                continue;
            };
            if !allowed.contains(&key.as_str()) {
                let hint = closest(key, allowed)
                    .map(|c| format!("did you mean `{c}`? "))
                    .unwrap_or_default();
                self.error(
                    k,
                    format!(
                        "unknown field `{key}` in {what}; {hint}expected one of: {}",
                        allowed.join(", ")
                    ),
                );
                continue;
            }
            if out.iter().any(|(seen, _)| seen == key) {
                self.error(k, format!("field `{key}` appears twice in {what}"));
                continue;
            }
            out.push((key.as_str(), v));
        }
        Some(Fields { node, entries: out })
    }

    /// The one key of `keys` that `f` holds; when it holds none or several, `message`
    /// (given how many) is reported at `node`.
    pub(crate) fn one_of(
        &mut self,
        f: &Fields,
        keys: &[&'static str],
        node: &Node,
        message: impl FnOnce(usize) -> String,
    ) -> Option<&'static str> {
        let given: Vec<&'static str> = keys.iter().copied().filter(|k| f.get(k).is_some()).collect();
        if given.len() == 1 {
            return Some(given[0]);
        }
        self.error(node, message(given.len()));
        None
    }

    pub(crate) fn required<'n>(&mut self, f: &Fields<'n>, key: &str, what: &str) -> Option<&'n Node> {
        let v = f.get(key);
        if v.is_none() {
            self.error(f.node, format!("missing field `{key}` in {what}"));
        }
        v
    }

    pub(crate) fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.kind {
            Kind::Scalar(s, quoted) if *quoted || !node.is_null() => Some(s.clone()),
            _ => {
                self.expected(node, what, "a string");
                None
            }
        }
    }

    pub(crate) fn name(&mut self, node: &Node, what: &str) -> Option<String> {
        let s = self.string(node, what)?;
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'));
        if !ok {
            self.error(
                node,
                format!("{what}: {s:?} is not a valid name (1 to 64 of letters, digits, '.', '_', '-', '+')"),
            );
            return None;
        }
        Some(s)
    }

    pub(crate) fn uint(&mut self, node: &Node, what: &str, min: u64, max: u64) -> Option<u64> {
        let parsed = match &node.kind {
            Kind::Scalar(s, false) => s.parse::<u64>().ok(),
            _ => None,
        };
        match parsed {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(n) => {
                self.error(node, format!("{what}: {n} is out of range ({min} to {max})"));
                None
            }
            None => {
                self.expected(node, what, &format!("a whole number from {min} to {max}"));
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, node: &Node, what: &str) -> Option<bool> {
        match &node.kind {
            Kind::Scalar(s, false) if s == "true" => Some(true),
            Kind::Scalar(s, false) if s == "false" => Some(false),
            _ => {
                self.expected(node, what, "true or false");
                None
            }
        }
    }

    /// A non-empty list of strings: a program and its arguments, never a shell line.
    /// `hint` says what to give when the list is empty.
    pub(crate) fn argv(&mut self, node: &Node, what: &str, hint: &str) -> Option<Vec<String>> {
        let items = self.seq(node, what)?;
        if items.is_empty() {
            self.error(node, format!("{what}: {hint}"));
            return None;
        }
        let out: Vec<Option<String>> = items
            .iter()
            .map(|i| self.string(i, &format!("an element of {what}")))
            .collect();
        out.into_iter().collect()
    }

    /// A whole number at `key` of `f` within `min..=max` (which fits in 32 bits), or
    /// `default` when the key is absent.
    pub(crate) fn uint_or(
        &mut self,
        f: &Fields,
        key: &str,
        what: &str,
        (min, max): (u64, u64),
        default: u32,
    ) -> Option<u32> {
        debug_assert!(max <= u32::MAX as u64);
        match f.get(key) {
            Some(n) => self.uint(n, what, min, max).map(|v| v as u32),
            None => Some(default),
        }
    }

    /// A boolean at `key` of `f`, or `default` when the key is absent.
    pub(crate) fn bool_or(&mut self, f: &Fields, key: &str, what: &str, default: bool) -> Option<bool> {
        match f.get(key) {
            Some(n) => self.boolean(n, what),
            None => Some(default),
        }
    }

    pub(crate) fn seq<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        match &node.kind {
            Kind::Seq(items) => Some(items),
            _ => {
                self.expected(node, what, "a list");
                None
            }
        }
    }

    /// A duration: a number of seconds, or a number followed by `s`, `m` or `h`.
    pub(crate) fn duration(&mut self, node: &Node, what: &str) -> Option<u64> {
        let text = match &node.kind {
            Kind::Scalar(s, _) => s.trim().to_string(),
            _ => String::new(),
        };
        let (num, mult) = match text.chars().last() {
            Some('s') => (&text[..text.len() - 1], 1),
            Some('m') => (&text[..text.len() - 1], 60),
            Some('h') => (&text[..text.len() - 1], 3600),
            _ => (text.as_str(), 1),
        };
        match num.parse::<u64>() {
            Ok(n) if n > 0 && n.saturating_mul(mult) <= 7 * 24 * 3600 => Some(n * mult),
            Ok(_) => {
                self.error(
                    node,
                    format!("{what}: `{text}` is out of range (more than 0, at most a week)"),
                );
                None
            }
            Err(_) => {
                self.expected(node, what, "a duration such as 90, 90s, 10m or 2h (at most a week)");
                None
            }
        }
    }
}
