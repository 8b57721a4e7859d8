//! Constants the SMALL v1.0.0 specification fixes: versions, file names, kinds, owners.

/// The protocol version every canonical artifact carries in `small_version`.
pub const PROTOCOL_VERSION: &str = "1.0.0";

/// The workspace directory name.
pub const SMALL_DIR: &str = ".small";
/// Operational data that must stay outside `.small/` (logs, locks, drafts).
pub const CACHE_DIR: &str = ".small-cache";
/// Default run store for `small run snapshot`.
pub const RUNS_DIR: &str = ".small-runs";
/// Default archive directory for `small archive`.
pub const ARCHIVE_DIR: &str = ".small-archive";
/// The extension directory the spec allows inside `.small/`.
pub const EXT_DIR: &str = "ext";

/// The five canonical artifacts, in the spec's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArtifactKind {
    Intent,
    Constraints,
    Plan,
    Progress,
    Handoff,
}

impl ArtifactKind {
    pub const ALL: [ArtifactKind; 5] = [
        ArtifactKind::Intent,
        ArtifactKind::Constraints,
        ArtifactKind::Plan,
        ArtifactKind::Progress,
        ArtifactKind::Handoff,
    ];

    /// Short name: `intent`, `constraints`, ...
    pub fn name(self) -> &'static str {
        match self {
            ArtifactKind::Intent => "intent",
            ArtifactKind::Constraints => "constraints",
            ArtifactKind::Plan => "plan",
            ArtifactKind::Progress => "progress",
            ArtifactKind::Handoff => "handoff",
        }
    }

    /// File name inside `.small/`: `intent.small.yml`, ...
    pub fn file_name(self) -> &'static str {
        match self {
            ArtifactKind::Intent => "intent.small.yml",
            ArtifactKind::Constraints => "constraints.small.yml",
            ArtifactKind::Plan => "plan.small.yml",
            ArtifactKind::Progress => "progress.small.yml",
            ArtifactKind::Handoff => "handoff.small.yml",
        }
    }

    /// Schema file name: `intent.schema.json`, ...
    pub fn schema_file(self) -> &'static str {
        match self {
            ArtifactKind::Intent => "intent.schema.json",
            ArtifactKind::Constraints => "constraints.schema.json",
            ArtifactKind::Plan => "plan.schema.json",
            ArtifactKind::Progress => "progress.schema.json",
            ArtifactKind::Handoff => "handoff.schema.json",
        }
    }

    /// The owner the spec requires in the artifact's `owner` field.
    pub fn owner(self) -> &'static str {
        match self {
            ArtifactKind::Intent | ArtifactKind::Constraints => "human",
            ArtifactKind::Plan | ArtifactKind::Progress | ArtifactKind::Handoff => "agent",
        }
    }

    /// Workspace-relative path: `.small/plan.small.yml`.
    pub fn rel_path(self) -> String {
        small_rel(self.file_name())
    }

    pub fn from_name(name: &str) -> Option<ArtifactKind> {
        ArtifactKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The workspace-relative path of a file inside `.small/`: `.small/<file>`. Every
/// `.small/` path the tool prints or writes is built here.
pub fn small_rel(file: &str) -> String {
    format!("{SMALL_DIR}/{file}")
}

/// Workspace metadata file inside `.small/`.
pub const WORKSPACE_FILE: &str = "workspace.small.yml";

/// Workspace kinds (`workspace.small.yml` `kind`).
pub const KIND_REPO_ROOT: &str = "repo-root";
pub const KIND_EXAMPLES: &str = "examples";

/// Fields that count as evidence for invariant 2.
pub const EVIDENCE_FIELDS: [&str; 6] = [
    "evidence",
    "verification",
    "command",
    "test",
    "link",
    "commit",
];

/// Progress task id prefix for bootstrap / meta entries (exempt from S2).
pub const META_TASK_PREFIX: &str = "meta/";

/// AGENTS.md harness markers.
pub const AGENTS_FILE: &str = "AGENTS.md";
pub fn harness_begin_marker() -> String {
    format!("<!-- BEGIN SMALL HARNESS v{PROTOCOL_VERSION} -->")
}
pub fn harness_end_marker() -> String {
    format!("<!-- END SMALL HARNESS v{PROTOCOL_VERSION} -->")
}

/// Version of this implementation (printed by `small version`).
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
