//! A scenario's text with one kernel's git ref replaced (the rest of the file, comments
//! and all, as written): what reproduces one measurement of a bisection with `kreg run`.

use crate::yaml::{self, Kind, Node};
use crate::Error;

fn get<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.kind {
        Kind::Map(entries) => entries
            .iter()
            .find(|(k, _)| matches!(&k.kind, Kind::Scalar(s, _) if s == key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// The byte offset of a 1-based (line, column in characters) position.
fn offset(text: &str, line: usize, col: usize) -> Option<usize> {
    let start: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
    let rest = &text[start..];
    rest.char_indices().nth(col - 1).map(|(i, _)| start + i)
}

/// The length in bytes of the scalar token starting at `at`: a quoted one to its closing
/// quote, a plain one to what ends it in a flow or block (`,` `]` `}` a space, a comment,
/// the line's end).
fn token_len(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    match rest.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let mut escaped = false;
            for (i, c) in rest.char_indices().skip(1) {
                match c {
                    '\\' if q == '"' && !escaped => escaped = true,
                    c if c == q && !escaped => return i + 1,
                    _ => escaped = false,
                }
            }
            rest.len()
        }
        _ => rest
            .find([',', ']', '}', ' ', '\t', '\n', '\r', '#'])
            .unwrap_or(rest.len()),
    }
}

/// `text` with kernel `kernel`'s `source: { git: …, ref: … }` set to `git_ref`.
pub fn with_kernel_ref(text: &str, kernel: &str, git_ref: &str) -> Result<String, Error> {
    let root = yaml::parse(text).map_err(|e| Error::invalid(format!("{}:{}: {}", e.line, e.col, e.message)))?;
    let kernels = match get(&root, "kernels").map(|k| &k.kind) {
        Some(Kind::Seq(items)) => items,
        _ => return Err(Error::invalid("the scenario has no list of kernels")),
    };
    let found = kernels
        .iter()
        .find(|k| matches!(get(k, "name").map(|n| &n.kind), Some(Kind::Scalar(s, _)) if s == kernel))
        .ok_or_else(|| Error::invalid(format!("the scenario has no kernel {kernel:?}")))?;
    let node = get(found, "source")
        .and_then(|s| get(s, "ref"))
        .ok_or_else(|| Error::invalid(format!("kernel {kernel} has no `source: {{ git: …, ref: … }}`")))?;
    let at = offset(text, node.line, node.col).ok_or(Error::invalid("a position outside the text"))?;
    let len = token_len(text, at);
    Ok(format!("{}{git_ref}{}", &text[..at], &text[at + len..]))
}

#[cfg(test)]
mod tests {
    use super::with_kernel_ref;

    #[test]
    fn only_the_ref_changes_in_flow_and_block_styles_quoted_or_not() {
        let flow = "# keep me\nkernels:\n  - { name: a, source: { git: /r, ref: v1 } }\n  - { name: b, source: { git: /r, ref: \"v1\" }, config: { base: tinyconfig } }\n";
        assert_eq!(
            with_kernel_ref(flow, "b", "0123abcd").unwrap(),
            flow.replace("ref: \"v1\"", "ref: 0123abcd")
        );
        let block = "kernels:\n  - name: k\n    source:\n      git: /r\n      ref: main # the branch\n    config: { base: tinyconfig }\n";
        let out = with_kernel_ref(block, "k", "deadbeef").unwrap();
        assert_eq!(out, block.replace("ref: main #", "ref: deadbeef #"));
        assert!(with_kernel_ref(block, "nope", "x")
            .unwrap_err()
            .to_string()
            .contains("no kernel \"nope\""));
        let s = crate::scenario::from_str(
            &format!("name: p\nhosts: {{ s: {{ role: sut, transport: {{ kind: lab }} }} }}\n{out}workloads: [ {{ name: w, kind: hackbench }} ]\n"),
            std::path::Path::new("/"),
        )
        .unwrap();
        assert!(format!("{:?}", s.kernels[0].source).contains("deadbeef"));
    }
}
