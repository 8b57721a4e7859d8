//! The agents commands (`agents check`, `agents apply`, `agents install`): the SMALL block in
//! AGENTS.md and the harness hooks (built in `authoring::agents` and `authoring::hooks`).

pub use crate::authoring::agents::{
    apply, block_body, canonical_block, check, find_block, read_target, target_path, Action,
    Applied, ApplyError, ApplyRequest, CheckOptions, CheckReport, ComposeMode, Composed, Request,
};

use crate::ops::report::{outln, Report};

impl Report for Applied {
    /// What was done to the file, or for a dry run what would be and the diff.
    fn text(&self) -> String {
        let mut o = String::new();
        let c = &self.composed;
        if !self.dry_run {
            outln!(o, "{}", describe(c, &self.name, false));
        } else if c.action == Action::Unchanged {
            outln!(o, "{}", describe(c, &self.name, true));
        } else {
            outln!(
                o,
                "Dry run: {} (nothing written)",
                describe(c, &self.name, true)
            );
            o.push_str(&unified_diff(
                self.existing.as_deref().unwrap_or(""),
                &c.text,
                &self.name,
            ));
        }
        o
    }
}

/// A unified diff of the change, with a few lines of context.
fn unified_diff(old: &str, new: &str, name: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{name} (current)"),
            &format!("{name} (after apply)"),
        )
        .to_string();
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out
}

impl Report for CheckReport {
    /// The file, its block (version, lines, structure, drift), the error and its fix, and
    /// the result.
    fn text(&self) -> String {
        let r = self;
        let mut o = String::new();
        let status = if r.has_file { "exists" } else { "missing" };
        outln!(o, "file:      {} ({status})", r.file_path);
        if r.has_block {
            let lines = r
                .block_lines
                .map(|[a, b]| format!(", lines {a}-{b}"))
                .unwrap_or_default();
            outln!(
                o,
                "block:     v{}{lines}",
                r.block_version.as_deref().unwrap_or("?")
            );
            outln!(
                o,
                "structure: {}",
                if r.block_valid { "valid" } else { "invalid" }
            );
            outln!(
                o,
                "drift:     {}",
                if r.has_drift {
                    "yes, the block differs from the canonical one"
                } else {
                    "none"
                }
            );
        } else if r.has_file {
            outln!(o, "block:     none");
        }
        if let Some(e) = &r.error {
            outln!(o, "error:     {e}");
        }
        if let Some(h) = &r.recommendation {
            outln!(o, "help:      {h}");
        }
        outln!(o, "result:    {}", if r.failed { "FAILED" } else { "ok" });
        o
    }
}
pub use crate::authoring::hooks::{install, session_start_output, Host, InstallRequest, Installed};

/// One line saying what composing did to the file `file_name` (past tense, or conditional
/// for a dry run): the words `init` and `agents apply` say of AGENTS.md.
pub fn describe(composed: &Composed, file_name: &str, dry_run: bool) -> String {
    let lines = find_block(&composed.text)
        .ok()
        .flatten()
        .map(|b| format!(" (lines {}-{})", b.begin_line, b.end_line))
        .unwrap_or_default();
    let version = crate::spec::consts::PROTOCOL_VERSION;
    let (verb_done, verb_would) = match composed.action {
        Action::Created => ("Created", "Would create"),
        Action::Replaced => ("Replaced", "Would replace"),
        Action::Unchanged => ("", ""),
        Action::Appended => ("Appended", "Would append"),
        Action::Prepended => ("Prepended", "Would prepend"),
        Action::Overwritten => ("Overwrote", "Would overwrite"),
    };
    let verb = if dry_run { verb_would } else { verb_done };
    match composed.action {
        Action::Created => {
            format!("{verb} {file_name} with the SMALL harness block v{version}{lines}")
        }
        Action::Replaced => {
            let upgrade = match composed.previous_version.as_deref() {
                Some(v) if v != version => format!(", upgrading it from v{v} to v{version}"),
                _ => String::new(),
            };
            format!(
                "{verb} the SMALL harness block in {file_name}{lines}{upgrade}; content outside the block is unchanged"
            )
        }
        Action::Unchanged => {
            format!("{file_name} already has the current SMALL harness block; nothing to change")
        }
        Action::Appended => format!(
            "{verb} the SMALL harness block to {file_name}{lines}, after the existing content (which is unchanged)"
        ),
        Action::Prepended => format!(
            "{verb} the SMALL harness block to {file_name}{lines}, before the existing content (which is unchanged)"
        ),
        Action::Overwritten => format!(
            "{verb} {file_name}: the whole file is now the SMALL harness block v{version}"
        ),
    }
}

impl Installed {
    /// A dry run's unified diff of the settings file.
    pub fn diff(&self) -> String {
        let rel = self.rel;
        similar::TextDiff::from_lines(self.old.as_deref().unwrap_or(""), &self.new)
            .unified_diff()
            .header(&format!("a/{rel}"), &format!("b/{rel}"))
            .to_string()
    }
}

impl Report for Installed {
    /// Whether the hook was already there, else the file written and what the hook runs.
    fn text(&self) -> String {
        let mut o = String::new();
        let rel = self.rel;
        if self.unchanged() {
            outln!(
                o,
                "{rel}: the SessionStart hook is already installed; nothing to change"
            );
        } else {
            outln!(
                o,
                "{} {rel}: SessionStart hook runs `{}`",
                if self.old.is_some() {
                    "Updated"
                } else {
                    "Created"
                },
                self.command
            );
        }
        o
    }
}
