//! `small policy`: the policy of a 2.0.0 workspace (docs/v2.md).

pub mod revise;
pub mod show;

subcommands! {
    /// Show or revise the policy of a SMALL 2.0.0 workspace (`.small/policy/intent.small.yml`,
    /// `.small/policy/constraints.small.yml`): it changes only with a policy_changed event.
    Show => show,
    Revise => revise,
}
