//! The parsed roots of a workspace's five artifacts, as the rules and the project state read
//! them together.

use crate::spec::consts::ArtifactKind;
use crate::yaml::Node;

/// The parsed roots of the five artifacts (any may be absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Docs<'a> {
    pub intent: Option<&'a Node>,
    pub constraints: Option<&'a Node>,
    pub plan: Option<&'a Node>,
    pub progress: Option<&'a Node>,
    pub handoff: Option<&'a Node>,
}

impl<'a> Docs<'a> {
    pub fn get(&self, kind: ArtifactKind) -> Option<&'a Node> {
        match kind {
            ArtifactKind::Intent => self.intent,
            ArtifactKind::Constraints => self.constraints,
            ArtifactKind::Plan => self.plan,
            ArtifactKind::Progress => self.progress,
            ArtifactKind::Handoff => self.handoff,
        }
    }

    pub fn set(&mut self, kind: ArtifactKind, node: Option<&'a Node>) {
        match kind {
            ArtifactKind::Intent => self.intent = node,
            ArtifactKind::Constraints => self.constraints = node,
            ArtifactKind::Plan => self.plan = node,
            ArtifactKind::Progress => self.progress = node,
            ArtifactKind::Handoff => self.handoff = node,
        }
    }
}
