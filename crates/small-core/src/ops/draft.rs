//! `draft` and `accept`: propose an artifact in `.small-cache/drafts/`, then a human accepts
//! it into the canonical file (the files are written in `authoring::draft`); what both say.

pub use crate::authoring::draft::{
    accept, draft, open_scoped, AcceptError, AcceptRequest, Accepted, DraftRequest, Drafted,
};

use crate::ops::report::{outln, Report};
use crate::spec::consts::ArtifactKind;
use crate::workspace::error::ErrorKind;

impl Report for Drafted {
    /// Where the draft was saved and, when it is valid, the human's next step.
    fn text(&self) -> String {
        let mut o = String::new();
        let (file, name) = (self.kind.file_name(), self.kind.name());
        outln!(
            o,
            "{} draft {} ({} bytes) for .small/{file}",
            if self.replaced {
                "Replaced the"
            } else {
                "Saved the"
            },
            self.draft,
            self.bytes,
        );
        if self.valid {
            outln!(
                o,
                "The draft is a valid {file}. A human reviews it, then runs: small accept {name}"
            );
        }
        o
    }
}

impl Drafted {
    /// The warning lines of a draft `accept` would refuse: how many problems, then each.
    pub fn problem_lines(&self) -> Vec<String> {
        if self.valid {
            return Vec::new();
        }
        let mut out = vec![format!(
            "warning: the draft has {} problem(s); `small accept {}` will refuse it until they are fixed:",
            self.errors.len(),
            self.kind.name()
        )];
        out.extend(
            self.errors
                .iter()
                .map(|d| format!("  {}", d.plain().replace('\n', "\n  "))),
        );
        out
    }
}

impl Report for Accepted {
    /// What accepting did (or would do, with the diff), and the progress entry recorded.
    fn text(&self) -> String {
        let mut o = String::new();
        let (d, t) = (&self.draft, &self.target);
        if !self.changed {
            outln!(o, "{t} already matches {d}; nothing to accept");
        } else if let Some(diff) = &self.diff {
            outln!(
                o,
                "Dry run: accepting {d} would change {t} (nothing written):"
            );
            o.push_str(diff);
        } else {
            match self.old_lines {
                Some(n) => outln!(
                    o,
                    "Accepted {d} into {t} (replaced {n} lines with {})",
                    self.new_lines
                ),
                None => outln!(
                    o,
                    "Accepted {d} into {t} (new file, {} lines)",
                    self.new_lines
                ),
            }
            outln!(
                o,
                "Recorded progress entry meta/accept-{} at {}",
                self.kind.name(),
                self.timestamp.as_deref().unwrap_or_default()
            );
        }
        o
    }
}

impl AcceptError {
    /// The refusal in words, and whether the request or the system was at fault; `None`
    /// for a failed write, which carries its own diagnostic.
    pub fn words(&self, kind: ArtifactKind) -> Option<(ErrorKind, String)> {
        match self {
            AcceptError::NoDraft { draft } => Some((
                ErrorKind::Invalid,
                format!(
                    "there is no draft to accept: {draft} does not exist\n  help: write one with `small draft {} --from <file>`",
                    kind.name()
                ),
            )),
            AcceptError::Unreadable { draft, error } => {
                Some((ErrorKind::Usage, format!("cannot read {draft}: {error}")))
            }
            AcceptError::Invalid { draft, errors } => {
                let list: Vec<String> = errors
                    .iter()
                    .map(|d| format!("  {}", d.plain().replace('\n', "\n  ")))
                    .collect();
                Some((
                    ErrorKind::Invalid,
                    format!(
                        "the draft {draft} is not a valid {}; nothing was changed:\n{}\n  help: fix the draft (or write a new one with `small draft {}`), then accept again",
                        kind.file_name(),
                        list.join("\n"),
                        kind.name()
                    ),
                ))
            }
            AcceptError::Authoring(_) => None,
        }
    }
}
