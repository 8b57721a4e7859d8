//! Printing diagnostics the way compilers do:
//!
//! ```text
//! error[schema]: `tasks[2].title` must not be empty
//!   --> .small/plan.small.yml:14:12
//!    |
//! 14 |     title: ""
//!    |            ^^
//!    = path: /tasks/2/title
//!    = help: ...
//! ```
//!
//! Colour (hand-rolled ANSI) is used when the caller asks; the output helper
//! (`crate::output`) decides when that is.
//!
//! Use [`render_all`] with a lookup from the diagnostic's file name to the file's text (for a
//! loaded workspace: `|f| ws.source_of(f)`); files without source are shown without the
//! snippet.

#![allow(dead_code)]

use small_core::ops::diag::{Diagnostic, Severity};
use small_core::ops::secrets;

#[derive(Clone, Copy)]
struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

const BOLD: &str = "1";
const BOLD_RED: &str = "1;31";
const BOLD_YELLOW: &str = "1;33";
const BOLD_BLUE: &str = "1;34";
const BOLD_CYAN: &str = "1;36";

/// Render every diagnostic, each followed by a blank line.
pub fn render_all<'a>(
    diags: &[Diagnostic],
    sources: impl Fn(&str) -> Option<&'a str>,
    color: bool,
) -> String {
    let mut out = String::new();
    // One cursor per file: diagnostics come mostly in file order, so a long log with many
    // findings is read once, not once per finding.
    // Beside it, the values of secret-named keys as the parser finds them, read as far as
    // the cursor goes.
    let mut cursors: Vec<(&str, Lines<'a>, secrets::SecretValues<'a>)> = Vec::new();
    for d in diags {
        let line = match (d.file.as_deref(), d.span) {
            (Some(file), Some(span)) if span.start.line > 0 => {
                let i = match cursors.iter().position(|(f, ..)| *f == file) {
                    Some(i) => Some(i),
                    None => sources(file).map(|src| {
                        cursors.push((file, Lines::new(src), secrets::SecretValues::new(src)));
                        cursors.len() - 1
                    }),
                };
                i.and_then(|i| {
                    let (_, lines, values) = &mut cursors[i];
                    lines.nth_at(span.start.line as usize).map(|(text, at)| {
                        let secret = values.on_line(at..at + text.len());
                        SourceLine { text, secret }
                    })
                })
            }
            _ => None,
        };
        out.push_str(&render_line(d, line, color));
        out.push('\n');
    }
    out
}

/// The line a diagnostic's span starts on, with the byte ranges in it that hold the value
/// of a secret-named key.
struct SourceLine<'a> {
    text: &'a str,
    secret: Vec<std::ops::Range<usize>>,
}

/// Render one diagnostic; `source` is the text of its file, if available.
pub fn render(d: &Diagnostic, source: Option<&str>, color: bool) -> String {
    let line = match (source, d.span) {
        (Some(src), Some(span)) if span.start.line > 0 => Lines::new(src)
            .nth_at(span.start.line as usize)
            .map(|(text, at)| SourceLine {
                text,
                secret: secrets::SecretValues::new(src).on_line(at..at + text.len()),
            }),
        _ => None,
    };
    render_line(d, line, color)
}

/// Render one diagnostic given the line its span starts on, if known.
fn render_line(d: &Diagnostic, source_line: Option<SourceLine<'_>>, color: bool) -> String {
    let line_text = source_line.as_ref().map(|l| l.text);
    let secret_values = source_line.as_ref().map_or(&[][..], |l| &l.secret[..]);
    let st = Style { on: color };
    let (label, label_style) = match d.severity {
        Severity::Error => ("error", BOLD_RED),
        Severity::Warning => ("warning", BOLD_YELLOW),
    };
    let mut out = String::new();
    out.push_str(&st.paint(label_style, &format!("{label}[{}]", d.code)));
    // A message that quotes a value (a schema error, an insecure link) could quote a
    // credential: mask any found.
    out.push_str(&st.paint(
        BOLD,
        &format!(": {}", escape_controls(&secrets::redact(&d.message))),
    ));
    out.push('\n');

    let line_no = d.span.map(|s| s.start.line).unwrap_or(0);
    let gutter_width = if line_text.is_some() {
        digits(line_no)
    } else {
        1
    };
    let pad = " ".repeat(gutter_width);
    let bar = st.paint(BOLD_BLUE, "|");

    if let Some(file) = &d.file {
        let loc = match d.span {
            Some(s) if s.start.line > 0 => format!("{file}:{}:{}", s.start.line, s.start.column),
            _ => file.clone(),
        };
        let loc = escape_controls(&loc);
        out.push_str(&format!("{pad}{} {loc}\n", st.paint(BOLD_BLUE, "-->")));
    }

    if let (Some(text), Some(span)) = (line_text, d.span) {
        let (text, secret_values) = match text.strip_prefix('\u{feff}') {
            Some(rest) => {
                let bom = '\u{feff}'.len_utf8();
                let shifted: Vec<_> = secret_values
                    .iter()
                    .map(|r| r.start.saturating_sub(bom)..r.end.saturating_sub(bom))
                    .collect();
                (rest, shifted)
            }
            None => (text, secret_values.to_vec()),
        };
        let secret_values = &secret_values[..];
        let start_col = span.start.column.max(1) as usize;
        let line_len = text.chars().count();
        let end_col = if span.end.line == span.start.line && span.end.column as usize > start_col {
            span.end.column as usize
        } else if span.end == span.start {
            // A point (a YAML syntax error, a missing field): one caret.
            start_col + 1
        } else {
            // Multi-line span: underline to the end of the first line's content.
            line_len.max(start_col) + 1
        };
        let end_col = end_col.min(line_len + 1).max(start_col + 1);
        let snippet = snippet(d, text, secret_values, start_col - 1, end_col - 1);
        let caret_style = if d.severity == Severity::Error {
            BOLD_RED
        } else {
            BOLD_YELLOW
        };
        out.push_str(&format!("{pad} {bar}\n"));
        out.push_str(&format!(
            "{} {bar} {}\n",
            st.paint(BOLD_BLUE, &line_no.to_string()),
            escape_controls(snippet.text.trim_end())
        ));
        out.push_str(&format!(
            "{pad} {bar} {}{}\n",
            snippet.lead,
            st.paint(caret_style, &"^".repeat(snippet.carets))
        ));
    }

    if let Some(path) = &d.path {
        let path = escape_controls(path);
        out.push_str(&format!(
            "{pad} {} path: {path}\n",
            st.paint(BOLD_BLUE, "=")
        ));
    }
    if let Some(help) = d.help.as_deref().map(secrets::redact) {
        let help = escape_controls(&help);
        out.push_str(&format!(
            "{pad} {} {}: {help}\n",
            st.paint(BOLD_BLUE, "="),
            st.paint(BOLD_CYAN, "help")
        ));
    }
    out
}

/// Widest source line shown; longer lines are cut around the span with `...`.
const MAX_LINE: usize = 120;
/// Context kept before the span when a long line is cut.
const CONTEXT_BEFORE: usize = 40;

/// A source line ready to print: secrets masked, cut to [`MAX_LINE`] around the span, and
/// where the carets go.
struct Snippet {
    text: String,
    /// Whitespace up to the first caret (tabs kept so the caret lines up under them).
    lead: String,
    carets: usize,
}

/// Prepare line `text` with the span at 0-based character columns `start..end`.
fn snippet(
    d: &Diagnostic,
    text: &str,
    secret_values: &[std::ops::Range<usize>],
    start: usize,
    end: usize,
) -> Snippet {
    // Mask every secret on the line, and the span itself when it is a secret.
    let known: Vec<(std::ops::Range<usize>, String)> = match &d.secret {
        Some(note) => vec![(start..end, note.masked.clone())],
        None => Vec::new(),
    };
    let red = secrets::redact_line(text, secret_values, &known);
    let chars: Vec<char> = red.text.chars().collect();
    let mut s = red.map_column(start, false).min(chars.len());
    let mut e = red.map_column(end, true).min(chars.len() + 1).max(s + 1);
    // Cut long lines around the span, rustc style.
    let (mut from, mut to) = (0, chars.len());
    if chars.len() > MAX_LINE {
        from = s.saturating_sub(CONTEXT_BEFORE);
        to = (from + MAX_LINE).min(chars.len());
        if to - from < MAX_LINE {
            from = to.saturating_sub(MAX_LINE);
        }
    }
    let mut shown = String::new();
    if from > 0 {
        shown.push_str("...");
    }
    shown.extend(&chars[from..to]);
    if to < chars.len() {
        shown.push_str("...");
    }
    let offset = if from > 0 { 3 } else { 0 };
    let limit = to + usize::from(to == chars.len());
    e = e.min(limit).max(s + 1);
    s -= from;
    e -= from;
    let lead: String = std::iter::repeat_n(' ', offset)
        .chain(
            chars[from..]
                .iter()
                .take(s)
                .map(|&c| if c == '\t' { '\t' } else { ' ' }),
        )
        .collect();
    let lead = if lead.chars().count() < s + offset {
        format!("{lead}{}", " ".repeat(s + offset - lead.chars().count()))
    } else {
        lead
    };
    Snippet {
        text: shown,
        lead,
        carets: e - s,
    }
}

fn digits(n: u32) -> usize {
    n.max(1).to_string().len()
}

/// Lines of one text (ending at `\n`, `\r\n` or a lone `\r`), found from where the last one
/// asked for was: asking in order reads the text once.
struct Lines<'a> {
    src: &'a str,
    /// The 1-based number of the line starting at `start`.
    line: usize,
    start: usize,
}

impl<'a> Lines<'a> {
    fn new(src: &'a str) -> Self {
        Lines {
            src,
            line: 1,
            start: 0,
        }
    }

    /// The `n`th line (1-based), if the text has that many, with its byte offset.
    fn nth_at(&mut self, n: usize) -> Option<(&'a str, usize)> {
        let line = self.nth(n)?;
        Some((line, self.start))
    }

    /// The `n`th line (1-based), if the text has that many.
    fn nth(&mut self, n: usize) -> Option<&'a str> {
        if n < self.line {
            (self.line, self.start) = (1, 0);
        }
        let bytes = self.src.as_bytes();
        loop {
            let Some(len) = memchr::memchr2(b'\n', b'\r', &bytes[self.start..]) else {
                return (self.line == n).then(|| &self.src[self.start..]);
            };
            let end = self.start + len;
            if self.line == n {
                return Some(&self.src[self.start..end]);
            }
            let crlf = bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n');
            self.start = end + 1 + usize::from(crlf);
            self.line += 1;
        }
    }
}

/// The `n`th line (1-based) of `src`.
#[cfg(test)]
fn nth_line(src: &str, n: usize) -> Option<&str> {
    Lines::new(src).nth(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use small_core::ops::diag::{Pos, Span};

    fn span(line: u32, col: u32, end_line: u32, end_col: u32) -> Option<Span> {
        Some(Span {
            start: Pos {
                line,
                column: col,
                offset: 0,
            },
            end: Pos {
                line: end_line,
                column: end_col,
                offset: 0,
            },
        })
    }

    #[test]
    fn renders_snippet_with_carets_path_and_help() {
        let src = "a: 1\nb:\n  - id: task-3\n";
        let d = Diagnostic::error("S1", "bad id")
            .in_file(".small/plan.small.yml")
            .at(span(3, 9, 3, 15))
            .with_path("/b/0/id")
            .with_help("fix it");
        let text = render(&d, Some(src), false);
        let expected = "error[S1]: bad id\n --> .small/plan.small.yml:3:9\n  |\n3 |   - id: task-3\n  |         ^^^^^^\n  = path: /b/0/id\n  = help: fix it\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn multi_line_span_underlines_rest_of_first_line() {
        let src = "tasks:\n  - id: x\n    title: y\n";
        let d = Diagnostic::error("schema", "m")
            .in_file("f")
            .at(span(2, 5, 3, 13));
        let text = render(&d, Some(src), false);
        assert!(text.contains("2 |   - id: x\n  |     ^^^^^\n"), "{text}");
    }

    #[test]
    fn a_point_gets_one_caret() {
        let src = "a: 1\n\tb: 2\n";
        let d = Diagnostic::error("yaml", "tab")
            .in_file("f")
            .at(span(2, 1, 2, 1));
        let text = render(&d, Some(src), false);
        assert!(text.contains("2 | \tb: 2\n  | ^\n"), "{text}");
    }

    #[test]
    fn without_source_or_file() {
        let d = Diagnostic::warning("no-workspace", "nothing here").with_help("run small init");
        assert_eq!(
            render(&d, None, false),
            "warning[no-workspace]: nothing here\n  = help: run small init\n"
        );
        let d = Diagnostic::error("missing", "gone").in_file(".small/plan.small.yml");
        assert_eq!(
            render(&d, None, false),
            "error[missing]: gone\n --> .small/plan.small.yml\n"
        );
    }

    #[test]
    fn colour_codes_only_when_asked() {
        let d = Diagnostic::error("x", "y");
        assert!(render(&d, None, true).contains("\x1b[1;31m"));
        assert!(!render(&d, None, false).contains('\x1b'));
    }

    #[test]
    fn lines_split_on_any_line_ending() {
        assert_eq!(nth_line("a\rb\r\nc\nd", 2), Some("b"));
        assert_eq!(nth_line("a\rb\r\nc\nd", 4), Some("d"));
        assert_eq!(nth_line("a\n", 3), None);
        assert_eq!(nth_line("a\n", 2), Some(""));
        // Asked out of order, the cursor starts again.
        let mut lines = Lines::new("a\rb\r\nc\nd");
        for n in [3, 4, 1, 5, 2, 2, 4] {
            assert_eq!(
                lines.nth(n),
                ["a", "b", "c", "d"].get(n - 1).copied(),
                "line {n}"
            );
        }
    }

    #[test]
    fn wide_line_numbers_widen_the_gutter() {
        let src: String = (1..=12).map(|i| format!("k{i}: v\n")).collect();
        let d = Diagnostic::error("c", "m")
            .in_file("f")
            .at(span(12, 1, 12, 4));
        let text = render(&d, Some(&src), false);
        assert!(
            text.contains("  --> f:12:1\n   |\n12 | k12: v\n   | ^^^\n"),
            "{text}"
        );
    }

    #[test]
    fn secrets_are_masked_in_the_line_and_the_caret_follows() {
        let token = ["gh", "p_", "0123456789abcdefghijABCDEFGHIJ012345"].concat();
        let src = format!("entries:\n  - notes: use {token} now\n");
        // The span covers the token itself (columns 16..56).
        let d = Diagnostic::error("INV1", "possible secret")
            .in_file("f")
            .at(span(2, 16, 2, 56))
            .with_secret("GitHub token", "ghp_…[36 chars redacted]");
        let text = render(&d, Some(&src), false);
        assert!(!text.contains("0123456789"), "{text}");
        assert!(
            text.contains(&format!(
                "2 |   - notes: use ghp_…[36 chars redacted] now\n  | {}{}\n",
                " ".repeat(15),
                "^".repeat(24)
            )),
            "{text}"
        );
        // Another rule's diagnostic on the same line masks it too.
        let d = Diagnostic::error("schema", "bad")
            .in_file("f")
            .at(span(2, 5, 2, 10));
        let text = render(&d, Some(&src), false);
        assert!(!text.contains("0123456789"), "{text}");
        assert!(text.contains("  |     ^^^^^\n"), "{text}");
    }

    #[test]
    fn secret_named_keys_and_messages_are_masked() {
        let src = "db:\n  password: hunter2\n";
        let d = Diagnostic::error("KEYS", "unknown key")
            .in_file("f")
            .at(span(2, 3, 2, 11));
        let text = render(&d, Some(src), false);
        assert!(!text.contains("hunter2"), "{text}");
        let url = ["postgres://app:", "s3cr3tPw", "@db/app"].concat();
        let d = Diagnostic::warning("LINK", format!("insecure link {url}"));
        let text = render(&d, None, false);
        assert!(!text.contains("s3cr3tPw"), "{text}");
    }

    #[test]
    fn long_lines_are_cut_around_the_span() {
        let long = format!(
            "  - command: {}TARGET{}",
            "a ".repeat(500),
            " b".repeat(500)
        );
        let col = long.find("TARGET").unwrap() as u32 + 1;
        let src = format!("x:\n{long}\n");
        let d = Diagnostic::error("c", "m")
            .in_file("f")
            .at(span(2, col, 2, col + 6));
        let text = render(&d, Some(&src), false);
        let lines: Vec<&str> = text.lines().collect();
        let code = lines.iter().find(|l| l.starts_with("2 |")).unwrap();
        let carets = lines.iter().find(|l| l.contains('^')).unwrap();
        assert!(code.len() < 140, "{code}");
        assert!(
            code.starts_with("2 | ...") && code.ends_with("..."),
            "{code}"
        );
        let at = code.find("TARGET").unwrap();
        assert_eq!(carets.find('^').unwrap(), at, "{text}");
        assert_eq!(carets.matches('^').count(), 6);
        // A span of thousands of characters gets at most a line of carets.
        let d = Diagnostic::error("c", "m")
            .in_file("f")
            .at(span(2, 3, 2, 2000));
        let text = render(&d, Some(&src), false);
        assert!(text.lines().all(|l| l.len() < 140), "{text}");
    }
}

/// Make text from files, the store or the network safe to print on a terminal: every control
/// character except newline and tab (C0, DEL and the C1 range) is written as a visible escape
/// (`\x1b`, `\u{9b}`), so a progress entry cannot retitle, clear or recolour the reader's
/// terminal. Human output only: `--json` output is exact (JSON escapes controls itself).
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !bad(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` followed by spaces up to `width` characters, as `{:<width$}` pads it, for any width:
/// the formatter refuses a width past 65 535 (it panics), and a task id or a name read from
/// the files can be longer.
pub fn pad(s: &str, width: usize) -> String {
    let fill = width.saturating_sub(s.chars().count());
    let mut out = String::with_capacity(s.len() + fill);
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', fill));
    out
}

#[cfg(test)]
mod escape_tests {
    use super::{escape_controls, pad};

    #[test]
    fn padding_is_the_formatters_and_takes_any_width() {
        for (s, w) in [("ab", 5), ("abcdef", 3), ("é", 2), ("", 0)] {
            assert_eq!(pad(s, w), format!("{s:<w$}"));
        }
        assert_eq!(pad("x", 70_000).len(), 70_000);
    }

    #[test]
    fn controls_are_escaped_text_is_not() {
        assert_eq!(
            escape_controls("a\x1b]0;PWNED\x07\x1b[2J\u{9b}b\n\tc é"),
            "a\\x1b]0;PWNED\\x07\\x1b[2J\\u{9b}b\n\tc é"
        );
        assert!(matches!(
            escape_controls("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
