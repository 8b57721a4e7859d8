//! `merge-driver`: the git merge driver for `.small/` files (built in `authoring::merge`).

pub use crate::authoring::merge::{
    driver_command_for, handoff_needs_regeneration, install, merge_files, InstallReport,
    MergeFilesError, MergeFilesRequest, MergeKind, HANDOFF_STALE_MARK,
};

impl crate::ops::report::Report for InstallReport {
    /// The repository, then one line per thing the install did or found already done.
    fn text(&self) -> String {
        use crate::ops::report::outln;
        let mut o = String::new();
        outln!(
            o,
            "Merge driver for SMALL artifacts in {}",
            self.repo.display()
        );
        for line in self.lines() {
            outln!(o, "  {line}");
        }
        o
    }
}
