//! The human report of an outcome: the words a front end shows besides the `--json`
//! document, written once so that every front end says the same thing.
//!
//! A report is plain text, newline-terminated lines with no colour or terminal control; the
//! front end decides where it goes (stdout, stderr, a tool result) and escapes what it
//! quotes. The reports of outcomes whose documents differ by profile are built by the
//! profile back end (`backend::outcome`); this module holds what both profiles share.

use crate::ops::lifecycle::{ReplayId, SummarySource};

/// An outcome's human report.
pub trait Report {
    /// The report: newline-terminated lines (empty when there is nothing to say).
    fn text(&self) -> String;
}

/// A line (or lines) an operation says beside its document, and where it belongs: the
/// report itself, a warning, or an error (which front ends show even when asked to be
/// quiet). The text has no trailing newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    Info(String),
    Warning(String),
    Error(String),
}

/// "3 errors", "1 warning".
pub fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Append a line (`format!` arguments) and a newline to a `String`.
macro_rules! outln {
    ($buf:expr) => {
        $buf.push('\n')
    };
    ($buf:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($buf, $($arg)*);
    }};
}
pub(crate) use outln;

/// `v`, or `-` when it is empty.
pub(crate) fn or_dash(v: &str) -> &str {
    if v.is_empty() {
        "-"
    } else {
        v
    }
}

/// `s` followed by spaces up to `width` characters, for any width (the formatter's `{:<w$}`
/// panics past 65 535, and a task id read from the files can be longer).
pub(crate) fn pad(s: &str, width: usize) -> String {
    let fill = width.saturating_sub(s.chars().count());
    let mut out = String::with_capacity(s.len() + fill);
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', fill));
    out
}

/// The first line of `s`, cut to `max` characters (`…` marks a cut or a dropped line).
pub(crate) fn shorten(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() <= max && first.len() == s.len() {
        return first.to_string();
    }
    let cut: String = first.chars().take(max).collect();
    format!("{cut}…")
}

/// Continuation lines of a multi-line value, indented under their field.
pub(crate) fn indented(text: &str) -> String {
    text.trim_end().replace('\n', "\n        ")
}

/// The lines naming the files a write replaced and those it appended to.
pub fn files(written: &[String], appended: &[String]) -> String {
    let mut o = String::new();
    for f in written {
        outln!(o, "  updated {f}");
    }
    for f in appended {
        outln!(o, "  appended to {f}");
    }
    o
}

/// What the lines of a written handoff say (`handoff`, `start`, `apply --auto-handoff`).
pub struct HandoffLines<'a> {
    pub summary: &'a str,
    pub current_task_id: Option<&'a str>,
    pub next_steps: usize,
    pub source: SummarySource,
    pub replaced: Option<&'a str>,
    pub replay: &'a ReplayId,
}

impl HandoffLines<'_> {
    /// The lines, the first starting with `verb` ("Wrote handoff").
    pub fn text(&self, verb: &str) -> String {
        let mut o = String::new();
        outln!(
            o,
            "{verb}: {} (current task: {}; {} next step(s))",
            self.summary,
            self.current_task_id.unwrap_or("none"),
            self.next_steps
        );
        match (self.source, self.replaced) {
            (SummarySource::Given, _) => outln!(o, "summary: as given"),
            (SummarySource::Kept, _) => outln!(
                o,
                "summary: kept (written with --summary; the run's state is unchanged)"
            ),
            (SummarySource::Computed, Some(old)) => outln!(
                o,
                "summary: computed; replaced {old:?} because the run's state changed"
            ),
            (SummarySource::Computed, None) => {
                outln!(o, "summary: computed from the run's state")
            }
        }
        outln!(
            o,
            "replayId: {} (source: {})",
            self.replay.value,
            self.replay.source
        );
        o
    }
}

/// The line naming the tasks open in this run (empty when none is).
pub fn open_tasks(open: &[crate::authoring::session::TaskRef]) -> String {
    if open.is_empty() {
        return String::new();
    }
    let list: Vec<String> = open
        .iter()
        .map(|t| format!("{} ({})", t.id, t.status))
        .collect();
    format!(
        "Open in this run: {} (`small handoff --final` refuses until each is completed, blocked or cancelled)\n",
        list.join(", ")
    )
}
