//! FMT: `small_version` written as a double-quoted string (a warning; an error with
//! format-strict).

use crate::diag::{Diagnostic, Severity};
use crate::spec::consts::PROTOCOL_VERSION;
use crate::yaml::{Node, Style};

/// FMT: `small_version` should be written as a double-quoted string. `None` if fine.
pub fn version_format_drift(file: &str, root: &Node) -> Option<Diagnostic> {
    let v = root.get("small_version")?;
    if v.style == Style::DoubleQuoted {
        return None;
    }
    let how = match v.style {
        Style::SingleQuoted => "single-quoted",
        Style::Plain => "unquoted",
        _ => "not a double-quoted string",
    };
    let mut d = Diagnostic::warning(
        "FMT",
        format!("small_version is {how}; write it as \"{PROTOCOL_VERSION}\""),
    )
    .in_file(file)
    .at(Some(v.span))
    .with_path("/small_version")
    .with_help("small fix --versions");
    d.severity = Severity::Warning;
    Some(d)
}
