//! `small agents`: manage the SMALL harness block in AGENTS.md (never touches `.small/`).

pub mod apply;
pub mod check;
pub mod hooks;
pub mod print;

subcommands! {
    /// Manage the SMALL harness block in AGENTS.md.
    ///
    /// The block is the part of AGENTS.md between
    /// `<!-- BEGIN SMALL HARNESS v1.0.0 -->` and `<!-- END SMALL HARNESS v1.0.0 -->`. These
    /// commands change only that block (or create the file); everything outside it is left
    /// byte-for-byte as it was. They never read or write `.small/`.
    Apply => apply,
    Check => check,
    Hooks => hooks,
    Print => print,
}
