//! A YAML document as a tree of nodes that remember where they start (line and column, both
//! 1-based), so that every validation message can point at the spot in the file.

pub mod cx;
mod section;

pub use section::Section;

use saphyr_parser::{Event, Parser, ScalarStyle};

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub line: usize,
    pub col: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A scalar and whether it was quoted (a quoted scalar is always a string).
    Scalar(String, bool),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// What a user would call this node's type, for "expected X, found Y" messages.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
            Kind::Scalar(s, quoted) => {
                if *quoted {
                    "a string"
                } else if is_null(s) {
                    "nothing (null)"
                } else if s.parse::<f64>().is_ok() {
                    "a number"
                } else if matches!(s.as_str(), "true" | "false") {
                    "a boolean"
                } else {
                    "a string"
                }
            }
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar(s, false) if is_null(s))
    }
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// A syntax error, with its 1-based position.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

enum Open {
    Seq(Node, Vec<Node>),
    Map(Node, Vec<(Node, Node)>, Option<Node>),
}

/// Parses the one document of `text`; a second document is an error at its start. An
/// empty document is a null scalar at 1:1.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Node> = None;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| SyntaxError {
            line: e.marker().line(),
            col: e.marker().col() + 1,
            message: e.info().to_string(),
        })?;
        let (line, col) = (span.start.line(), span.start.col() + 1);
        let at = |kind| Node { line, col, kind };
        let finished = match event {
            Event::Scalar(value, style, _, _) => {
                Some(at(Kind::Scalar(value.into_owned(), style != ScalarStyle::Plain)))
            }
            Event::SequenceStart(..) => {
                stack.push(Open::Seq(at(Kind::Seq(Vec::new())), Vec::new()));
                None
            }
            Event::MappingStart(..) => {
                stack.push(Open::Map(at(Kind::Map(Vec::new())), Vec::new(), None));
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Open::Seq(mut node, items)) => {
                    node.kind = Kind::Seq(items);
                    Some(node)
                }
                _ => unreachable!("the parser balances sequences"),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Open::Map(mut node, entries, _)) => {
                    node.kind = Kind::Map(entries);
                    Some(node)
                }
                _ => unreachable!("the parser balances mappings"),
            },
            Event::Alias(_) => {
                return Err(SyntaxError {
                    line,
                    col,
                    message: "YAML aliases (*name) are not supported here".into(),
                })
            }
            Event::DocumentStart(_) if root.is_some() => {
                return Err(SyntaxError {
                    line,
                    col,
                    message: "a second YAML document: a scenario file holds one (remove the `---` and what follows, or merge them)".into(),
                })
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentStart(_) | Event::DocumentEnd | Event::Nothing => {
                None
            }
        };
        if let Some(node) = finished {
            match stack.last_mut() {
                None => root = Some(node),
                Some(Open::Seq(_, items)) => items.push(node),
                Some(Open::Map(_, entries, pending)) => match pending.take() {
                    None => *pending = Some(node),
                    Some(key) => entries.push((key, node)),
                },
            }
        }
    }
    Ok(root.unwrap_or(Node {
        line: 1,
        col: 1,
        kind: Kind::Scalar(String::new(), false),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let n = parse("a: 1\nb:\n  - x\n  - {c: d}\n").unwrap();
        let Kind::Map(entries) = &n.kind else { panic!() };
        assert_eq!((entries[1].0.line, entries[1].0.col), (2, 1));
        let Kind::Seq(items) = &entries[1].1.kind else { panic!() };
        assert_eq!((items[0].line, items[0].col), (3, 5));
        assert_eq!((items[1].line, items[1].col), (4, 5));
    }

    #[test]
    fn syntax_error_has_position() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.line >= 1 && e.col >= 1, "{e:?}");
    }

    #[test]
    fn a_second_document_is_an_error_at_its_start() {
        let e = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 1), "{e:?}");
        assert!(e.message.contains("second YAML document"), "{e:?}");
        assert!(parse("---\na: 1\n...\n").is_ok());
    }

    #[test]
    fn quoted_numbers_are_strings() {
        assert_eq!(parse("'1'").unwrap().type_name(), "a string");
        assert_eq!(parse("1").unwrap().type_name(), "a number");
    }
}
