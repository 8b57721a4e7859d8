//! `small session`: the sessions of a 2.0.0 workspace (docs/v2.md).

pub mod close;
pub mod list;
pub mod show;
pub mod start;

subcommands! {
    /// Start, list, show and close the sessions of a SMALL 2.0.0 workspace.
    ///
    /// A session is one agent's or person's run of work: its record in `.small/sessions/` and its
    /// events in `.small/events/<session>/`.
    Start => start,
    List => list,
    Show => show,
    Close => close,
}
