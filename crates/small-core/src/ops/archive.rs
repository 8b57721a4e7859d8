//! `archive` and `archive verify`: what they say of an archive written or re-hashed (the
//! archives themselves are written and read in `history::archive`).

use crate::history::archive::{ArchiveReport, FileState, VerifyReport};
use crate::history::runs::{short_id, RunError};
use crate::ops::report::{outln, Report};

impl Report for ArchiveReport {
    /// Where the files went (or that the archive was already there), then each file's digest
    /// (a v1 archive) or the frontier (2.0.0).
    fn text(&self) -> String {
        let mut o = String::new();
        let (n, dir) = (self.files.len(), self.dir.display());
        if let Some(frontier) = &self.frontier {
            if self.unchanged {
                outln!(o, "Archive at {dir} is already up to date ({n} files)");
            } else {
                let verb = if self.replaced {
                    "Replaced the archive with"
                } else {
                    "Archived"
                };
                outln!(o, "{verb} {n} files to {dir}");
            }
            outln!(o, "Frontier: {frontier}");
            return o;
        }
        let short = short_id(&self.replay_id, 16);
        if self.unchanged {
            outln!(
                o,
                "Archive of run {short} at {dir} is already up to date ({n} files)"
            );
        } else {
            let verb = if self.replaced {
                "Replaced the archive"
            } else {
                "Archived"
            };
            outln!(o, "{verb} {n} files of run {short} to {dir}");
        }
        for f in &self.files {
            outln!(o, "  {}  {}", short_id(&f.sha256, 12), f.name);
        }
        o
    }
}

impl VerifyReport {
    /// One line a file (only those that are not intact with `problems_only`), then, when
    /// every file is intact and all were asked for, that the archive is.
    pub fn lines(&self, problems_only: bool) -> String {
        let mut o = String::new();
        for c in &self.files {
            let line = match c.state {
                FileState::Ok if problems_only => continue,
                FileState::Ok => format!("ok        {}", c.name),
                FileState::Changed => format!(
                    "CHANGED   {} (expected sha256 {}, found {})",
                    c.name,
                    c.expected.as_deref().unwrap_or("-"),
                    c.actual.as_deref().unwrap_or("-")
                ),
                FileState::Missing => format!("MISSING   {}", c.name),
                FileState::Unlisted => format!("UNLISTED  {} (not in archive.small.yml)", c.name),
                FileState::Unsafe => format!("UNSAFE    {} (not a regular file)", c.name),
            };
            outln!(o, "{line}");
        }
        if !problems_only && self.refusal().is_none() {
            outln!(
                o,
                "Archive {} is intact ({} files).",
                self.dir.display(),
                self.files.len()
            );
        }
        o
    }

    /// The refusal an archive that does not match its manifest carries.
    pub fn refusal(&self) -> Option<RunError> {
        let bad = self
            .files
            .iter()
            .filter(|c| c.state != FileState::Ok)
            .count();
        (bad > 0).then(|| {
            RunError::invalid(format!(
                "archive {} does not match its manifest: {bad} file(s) changed, missing or added",
                self.dir.display()
            ))
        })
    }
}

impl Report for VerifyReport {
    fn text(&self) -> String {
        self.lines(false)
    }
}
