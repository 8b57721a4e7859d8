//! `small progress add`: append one entry to the progress log.

use serde_json::json;
use small_core::authoring::record;

use crate::error::{CliError, CmdResult};
use crate::v2writes::{self as v2w, SessionFlags};
use crate::writes::{self as shared, RecordFlags};
use crate::GlobalArgs;

/// Append a progress entry to .small/progress.small.yml.
///
/// The timestamp is generated (RFC 3339 UTC with nanoseconds) and is always later than the
/// last entry's. Only the new entry is written, at the end of the file; nothing else in the
/// log changes. Entries are bound to the current run (`replayId`) when the workspace has one.
/// The task must be a plan task (or meta/<name>); an unknown id is refused before anything is
/// written. A completed entry needs the caller's evidence and completed dependencies (or
/// --force, which the entry records).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Task id the entry is about (a plan task, or meta/<name> for bookkeeping)
    #[arg(long = "task", value_name = "ID")]
    pub task: String,
    /// pending, in_progress, completed, blocked or cancelled
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    #[command(flatten)]
    pub record: RecordFlags,
    #[command(flatten)]
    pub v2: SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if let Some(root) = v2w::v2_root(args.record.dir.as_deref()) {
        return run_v2(&root, args, g);
    }
    args.v2.refuse_on_v1()?;
    let req = args.record.request(&args.task, &args.status)?;
    let root = shared::root(args.record.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.record.workspace, "progress add", true)?;
    let out = record::add_progress(&mut txn, &req)?;
    let report = txn.commit()?;
    if args.record.json {
        let v = json!({
            "workspace": root.display().to_string(),
            "entry": out.entry,
            "task_exists_in_plan": out.task_exists_in_plan,
            "forced_past": out.forced_past,
        });
        return shared::print_json(Some(&report), v);
    }
    shared::say(
        g,
        format!(
            "Recorded progress: {} {} at {}",
            out.task_id, out.status, out.timestamp
        ),
    );
    shared::print_changes(g, &report);
    Ok(())
}

fn run_v2(root: &std::path::Path, args: Args, g: &GlobalArgs) -> CmdResult {
    let r = &args.record;
    let evidence = [
        &r.evidence,
        &r.command,
        &r.test,
        &r.link,
        &r.commit,
        &r.verification,
    ]
    .iter()
    .filter_map(|v| v.as_deref())
    .collect::<Vec<_>>()
    .join("; ");
    let occurred = match (&r.at, &r.after) {
        (Some(at), _) => Some(v2_time(at, "--at")?),
        (None, Some(after)) => {
            let t = v2_time(after, "--after")?;
            Some(if small_core::v2::record::now() > t {
                small_core::v2::record::now()
            } else {
                t
            })
        }
        _ => None,
    };
    let session = args.v2.session(root)?;
    let mut w = args.v2.open(root)?;
    let notes = r.notes.clone().unwrap_or_default();
    let (t, e) = small_core::v2::write::progress(
        &mut w,
        &session,
        &args.task,
        &args.status,
        &evidence,
        &notes,
        occurred,
    )?;
    if r.json {
        return v2w::print(&small_core::v2::gojson::GoValue::map(vec![
            ("alias".into(), v2w::s(&t.task.alias)),
            ("event".into(), v2w::event(&e)),
            ("profile".into(), v2w::s("2.0.0")),
            ("task_id".into(), v2w::s(&t.task.id)),
        ]));
    }
    shared::say(
        g,
        format!(
            "progress added: {} {} {}",
            t.task.alias,
            args.status.trim().to_lowercase(),
            e.draft.event_id
        ),
    );
    Ok(())
}

/// An RFC 3339 time given on the command line, as the reference writes it (UTC).
fn v2_time(s: &str, flag: &str) -> Result<String, CliError> {
    let t = time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
        .map_err(|e| CliError::usage(format!("invalid {flag} {s:?}: {e}")))?;
    Ok(small_core::v2::record::rfc3339_nano(t))
}
