//! What the cross-file rules need to know about the progress log: the facts the progress
//! linter gathers in one pass and the project state and the strict rules read.

use crate::diag::Span;
use crate::spec::command::CommandClaim;
use crate::spec::plan::{PlanIndex, TaskSet};

/// What the cross-file rules need to know about the progress log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProgressFacts {
    /// Task ids (trimmed) that have at least one entry.
    pub with_entries: TaskSet,
    /// Task ids with an entry carrying non-empty `evidence` or `notes` (S1's notion).
    pub with_strict_evidence: TaskSet,
    /// Task ids with a completion record of their own: an entry that is not the tool's
    /// bookkeeping (`crate::spec::bookkeeping`) whose status is `completed` (or absent).
    pub with_completion: TaskSet,
    /// Like `with_completion`, with non-empty `evidence` or `notes` (S1 for completed tasks).
    pub with_completion_evidence: TaskSet,
    /// Entries in the S2 scope whose task id is not in the plan: (index, id, span).
    pub s2_offenders: Vec<(usize, String, Span)>,
    /// Number of entries seen.
    pub count: usize,
    /// What entries claim about their commands, checked against the proof files by the
    /// strict gates (`gates::proofs` checks them).
    pub commands: Vec<CommandClaim>,
}

impl ProgressFacts {
    /// No facts yet, the task sets counting by the ids of `plan`.
    pub fn new(plan: &PlanIndex) -> ProgressFacts {
        ProgressFacts {
            with_entries: TaskSet::new(plan),
            with_strict_evidence: TaskSet::new(plan),
            with_completion: TaskSet::new(plan),
            with_completion_evidence: TaskSet::new(plan),
            s2_offenders: Vec::new(),
            count: 0,
            commands: Vec::new(),
        }
    }
}
