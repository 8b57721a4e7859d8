//! The last line of defence: a panic anywhere in `small` becomes one clear message on
//! stderr and exit code 2, never a backtrace dump or an exit code that looks like a verdict.
//!
//! Panics are bugs (no input may cause one; the fuzz suite looks for them), so this is not
//! how errors are reported, only how a bug is reported when one slips through. Writes stay
//! whole regardless: every change to `.small/` is staged and renamed into place, or redone
//! from the journal by the next command.
//!
//! The message never quotes workspace text: a panic message may hold a slice of a file
//! (`byte index 15 is out of range of "..."`), so it is cut short and its secrets masked.
//! `SMALL_BACKTRACE=1` adds the backtrace, for whoever debugs it (`RUST_BACKTRACE` alone does
//! not: it is often set for a whole machine or CI job).

use std::backtrace::Backtrace;
use std::io::Write as _;
use std::panic::PanicHookInfo;
use std::sync::atomic::{AtomicBool, Ordering};

use small_core::ops::secrets;

static PANICKED: AtomicBool = AtomicBool::new(false);

/// Set (not `0`) to print the backtrace of an internal error.
const BACKTRACE_ENV: &str = "SMALL_BACKTRACE";

/// Longest part of a panic message that is shown.
const MAX_MESSAGE: usize = 200;

/// Replace the default panic hook with [`report`].
pub fn install() {
    std::panic::set_hook(Box::new(report));
}

/// Whether any thread has panicked since [`install`].
pub fn happened() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

fn report(info: &PanicHookInfo<'_>) {
    // Only the first panic is reported: a second one (a thread joining a panicked one)
    // adds nothing.
    if PANICKED.swap(true, Ordering::SeqCst) {
        return;
    }
    let text = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    let location = info
        .location()
        .map(|l| format!("{}:{}", l.file(), l.line()))
        .unwrap_or_else(|| "unknown place".to_string());
    let mut out = format!(
        "error[internal]: small hit an internal error (a bug in small, not in your workspace)\n  = at: {location}: {}\n  = help: nothing was half-written (writes to .small/ are atomic or redone from the journal by the next command); please report this with the command you ran\n",
        shown_message(&text)
    );
    if std::env::var_os(BACKTRACE_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        out.push_str(&format!("{}\n", Backtrace::force_capture()));
    }
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
}

/// The panic message as shown: one line, at most [`MAX_MESSAGE`] characters, secrets
/// masked, control characters escaped.
fn shown_message(text: &str) -> String {
    // Masked before it is cut: a secret cut in two might no longer look like one.
    let one_line: String = secrets::redact(text)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut cut: String = one_line.chars().take(MAX_MESSAGE).collect();
    if one_line.chars().count() > MAX_MESSAGE {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_cut_and_its_secrets_masked() {
        let token = ["gh", "p_0123456789abcdefghijABCDEFGHIJ012345"].concat();
        let msg = format!("byte index 3 is out of range of `password {token}`\nnext line");
        let shown = shown_message(&msg);
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(!shown.contains('\n'));
        let long = "x".repeat(1000);
        assert_eq!(shown_message(&long).chars().count(), MAX_MESSAGE + 1);
    }
}
