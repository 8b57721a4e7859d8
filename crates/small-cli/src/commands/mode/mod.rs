//! `small mode`: the collaboration mode of a 2.0.0 workspace (docs/v2.md).

pub mod set;
pub mod show;

subcommands! {
    /// Show or set the mode of a SMALL 2.0.0 workspace: solo (one active session) or
    /// collaborative (several).
    Show => show,
    Set => set,
}
