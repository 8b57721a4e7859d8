//! `small reconcile`: preview or resolve the conflicts of a 2.0.0 workspace.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write::{self, Resolution};
use small_core::v2::{self, Conflict};

use crate::error::{CliError, CmdResult};
use crate::v2writes::{self as v2w, SessionFlags};
use crate::GlobalArgs;

/// Preview the semantic conflicts of a SMALL 2.0.0 workspace (concurrent task outcomes,
/// definitions, modes, policies), or resolve one with a reviewed resolution file:
///
///   {"profile": "2.0.0", "conflict_id": "...", "heads": [...], "selected_event": "...",
///    "reason": "...", "expected_frontier": "..."}
///
/// --apply writes a conflict_resolved event in the session, only if --expect-state and the
/// file's expected_frontier are the current frontier and the heads are the conflict's.
///
/// Exit codes: 0 previewed or resolved; 1 refused (stale frontier, no such conflict, heads
/// that differ, v1 workspace, damaged records); 2 bad flags or file, or the lock wait ran
/// out.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// List the conflicts and what resolves them (read-only)
    #[arg(long, conflicts_with = "apply", required_unless_present = "apply")]
    pub preview: bool,
    /// Apply this reviewed resolution file
    #[arg(long, value_name = "FILE")]
    pub apply: Option<PathBuf>,
    /// With --apply: the frontier you reviewed (compare-and-swap)
    #[arg(long, value_name = "FRONTIER", requires = "apply")]
    pub expect_state: Option<String>,
    #[command(flatten)]
    pub v2: SessionFlags,
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

fn conflict(c: &Conflict) -> GoValue {
    let mut m = vec![
        ("id".into(), v2w::s(&c.id)),
        ("kind".into(), v2w::s(&c.kind)),
    ];
    if !c.task_id.is_empty() {
        m.push(("task_id".into(), v2w::s(&c.task_id)));
    }
    m.push((
        "heads".into(),
        GoValue::Arr(c.heads.iter().map(|h| v2w::s(h)).collect()),
    ));
    m.push(("message".into(), v2w::s(&c.message)));
    GoValue::Obj(m)
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "reconcile")?;
    let Some(file) = &args.apply else {
        return preview(&root, args.json, g);
    };
    let Some(expect) = args
        .expect_state
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    else {
        return Err(CliError::usage("--expect-state is required with --apply"));
    };
    let bytes = small_core::workspace::fsio::read_user_input(file, v2::MAX_RECORD_BYTES)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", file.display())))?;
    let res = Resolution::parse(&bytes)?;
    let explicit = args
        .v2
        .session
        .clone()
        .or_else(|| Some(res.session_id.clone()).filter(|s| !s.trim().is_empty()));
    let session = write::resolve_session(&root, explicit.as_deref())?;
    let mut w = args.v2.open(&root)?;
    let (e, id) = write::reconcile(&mut w, &session, &res, expect)?;
    if args.json {
        return v2w::print(&GoValue::map(vec![
            ("frontier".into(), v2w::s(&w.state.frontier)),
            ("profile".into(), v2w::s("2.0.0")),
            (
                "remaining_conflicts".into(),
                GoValue::Arr(w.state.conflicts.iter().map(conflict).collect()),
            ),
            ("resolution_event".into(), v2w::event(&e)),
            ("resolved".into(), v2w::s(&id)),
        ]));
    }
    g.info(format!(
        "Resolved {id} with {}; frontier {}",
        e.draft.event_id, w.state.frontier
    ));
    Ok(())
}

fn preview(root: &std::path::Path, json: bool, g: &GlobalArgs) -> CmdResult {
    let checked = v2::check(root, &root.join(".small"));
    let damaged: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && v2::stage_of(&d.code) != v2::Stage::State)
        .cloned()
        .collect();
    if !damaged.is_empty() {
        g.diagnostics(&damaged, |_| None, true);
        return Err(CliError::invalid(
            "the 2.0.0 records are damaged (see `small check --strict`)",
        ));
    }
    let st = &checked.state;
    let mut next: Vec<String> = st
        .conflicts
        .iter()
        .map(|c| {
            if c.kind == "policy_material" {
                format!(
                    "restore the reviewed policy bytes selected by {}",
                    c.heads.join(",")
                )
            } else {
                format!("create a resolution for {} referencing all heads", c.id)
            }
        })
        .collect();
    if next.is_empty() {
        next.push("no reconciliation required".into());
    }
    if json {
        return v2w::print(&GoValue::map(vec![
            (
                "conflict_count".into(),
                GoValue::Int(st.conflicts.len() as i64),
            ),
            (
                "conflicts".into(),
                GoValue::Arr(st.conflicts.iter().map(conflict).collect()),
            ),
            ("frontier".into(), v2w::s(&st.frontier)),
            ("mode".into(), v2w::s(&st.mode)),
            (
                "next_steps".into(),
                GoValue::Arr(next.iter().map(|n| v2w::s(n)).collect()),
            ),
            ("profile".into(), v2w::s("2.0.0")),
        ]));
    }
    g.info(format!(
        "frontier {}; conflicts {}",
        st.frontier,
        st.conflicts.len()
    ));
    for c in &st.conflicts {
        g.info(format!("{}\t{}\t{}", c.id, c.kind, c.message));
    }
    for n in &next {
        g.info(format!("next: {n}"));
    }
    Ok(())
}
