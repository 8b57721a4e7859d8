//! The one place that decides what `small` prints, where, and in which colours.
//!
//! Every command prints through these methods on [`GlobalArgs`]:
//!
//! - [`GlobalArgs::info`]: human output on stdout; silenced by `--quiet`.
//! - [`GlobalArgs::warn`]: warnings and notices on stderr; silenced by `--quiet`.
//! - [`GlobalArgs::error`]: errors on stderr; always printed.
//! - [`GlobalArgs::json`] and [`GlobalArgs::data`]: machine output (a `--json` document, a
//!   completion script, a man page) on stdout; always printed, never coloured.
//! - [`GlobalArgs::diagnostics`]: rendered diagnostics on stderr; under `--quiet` only the
//!   errors among them.
//!
//! Colour ([`GlobalArgs::color_stdout`], [`GlobalArgs::color_stderr`]) is decided in this
//! order: `--color always|never` (and `--no-color`) as given; then `NO_COLOR` (non-empty)
//! turns it off; `CLICOLOR_FORCE` (non-empty, not `0`) turns it on; `CLICOLOR=0` or `CI`
//! (non-empty, as CI services set it) turns it off; otherwise colour is used only when the
//! stream is a terminal.

use std::io::{IsTerminal, Write};

use small_core::ops::diag::Diagnostic;
use small_core::ops::gate::GateOutcome;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// `--color`: when to use ANSI colours.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal and the environment allows it
    #[default]
    Auto,
    /// Always colour (even into a pipe)
    Always,
    /// Never colour
    Never,
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Whether to colour a stream, given the flags and whether the stream is a terminal.
pub fn decide_color(choice: ColorChoice, no_color_flag: bool, is_terminal: bool) -> bool {
    if no_color_flag {
        return false;
    }
    match choice {
        ColorChoice::Always => return true,
        ColorChoice::Never => return false,
        ColorChoice::Auto => {}
    }
    if env_set("NO_COLOR") {
        return false;
    }
    if std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    if std::env::var_os("CLICOLOR").is_some_and(|v| v == "0") || env_set("CI") {
        return false;
    }
    is_terminal
}

impl GlobalArgs {
    /// Whether `--quiet` was given.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Whether output on stdout is coloured.
    pub fn color_stdout(&self) -> bool {
        decide_color(self.color, self.no_color, std::io::stdout().is_terminal())
    }

    /// Whether output on stderr is coloured.
    pub fn color_stderr(&self) -> bool {
        decide_color(self.color, self.no_color, std::io::stderr().is_terminal())
    }

    /// Human output: `text` and a newline on stdout, unless `--quiet`.
    pub fn info(&self, text: impl AsRef<str>) {
        if !self.quiet {
            write_out(&format!("{}\n", human(text.as_ref())));
        }
    }

    /// Human output without a trailing newline, unless `--quiet`.
    pub fn info_raw(&self, text: impl AsRef<str>) {
        if !self.quiet {
            write_out(&human(text.as_ref()));
        }
    }

    /// A warning or notice: `text` and a newline on stderr, unless `--quiet`.
    pub fn warn(&self, text: impl AsRef<str>) {
        if !self.quiet {
            write_err(&format!("{}\n", human(text.as_ref())));
        }
    }

    /// An error: `text` and a newline on stderr, always.
    pub fn error(&self, text: impl AsRef<str>) {
        error_line(text.as_ref());
    }

    /// A question for the user: `text` (no newline) on stderr, always, so that stdout stays
    /// clean and `--quiet` cannot hide what is being asked.
    pub fn prompt(&self, text: impl AsRef<str>) {
        let mut err = stderr();
        let _ = err
            .write_all(text.as_ref().as_bytes())
            .and_then(|_| err.flush());
    }

    /// Machine output (a script, a document): `text` as is on stdout, even under `--quiet`.
    pub fn data(&self, text: impl AsRef<str>) -> CmdResult {
        data(text.as_ref())
    }

    /// A `--json` document: pretty-printed, newline-terminated, on stdout, even under `--quiet`.
    pub fn json(&self, value: &impl serde::Serialize) -> CmdResult {
        json(value)
    }

    /// An outcome as asked: its `--json` document, else its human report (unless `--quiet`).
    /// Every front end shows the same document and the same words (`small_core::ops::report`).
    pub fn outcome<T>(&self, json: bool, out: &T) -> CmdResult
    where
        T: serde::Serialize + small_core::ops::report::Report,
    {
        if json {
            return self.json(out);
        }
        self.info_raw(out.text());
        Ok(())
    }

    /// An operation's result: its outcome as [`Self::outcome`] shows it, or its refusal.
    pub fn op<T>(&self, json: bool, out: small_core::ops::OpResult<T>) -> CmdResult
    where
        T: serde::Serialize + small_core::ops::report::Report,
    {
        self.outcome(json, &out.map_err(|e| crate::error::from_op(e, self))?)
    }

    /// An operation's listing as [`Self::listing`] shows it, or its refusal.
    pub fn op_listing<T>(&self, json: bool, out: small_core::ops::OpResult<T>) -> CmdResult
    where
        T: serde::Serialize + small_core::ops::report::Report,
    {
        self.listing(json, &out.map_err(|e| crate::error::from_op(e, self))?)
    }

    /// An outcome that is data a script reads (a listing, a reconstruction): its `--json`
    /// document, else its report on stdout even under `--quiet`.
    pub fn listing<T>(&self, json: bool, out: &T) -> CmdResult
    where
        T: serde::Serialize + small_core::ops::report::Report,
    {
        if json {
            return self.json(out);
        }
        self.data(crate::render::escape_controls(&out.text()))
    }

    /// What an operation said beside its document: its report on stdout and its warnings
    /// on stderr (unless `--quiet`), its errors on stderr always.
    pub fn say(&self, said: small_core::ops::report::Said) {
        use small_core::ops::report::Said;
        match said {
            Said::Info(t) => self.info(t),
            Said::Warning(t) => self.warn(t),
            Said::Error(t) => self.error(t),
        }
    }

    /// Each warning as `warning: ...` on stderr, unless `--quiet`.
    pub fn warnings(&self, warnings: &[String]) {
        for w in warnings {
            self.warn(format!("warning: {w}"));
        }
    }

    /// Rendered diagnostics on stderr (with source snippets from `sources`, or one line
    /// each when `compact`). Under `--quiet` only errors are printed.
    pub fn diagnostics<'a>(
        &self,
        diags: &[Diagnostic],
        sources: impl Fn(&str) -> Option<&'a str>,
        compact: bool,
    ) {
        let shown: Vec<Diagnostic>;
        let diags = if self.quiet {
            shown = diags.iter().filter(|d| d.is_error()).cloned().collect();
            &shown[..]
        } else {
            diags
        };
        if diags.is_empty() {
            return;
        }
        if compact {
            let mut text = String::new();
            for d in diags {
                text.push_str(&human(&small_core::ops::gate::compact_line(d)));
                text.push('\n');
            }
            write_err(&text);
            return;
        }
        write_err(&crate::render::render_all(
            diags,
            sources,
            self.color_stderr(),
        ));
    }
}

impl GlobalArgs {
    /// A gate's findings on stderr: its diagnostics (with source snippets from the loaded
    /// workspace), then the problem that stopped it, if any.
    pub fn gate(&self, out: &GateOutcome, compact: bool) {
        let ws = out.workspace.as_ref();
        self.diagnostics(
            &out.diagnostics,
            |f| ws.and_then(|w| w.source_of(f)),
            compact,
        );
        if let Some(d) = &out.fatal {
            self.diagnostics(std::slice::from_ref(d), |_| None, compact);
        }
    }
}

/// Machine output on stdout (see [`GlobalArgs::data`]). A closed pipe (`small ... | head`)
/// ends the output quietly instead of failing.
pub fn data(text: &str) -> CmdResult {
    let mut out = stdout();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::usage(format!("cannot write the output: {e}"))),
    }
}

/// A pretty-printed JSON document on stdout (see [`GlobalArgs::json`]), written as it is
/// encoded: a report with many findings is not held a second time as text.
pub fn json(value: &impl serde::Serialize) -> CmdResult {
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout());
    let written = serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::usage(format!("cannot write the output: {e}"))),
    }
}

/// The `--json` document of a command that failed: the reference's `error` object (its code
/// and the message), then small's (docs/json-output.md, "Errors").
#[derive(serde::Serialize)]
struct JsonFailure {
    error: crate::error::ErrorObject,
    status: &'static str,
    exit_code: u8,
    errors: Vec<small_core::ops::gate::JsonDiagnostic>,
}

/// How every command's errors are printed (here, the one place that prints).
impl CliError {
    /// Print the error the one way every command's errors are printed: a diagnostic as the
    /// gates print theirs, else the message; with `--json` also the error document on stdout.
    pub fn report(&self, g: &crate::GlobalArgs, json: bool) {
        if self.diagnostic.is_none() && self.message.is_empty() {
            return;
        }
        // A command that printed its report before failing has said everything on stdout.
        if json && !crate::output::printed::any() {
            self.print_json();
            if self.diagnostic.is_some() {
                return;
            }
        }
        self.print_text(g);
    }

    /// The error document on stdout: the reference's `error` object, then small's.
    pub fn print_json(&self) {
        let doc = JsonFailure {
            error: self.error_object(),
            status: "error",
            exit_code: self.exit,
            errors: self
                .diagnostic
                .iter()
                .map(|d| small_core::ops::gate::JsonDiagnostic::from(&**d))
                .collect(),
        };
        let _ = crate::output::json(&doc);
    }

    /// The error on stderr: a diagnostic as the gates print theirs, else the message.
    pub fn print_text(&self, g: &crate::GlobalArgs) {
        match &self.diagnostic {
            Some(d) => {
                let text = crate::render::render(d, None, g.color_stderr());
                g.error(text.trim_end());
            }
            None => g.error(format!("error: {}", self.message)),
        }
    }
}

/// Human text is printed with its control characters escaped (text from workspace files
/// must not drive the reader's terminal); machine output ([`data`], [`json`]) is exact.
fn human(text: &str) -> std::borrow::Cow<'_, str> {
    crate::render::escape_controls(text)
}

/// An error line on stderr, for code that has no [`GlobalArgs`] at hand (a signal handler).
pub fn error_line(text: &str) {
    write_err(&format!("{}\n", human(text)));
}

fn write_out(text: &str) {
    let mut out = stdout();
    // A closed pipe ends the output quietly (SIGPIPE is restored in main on Unix).
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn write_err(text: &str) {
    let mut err = stderr();
    let _ = err.write_all(text.as_bytes());
}

/// Where a command's output goes: the process's stream, or nowhere while the in-process
/// fuzz suite runs commands on this thread (it runs hundreds of thousands; their output is
/// not what it checks).
pub enum Stream {
    Out(std::io::StdoutLock<'static>),
    Err(std::io::StderrLock<'static>),
    #[cfg(test)]
    Muted,
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Out(o) => o.write(buf),
            Stream::Err(e) => e.write(buf),
            #[cfg(test)]
            Stream::Muted => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Out(o) => o.flush(),
            Stream::Err(e) => e.flush(),
            #[cfg(test)]
            Stream::Muted => Ok(()),
        }
    }
}

/// Standard output, locked (see [`Stream`]). Taking it marks this thread's command as having
/// printed on stdout ([`printed`]).
pub fn stdout() -> Stream {
    printed::mark();
    #[cfg(test)]
    if muted::is_on() {
        return Stream::Muted;
    }
    Stream::Out(std::io::stdout().lock())
}

/// Standard error, locked (see [`Stream`]).
pub fn stderr() -> Stream {
    #[cfg(test)]
    if muted::is_on() {
        return Stream::Muted;
    }
    Stream::Err(std::io::stderr().lock())
}

/// Whether the command running on this thread has printed on stdout: an error after a
/// `--json` report is then not printed as a second document.
pub mod printed {
    use std::cell::Cell;

    thread_local! {
        static PRINTED: Cell<bool> = const { Cell::new(false) };
    }

    pub fn mark() {
        PRINTED.with(|c| c.set(true));
    }

    /// Forget what was printed (a command starts).
    pub fn reset() {
        PRINTED.with(|c| c.set(false));
    }

    pub fn any() -> bool {
        PRINTED.with(Cell::get)
    }
}

/// Output muted on the current thread, for tests that run commands in-process.
#[cfg(test)]
pub mod muted {
    use std::cell::Cell;

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
    }

    pub fn is_on() -> bool {
        ON.with(Cell::get)
    }

    /// Mute (or unmute) this thread's output.
    pub fn set(on: bool) {
        ON.with(|c| c.set(on));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_choices_win() {
        assert!(!decide_color(ColorChoice::Always, true, true));
        assert!(decide_color(ColorChoice::Always, false, false));
        assert!(!decide_color(ColorChoice::Never, false, true));
    }
}

/// For the servers (`small serve`, `small ui`): a client that closes its connection
/// mid-response must not end the server. hyper writes with `writev`, which raises SIGPIPE on
/// a reset connection, and `main` restores SIGPIPE's default (exit) for the sake of pipes
/// (`small status | head`); a server takes the write error instead.
pub fn ignore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: changing a signal's disposition to "ignore" has no other effect on the program;
    // stdout then reports a closed pipe as an error, which this module handles.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}
