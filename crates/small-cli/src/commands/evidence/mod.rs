//! `small evidence`: evidence blobs and receipts of a 2.0.0 workspace (docs/v2.md).

pub mod declare_unavailable;
pub mod save;
pub mod verify;

subcommands! {
    /// Save, verify, or declare unavailable the evidence of a SMALL 2.0.0 workspace.
    ///
    /// Evidence bytes live in `.small/evidence/blobs/sha256/<digest>`; a receipt in
    /// `.small/receipts/sha256/<digest>.json` says what they prove (strength: narrative_assertion,
    /// cli_captured, verified_artifact; availability: verified, unavailable, ...).
    Save => save,
    Verify => verify,
    DeclareUnavailable => declare_unavailable,
}
