//! The scalar values of a YAML text with the keys they stand under, as the loader's parser
//! reads them, without building a tree.
//!
//! Redaction needs to know which parts of a file's source are the values of secret-named
//! keys (`password: hunter2`), including in files too long to keep as a tree and in files
//! the loader refused: a syntax error half-way still leaves the values before it known. The
//! walk is the same parser the loader uses, so a key is what the loader would call a key,
//! whatever the quoting, flow style or line layout; it stops at the first syntax error.

use saphyr_parser::{Event, Parser};

use super::{Limits, Offsets};
use crate::diag::Span;

/// One scalar mapping value: its key (decoded), its text (decoded) and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedScalar {
    pub key: String,
    pub value: String,
    pub span: Span,
}

/// What an open collection expects next.
enum Open {
    Seq,
    /// A mapping; `Some(key)` once its key was read and the value is next. A key that is
    /// not a scalar is kept as `Some("")`, which names nothing.
    Map(Option<String>),
}

/// Iterator over the [`KeyedScalar`]s of a text, in source order. It ends at the end of the
/// text, at the first syntax error, or where nesting passes the loader's depth limit.
pub struct KeyedScalars<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    offsets: Offsets<'a>,
    open: Vec<Open>,
    max_depth: usize,
    done: bool,
}

/// Walk `src` (a byte-order mark at its start is skipped; offsets still count it).
pub fn keyed_scalars(src: &str) -> KeyedScalars<'_> {
    let (bom, text) = match src.strip_prefix('\u{feff}') {
        Some(rest) => ('\u{feff}'.len_utf8(), rest),
        None => (0, src),
    };
    KeyedScalars {
        parser: Parser::new_from_str(text),
        offsets: Offsets::new(text, bom),
        open: Vec::new(),
        max_depth: Limits::default().max_depth,
        done: false,
    }
}

impl KeyedScalars<'_> {
    /// A value that is not a scalar (a collection, an alias) completed in the innermost
    /// open collection.
    fn complete_other(&mut self) {
        if let Some(Open::Map(key)) = self.open.last_mut() {
            *key = match key {
                None => Some(String::new()),
                Some(_) => None,
            };
        }
    }
}

impl Iterator for KeyedScalars<'_> {
    type Item = KeyedScalar;

    fn next(&mut self) -> Option<KeyedScalar> {
        while !self.done {
            let Some(Ok((event, raw))) = self.parser.next() else {
                self.done = true;
                break;
            };
            match event {
                Event::Scalar(text, ..) => match self.open.last_mut() {
                    Some(Open::Map(slot @ None)) => *slot = Some(text.into_owned()),
                    Some(Open::Map(slot @ Some(_))) => {
                        let key = slot.take().unwrap_or_default();
                        let span = self.offsets.span(&raw);
                        return Some(KeyedScalar {
                            key,
                            value: text.into_owned(),
                            span,
                        });
                    }
                    Some(Open::Seq) | None => {}
                },
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    if self.open.len() >= self.max_depth {
                        self.done = true;
                        break;
                    }
                    let open = match event {
                        Event::SequenceStart(..) => Open::Seq,
                        _ => Open::Map(None),
                    };
                    self.open.push(open);
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    self.open.pop();
                    self.complete_other();
                }
                Event::Alias(_) => self.complete_other(),
                Event::StreamStart
                | Event::StreamEnd
                | Event::Nothing
                | Event::DocumentStart(_)
                | Event::DocumentEnd => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(src: &str) -> Vec<(String, String, String)> {
        keyed_scalars(src)
            .map(|k| {
                let text =
                    src[k.span.start.offset as usize..k.span.end.offset as usize].to_string();
                (k.key, k.value, text)
            })
            .collect()
    }

    #[test]
    fn values_come_with_their_keys_and_source_text() {
        let src = "a: 1\nb:\n  - c: \"x y\"\n    d: [e, f]\n  - plain\ng: 'q'\n";
        assert_eq!(
            pairs(src),
            vec![
                ("a".into(), "1".into(), "1".into()),
                ("c".into(), "x y".into(), "\"x y\"".into()),
                ("g".into(), "q".into(), "'q'".into()),
            ]
        );
    }

    #[test]
    fn a_key_with_no_value_and_a_trailing_space_is_a_null() {
        let got = pairs("small_version: ");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "small_version");
        assert_eq!(got[0].1, "");
    }

    #[test]
    fn the_walk_stops_at_a_syntax_error_keeping_what_came_before() {
        let got = pairs("password: hunter2\nbad: [unclosed\nlater: x\n");
        assert_eq!(got[0].0, "password");
        assert!(got.iter().all(|p| p.0 != "later"));
    }

    #[test]
    fn collection_keys_and_aliases_name_nothing() {
        let got = pairs("? [a, b]\n: v\nx: &n 1\ny: *n\nz: w\n");
        assert_eq!(
            got.iter()
                .map(|p| (p.0.as_str(), p.1.as_str()))
                .collect::<Vec<_>>(),
            vec![("", "v"), ("x", "1"), ("z", "w")]
        );
    }

    #[test]
    fn byte_offsets_count_a_bom_and_multibyte_text() {
        let src = "\u{feff}é: ü\nk: v\n";
        let got = pairs(src);
        assert_eq!(got[0].2, "ü");
        assert_eq!(got[1].2, "v");
    }

    #[test]
    fn nesting_past_the_limit_ends_the_walk() {
        let deep = "[".repeat(5000);
        assert_eq!(keyed_scalars(&format!("a: 1\nb: {deep}")).count(), 1);
    }
}
