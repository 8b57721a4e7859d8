//! The formats the specification fixes, for the store, the server and the benchmarks: YAML
//! with positions, canonical JSON, timestamps, replay ids, kinds and versions, and the command
//! summaries evidence carries.

pub use crate::json::pointer::escape as json_pointer_escape;
pub use crate::spec::command::{
    command_ref, needs_marker, portable_path, proof_file_name, summarize, SUMMARY_CAP,
};
pub use crate::spec::consts::{
    ArtifactKind, AGENTS_FILE, KIND_EXAMPLES, KIND_REPO_ROOT, PROTOCOL_VERSION, TOOL_VERSION,
};
pub use crate::spec::model::{TaskStatus, WorkspaceKind};
pub use crate::spec::replayid::{auto_replay_id, auto_replay_id_in};

/// YAML with positions and bounds: the store keeps manifests parsed here, the benchmarks time
/// it, the fuzz command checks the fast path against the full parser.
pub mod yaml {
    pub use crate::yaml::{
        count_raw_events, fast_path_differential, parse_bytes, parse_str, parse_streaming,
        Document, Limits, Node, Value,
    };
}

/// Canonical JSON (RFC 8785): the store's digests and the server's manifest bodies.
pub mod canonical {
    pub use crate::json::canonical::{
        parse, write_json_string_bytes, JsString, ParseError, ParseErrorKind, Value,
    };
}

/// The protocol's timestamps: the store orders lineage by them.
pub mod timestamp {
    pub use crate::spec::timestamp::{format_utc_digits, now, parse};
}
