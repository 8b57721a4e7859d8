//! The gate commands (`check`, `lint`, `verify`, `validate`) as the front ends call them: the
//! requests, outcomes and verdicts of `gates`, and the diagnostic shapes their documents carry.

pub use crate::gates::check::{GateOptions, JsonDiagnostic, StageReport, StageStatus};
/// The page and the store list only the canonical files of a workspace.
pub use crate::gates::layout::is_canonical_file_name;
pub use crate::gates::report::{
    check, compact_line, lint, locate, schemas, v2_check_report, v2_checked, validate, verify,
    Checked, GateOutcome, GateRequest, ValidateRequest, Verdict,
};
/// The schemas the server publishes and the MCP server validates against.
pub use crate::gates::schemas::{embedded_text, SchemaSet};
