//! The typed model of the protocol's vocabulary: task statuses, workspace kinds, the
//! `--workspace` scope, and the two kinds of replay ID. Every front end parses and prints
//! these through the same functions, so the spellings a command accepts never differ.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::spec::consts::{KIND_EXAMPLES, KIND_REPO_ROOT};

/// A plan task's status (and a progress entry's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
    Blocked,
    /// Dropped from the plan but kept in its history.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in the order a plan moves through them.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Pending,
        TaskStatus::InProgress,
        TaskStatus::Completed,
        TaskStatus::Blocked,
        TaskStatus::Cancelled,
    ];

    /// The spelling written into the artifacts: `in_progress`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Parse a status as written by hand: case-insensitive, surrounding spaces ignored.
    pub fn parse(text: &str) -> Option<TaskStatus> {
        let t = super::trim(text);
        TaskStatus::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(t))
    }

    /// Whether `text` (as written in a plan) means this status.
    pub fn is(self, text: &str) -> bool {
        TaskStatus::parse(text) == Some(self)
    }

    /// Completed or blocked: a task the agent has closed (S1 wants evidence for it).
    pub fn is_closed(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Blocked)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TaskStatus::parse(s).ok_or_else(|| {
            let all: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("invalid status `{s}`: use one of {}", all.join(", "))
        })
    }
}

/// `workspace.small.yml` kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkspaceKind {
    RepoRoot,
    Examples,
}

impl WorkspaceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceKind::RepoRoot => KIND_REPO_ROOT,
            WorkspaceKind::Examples => KIND_EXAMPLES,
        }
    }
    /// The `--workspace` value that selects this kind.
    pub fn scope_name(self) -> &'static str {
        match self {
            WorkspaceKind::RepoRoot => "root",
            WorkspaceKind::Examples => "examples",
        }
    }
}

impl FromStr for WorkspaceKind {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            KIND_REPO_ROOT => Ok(WorkspaceKind::RepoRoot),
            KIND_EXAMPLES => Ok(WorkspaceKind::Examples),
            _ => Err(()),
        }
    }
}

impl fmt::Display for WorkspaceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `--workspace root|examples|any`: which workspace kinds a command runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    #[default]
    Root,
    Examples,
    Any,
}

impl Scope {
    pub fn allows(self, kind: WorkspaceKind) -> bool {
        match self {
            Scope::Any => true,
            Scope::Root => kind == WorkspaceKind::RepoRoot,
            Scope::Examples => kind == WorkspaceKind::Examples,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Root => "root",
            Scope::Examples => "examples",
            Scope::Any => "any",
        }
    }
    /// The one parser every command uses for `--workspace` (see [`FromStr`]).
    pub fn parse(s: &str) -> Result<Scope, String> {
        s.parse()
    }
}

impl FromStr for Scope {
    type Err = String;
    /// Case-insensitive, surrounding spaces ignored (as the reference does).
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "root" => Ok(Scope::Root),
            "examples" => Ok(Scope::Examples),
            "any" => Ok(Scope::Any),
            _ => Err(format!(
                "invalid workspace scope `{s}`: use root, examples or any"
            )),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which artifacts exist: the status documents of both profiles carry it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ArtifactPresence {
    pub intent: bool,
    pub constraints: bool,
    pub plan: bool,
    pub progress: bool,
    pub handoff: bool,
}

/// Where a run's replay ID is written in `workspace.small.yml`.
pub const RUN_REPLAY_ID_POINTER: &str = "/run/replay_id";
/// Where the replay ID is written in `handoff.small.yml`.
pub const HANDOFF_REPLAY_ID_POINTER: &str = "/replayId/value";

/// A run's replay ID: 64 lower-case hex characters (SHA-256 of intent, plan and
/// constraints; see [`crate::spec::replayid`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
#[cfg(test)]
pub struct RunReplayId(String);

#[cfg(test)]
impl RunReplayId {
    /// Accepts exactly 64 hex digits (either case; stored lower-case).
    pub fn parse(text: &str) -> Option<RunReplayId> {
        let t = text.trim();
        (t.len() == crate::spec::replayid::REPLAY_ID_HEX_LEN
            && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| RunReplayId(t.to_ascii_lowercase()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The first 12 characters, as shown in lists.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

#[cfg(test)]
impl fmt::Display for RunReplayId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A manifest's replay ID: 43 base64url characters without padding (SHA-256 of the
/// protocol version and the manifest's canonical JSON; as the API computes it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ManifestReplayId(String);

impl ManifestReplayId {
    /// Length of a manifest replay ID.
    pub const LEN: usize = 43;

    /// Accepts exactly 43 base64url characters.
    pub fn parse(text: &str) -> Option<ManifestReplayId> {
        (text.len() == Self::LEN
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .then(|| ManifestReplayId(text.to_string()))
    }
    /// Wrap a digest already encoded as base64url (the caller computed it).
    pub(crate) fn from_encoded(text: String) -> ManifestReplayId {
        debug_assert_eq!(text.len(), Self::LEN);
        ManifestReplayId(text)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for ManifestReplayId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_status_round_trips_and_parses_loosely() {
        for s in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(s.as_str()), Some(s));
            assert_eq!(s.to_string().parse::<TaskStatus>().unwrap(), s);
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
        }
        assert_eq!(
            TaskStatus::parse(" Completed "),
            Some(TaskStatus::Completed)
        );
        assert_eq!(TaskStatus::parse("done"), None);
        assert!("done"
            .parse::<TaskStatus>()
            .unwrap_err()
            .contains("in_progress"));
        assert!(TaskStatus::Blocked.is_closed() && !TaskStatus::InProgress.is_closed());
    }

    #[test]
    fn scope_accepts_every_spelling_every_command_documents() {
        for (text, want) in [
            ("root", Scope::Root),
            ("ROOT", Scope::Root),
            (" Examples ", Scope::Examples),
            ("any", Scope::Any),
        ] {
            assert_eq!(Scope::parse(text), Ok(want), "{text}");
        }
        assert!(Scope::parse("everywhere").is_err());
        assert!(Scope::Root.allows(WorkspaceKind::RepoRoot));
        assert!(!Scope::Root.allows(WorkspaceKind::Examples));
        assert!(Scope::Any.allows(WorkspaceKind::Examples));
    }

    #[test]
    fn replay_ids_are_distinct_and_checked() {
        let hex = "A".repeat(64);
        let run = RunReplayId::parse(&hex).unwrap();
        assert_eq!(run.as_str(), "a".repeat(64));
        assert_eq!(run.short().len(), 12);
        assert!(RunReplayId::parse(&"a".repeat(63)).is_none());
        assert!(RunReplayId::parse(&"g".repeat(64)).is_none());

        let b64 = "abcDEF0123-_".repeat(4)[..43].to_string();
        assert!(ManifestReplayId::parse(&b64).is_some());
        assert!(ManifestReplayId::parse(&b64[..42]).is_none());
        assert!(ManifestReplayId::parse(&format!("{}=", &b64[..42])).is_none());
    }
}
