//! The run's session operations: write a handoff (mid-run or final), start a run, reset the
//! workspace for a new run.
//!
//! Each operation takes a typed request and a [`Transaction`], stages every change in it and
//! returns a typed outcome; the caller commits. Nothing here prints or knows about flags.
//!
//! * **Mid-run handoffs are normal.** A handoff records the real state of the run: the task to
//!   resume, tasks with work in this run that are not closed, blocked tasks, the last evidence.
//!   Only entries of the current run count (entries after the last `meta/reset`, and bound to
//!   the run's replayId when they carry one); the tool's bookkeeping entries
//!   ([`crate::spec::bookkeeping`]) never count as work.
//! * **The end-of-run check is explicit.** [`HandoffRequest::final_check`] refuses while a task
//!   has work in this run but is neither completed, blocked nor cancelled.
//! * **A summary a caller wrote is kept** while the resume state stays the same; a new summary,
//!   or a changed state, replaces it. The outcome says which ([`SummarySource`]).

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use crate::authoring::activity;
use crate::authoring::handoff::{
    self, compute_state_skipping, existing, Handoff, ReplayId, RunMeta, RunStatus, Strict,
};
use crate::authoring::plan::{self, Task};
use crate::authoring::progress::{self, NewEntry, TimestampRule};
use crate::authoring::snapshot::{Artifacts, WHOLE_LOG_MAX};
use crate::authoring::templates;
use crate::gates::invariants::scalar_text;
use crate::spec::bookkeeping::RESET_TASK;
use crate::spec::consts::{ArtifactKind, KIND_REPO_ROOT, SMALL_DIR};
use crate::workspace::error::{code, Error};
use crate::workspace::txn::{Transaction, TxnError};
use crate::yaml::Node;

/// A task as the outcomes name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRef {
    pub id: String,
    pub title: String,
    pub status: String,
}

impl TaskRef {
    fn of(t: &Task) -> TaskRef {
        TaskRef {
            id: t.id.clone(),
            title: t.title.clone(),
            status: t.effective_status().to_string(),
        }
    }
}

#[cfg(test)]
use crate::authoring::activity::run_activity;
pub use crate::authoring::activity::{Activity, LastEvidence};

fn is_closed(status: &str) -> bool {
    matches!(status, "completed" | "blocked" | "cancelled")
}

/// Tasks with work in this run that are neither completed, blocked nor cancelled, in plan
/// order: what `--final` refuses.
pub fn open_tasks(tasks: &[Task], activity: &Activity) -> Vec<TaskRef> {
    tasks
        .iter()
        .filter(|t| activity.worked.contains(&t.id))
        .filter(|t| !is_closed(&t.effective_status().to_ascii_lowercase()))
        .map(TaskRef::of)
        .collect()
}

/// What a handoff records about the run besides the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunReport {
    pub status: RunStatus,
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
    /// Tasks marked `in_progress`, and tasks with work in this run that are not closed.
    pub in_progress: Vec<TaskRef>,
    pub blocked: Vec<TaskRef>,
    pub last_evidence: Option<LastEvidence>,
    /// The strict check (`small check --strict`) of the workspace with the new handoff.
    pub strict_ok: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub strict_problem: String,
}

/// Where the handoff's summary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SummarySource {
    /// The request gave one.
    Given,
    /// The existing handoff's summary was kept (written by a caller; the state is unchanged).
    Kept,
    /// Computed from the run's state.
    Computed,
}

/// Ask for a handoff.
#[derive(Debug, Clone, Default)]
pub struct HandoffRequest {
    /// A summary to write (empty: keep a caller's summary while the state is unchanged, else
    /// compute one).
    pub summary: Option<String>,
    /// A manual replayId (default: the run's, else the auto hash).
    pub replay_id: Option<ReplayId>,
    /// The end-of-run check: refuse while a task of this run is left open.
    pub final_check: bool,
    /// Tasks (ids) not to resume at: those other agents hold (their live leases and done
    /// records, `small claims`). The handoff resumes at the next runnable task not among
    /// them, or at the one it would resume at when every runnable task is.
    pub skip: Vec<String>,
}

/// What [`write_handoff`] staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandoffOutcome {
    pub summary: String,
    pub summary_source: SummarySource,
    /// The summary that was replaced, when a caller's summary gave way to a changed state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_summary: Option<String>,
    pub replay_id: ReplayId,
    pub run: RunReport,
    /// Tasks with work in this run that are not closed (a `--final` handoff refuses them).
    pub open: Vec<TaskRef>,
    #[serde(skip)]
    pub handoff: Handoff,
}

/// A `--final` handoff while tasks of this run are open: `unfinished`, listing them.
pub fn unfinished(open: &[TaskRef]) -> Error {
    let mut message = format!(
        "the run is not finished: {} task(s) have work in this run but are neither completed, blocked nor cancelled",
        open.len()
    );
    for t in open.iter().take(10) {
        message.push_str(&format!(
            "\n  - {}: {} (status: {})",
            t.id, t.title, t.status
        ));
    }
    if open.len() > 10 {
        message.push_str(&format!("\n  ... and {} more", open.len() - 10));
    }
    Error::invalid(code::UNFINISHED, message).with_help(
        "close each one first (`small checkpoint --task <id> --status completed --evidence \"...\"`, --status blocked, or `small plan --cancel <id>`), or hand off mid-run without --final",
    )
}

/// [`load_tasks`], reading the plan through the operation's snapshot.
fn load_tasks_in(txn: &Transaction, snap: &Artifacts) -> Result<Vec<Task>, TxnError> {
    let rel = plan::plan_rel();
    let doc = snap.parse(txn, &rel)?.ok_or_else(|| {
        TxnError::invalid(
            code::MISSING,
            format!("{rel} does not exist; create a plan with `small plan --add`"),
        )
    })?;
    Ok(plan::tasks(&doc.root))
}

/// The run's replay id, else the auto hash of intent, plan and constraints.
pub fn default_replay_id(txn: &Transaction) -> Result<ReplayId, TxnError> {
    default_replay_id_in(txn, &Artifacts::new())
}

/// [`default_replay_id`], reading the files through the operation's snapshot.
fn default_replay_id_in(txn: &Transaction, snap: &Artifacts) -> Result<ReplayId, TxnError> {
    let value = match handoff::run_replay_id_in(txn, snap)? {
        Some(v) => v,
        None => handoff::auto_replay_id_in(txn, snap)?,
    };
    Ok(ReplayId {
        value,
        source: "auto".into(),
    })
}

/// [`current_activity`], reading through the operation's snapshot: a log whose end was read
/// whole before is not read again.
fn current_activity_in(txn: &Transaction, snap: &Artifacts) -> Result<Activity, TxnError> {
    let run = handoff::run_replay_id_in(txn, snap)?;
    let rel = progress::progress_rel();
    let Some(bytes) = snap.read(txn, &rel)? else {
        return Ok(Activity::default());
    };
    let limits = crate::yaml::Limits::default();
    let invalid = |e: crate::yaml::YamlError| {
        TxnError::invalid(
            crate::workspace::error::code::PROGRESS_LOG,
            format!("{rel} cannot be read: {e}"),
        )
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Err(match crate::yaml::parse_bytes(e.as_bytes(), &limits) {
                Err(y) => invalid(y),
                Ok(_) => TxnError::invalid(
                    crate::workspace::error::code::PROGRESS_LOG,
                    format!("{rel} is not valid UTF-8"),
                ),
            })
        }
    };
    let opts = activity::ScanOptions {
        threads: 0,
        cache_dir: Some(txn.root().join(crate::gates::progress_check::CACHE_DIR)),
        parallel_min_bytes: None,
    };
    let (found, _) = activity::scan_log(&text, run.as_deref(), &limits, &opts).map_err(invalid)?;
    Ok(found)
}

/// The current run's activity as far as the handoff needs it: `worked` holds every task of
/// `open` with work in this run (see [`activity::scan_tail`]), `last_evidence` is exact.
/// `log_tasks` (from the strict check, [`Strict::log_tasks`]): the whole log was read by the
/// fast path and names these tasks, so it may be read from its end, and only the open tasks
/// it names can have work.
fn activity_for(
    txn: &Transaction,
    snap: &Artifacts,
    open: &HashSet<String>,
    log_tasks: Option<&crate::spec::plan::TaskSet>,
) -> Result<Activity, TxnError> {
    if let Some(named) = log_tasks {
        let open: HashSet<String> = open.iter().filter(|t| named.contains(t)).cloned().collect();
        let run = handoff::run_replay_id_in(txn, snap)?;
        let limits = crate::yaml::Limits::default();
        let found = match snap.log_end(txn, &progress::progress_rel())? {
            Some((0, whole)) => String::from_utf8(whole)
                .ok()
                .and_then(|text| activity::scan_tail(&text, run.as_deref(), &limits, &open)),
            Some((at, end)) => long_log_activity(txn, (at, end), run.as_deref(), &open)?,
            None => None,
        };
        if let Some(a) = found {
            return Ok(a);
        }
    }
    current_activity_in(txn, snap)
}

/// The activity of a log longer than [`WHOLE_LOG_MAX`] from its ends: its first bytes and
/// its last sixteenth (at least [`TAIL_READ_MIN`]). `end` is the log's end as the snapshot
/// read it (offset, bytes); it is reused when it reaches back far enough. `None`: the ends
/// do not settle the activity.
fn long_log_activity(
    txn: &Transaction,
    end: (u64, Vec<u8>),
    run: Option<&str>,
    open: &HashSet<String>,
) -> Result<Option<Activity>, TxnError> {
    let rel = progress::progress_rel();
    let limits = crate::yaml::Limits::default();
    let len = end.0 + end.1.len() as u64;
    let want = len / 16 + TAIL_READ_MIN;
    let head = txn.read_head(&rel, 64 << 10)?;
    let tail = if want <= end.1.len() as u64 {
        let cut = end.1.len() - want as usize;
        Some((end.0 + cut as u64, end.1[cut..].to_vec()))
    } else {
        txn.read_tail(&rel, want)?
    };
    Ok(match (head, tail) {
        (Some(head), Some((at, tail))) => activity::log_ends(&head, at, &tail, &limits)
            .and_then(|(text, at)| activity::scan_tail_in(&text, Some(at), run, &limits, open)),
        _ => None,
    })
}

/// A log longer than [`WHOLE_LOG_MAX`] is read from its ends for the handoff's activity: its
/// last sixteenth, and at least this much.
const TAIL_READ_MIN: u64 = 1 << 20;

// Logs up to four times the least tail are read whole, as before the snapshot read them.
const _: () = assert!(WHOLE_LOG_MAX == 4 * TAIL_READ_MIN);

fn clip(s: &str, max: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The run's state: strict check of the workspace with a provisional handoff carrying
/// `replay_id`, the plan and the current run's activity. Stages nothing that stays. The
/// task to resume at is none of `skip` while another is runnable.
fn assess(
    txn: &mut Transaction,
    snap: &Artifacts,
    replay_id: &ReplayId,
    run: Option<&RunMeta>,
    fresh: bool,
    skip: &[String],
) -> Result<(Vec<Task>, Strict, RunReport, Vec<TaskRef>), TxnError> {
    let tasks = load_tasks_in(txn, snap)?;
    let provisional = Handoff {
        summary: "Handoff being generated".into(),
        current_task_id: None,
        next_steps: Vec::new(),
        replay_id: replay_id.clone(),
        run: run.cloned(),
    };
    let hrel = handoff::handoff_rel();
    let wrel = handoff::workspace_rel();
    let saved: Vec<(String, Option<Vec<u8>>, bool)> = [hrel.clone(), wrel.clone()]
        .into_iter()
        .map(|rel| {
            let staged = txn.is_staged(&rel);
            let bytes = if staged { snap.read(txn, &rel)? } else { None };
            Ok((rel, bytes, staged))
        })
        .collect::<Result<_, TxnError>>()?;
    let old = snap
        .read(txn, &hrel)?
        .and_then(|b| String::from_utf8(b).ok());
    txn.write(
        hrel.clone(),
        handoff::render(&provisional, old.as_deref()).into_bytes(),
    );
    handoff::touch_workspace_in(txn, snap, Some(&replay_id.value))?;
    let strict = handoff::strict_check_in(txn, snap);
    for (rel, bytes, staged) in saved {
        match (staged, bytes) {
            (true, Some(b)) => txn.write(rel, b),
            _ => txn.discard(&rel),
        }
    }
    let strict = strict?;
    // A fresh run (right after its `meta/reset` entry, the log's last) has no activity yet.
    let activity = if fresh {
        Activity::default()
    } else {
        let open: HashSet<String> = tasks
            .iter()
            .filter(|t| !is_closed(&t.effective_status().to_ascii_lowercase()))
            .map(|t| t.id.clone())
            .collect();
        activity_for(txn, snap, &open, strict.log_tasks.as_ref())?
    };
    let open = open_tasks(&tasks, &activity);
    let state = compute_state_skipping(&tasks, &strict, skip);
    let mut in_progress: Vec<TaskRef> = tasks
        .iter()
        .filter(|t| t.effective_status() == "in_progress")
        .map(TaskRef::of)
        .collect();
    for o in &open {
        if !in_progress.iter().any(|t| t.id == o.id) {
            in_progress.push(o.clone());
        }
    }
    let blocked: Vec<TaskRef> = tasks
        .iter()
        .filter(|t| t.effective_status() == "blocked")
        .map(TaskRef::of)
        .collect();
    let mut steps = state.next_steps.clone();
    for t in &in_progress {
        if state.current_task_id.as_deref() != Some(t.id.as_str()) {
            steps.push(format!(
                "Also in progress: {} ({})",
                t.id,
                clip(&t.title, 80)
            ));
        }
    }
    if state.status != RunStatus::Blocked {
        for t in &blocked {
            steps.push(format!("Blocked: {} ({})", t.id, clip(&t.title, 80)));
        }
    }
    if let (Some(ev), false) = (&activity.last_evidence, state.status == RunStatus::Complete) {
        steps.push(format!(
            "Last evidence: {}: {}",
            ev.task_id,
            clip(&ev.evidence, 160)
        ));
    }
    let report = RunReport {
        status: state.status,
        current_task_id: state.current_task_id.clone(),
        next_steps: steps,
        in_progress,
        blocked,
        last_evidence: activity.last_evidence,
        strict_ok: strict.ok,
        strict_problem: strict.summary.clone(),
    };
    Ok((tasks, strict, report, open))
}

/// Whether `summary` is one the tool computes (rather than one a caller wrote).
fn is_computed_summary(summary: &str) -> bool {
    let s = summary.trim();
    s.is_empty()
        || s == templates::BOOTSTRAP_SUMMARY
        || s == "Handoff being generated"
        || s.starts_with("Run in progress.")
        || s.starts_with("Run blocked")
        || s.starts_with("Run complete.")
}

/// The summary of the run's state as the tool writes it.
fn computed_summary(report: &RunReport) -> String {
    match report.status {
        RunStatus::Complete => {
            "Run complete. strict check passed. All plan tasks completed.".into()
        }
        RunStatus::Blocked => match report.current_task_id.as_deref() {
            Some(c) if c != "meta/blocker" => format!("Run blocked on {c}."),
            _ => "Run blocked. strict check failed.".into(),
        },
        RunStatus::InProgress => {
            let next = report.current_task_id.clone().unwrap_or_default();
            let mut s = format!("Run in progress. Next task: {next}.");
            let others: Vec<&str> = report
                .in_progress
                .iter()
                .map(|t| t.id.as_str())
                .filter(|id| Some(*id) != report.current_task_id.as_deref())
                .collect();
            if !others.is_empty() {
                s.push_str(&format!(" Also in progress: {}.", others.join(", ")));
            }
            if !report.blocked.is_empty() {
                let b: Vec<&str> = report.blocked.iter().map(|t| t.id.as_str()).collect();
                s.push_str(&format!(" Blocked: {}.", b.join(", ")));
            }
            s
        }
    }
}

/// Decide the summary: a given one wins; a caller's earlier summary stays while the resume
/// state (current task and next steps) is unchanged; otherwise the computed one.
fn choose_summary(
    given: Option<&str>,
    old: Option<&Node>,
    report: &RunReport,
) -> (String, SummarySource, Option<String>) {
    if let Some(s) = given.map(str::trim).filter(|s| !s.is_empty()) {
        return (s.to_string(), SummarySource::Given, None);
    }
    let computed = computed_summary(report);
    let Some(old) = old else {
        return (computed, SummarySource::Computed, None);
    };
    let old_summary = old
        .get("summary")
        .and_then(Node::as_str)
        .map(str::trim)
        .unwrap_or("");
    if is_computed_summary(old_summary) {
        return (computed, SummarySource::Computed, None);
    }
    let old_current = old
        .pointer("/resume/current_task_id")
        .and_then(scalar_text)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let old_steps: Vec<String> = old
        .pointer("/resume/next_steps")
        .and_then(Node::as_seq)
        .map(|s| s.iter().filter_map(scalar_text).collect())
        .unwrap_or_default();
    if old_current == report.current_task_id && old_steps == report.next_steps {
        (old_summary.to_string(), SummarySource::Kept, None)
    } else {
        (
            computed,
            SummarySource::Computed,
            Some(old_summary.to_string()),
        )
    }
}

/// What [`build`] is asked for besides the replayId and the run block.
#[derive(Debug, Clone, Copy, Default)]
struct BuildOptions<'a> {
    /// The summary to write (none: keep a caller's while the state is unchanged, else
    /// compute one).
    summary: Option<&'a str>,
    /// Refuse while a task of this run is left open.
    final_check: bool,
    /// A new run whose `meta/reset` entry is staged as the log's last entry (the old
    /// handoff is not kept and the run has no activity yet).
    fresh: bool,
    /// Tasks (ids) not to resume at ([`HandoffRequest::skip`]).
    skip: &'a [String],
}

/// Build the handoff for the current state (nothing of it staged yet).
fn build(
    txn: &mut Transaction,
    snap: &Artifacts,
    replay_id: ReplayId,
    run: Option<RunMeta>,
    opts: BuildOptions<'_>,
) -> Result<HandoffOutcome, Error> {
    let BuildOptions {
        summary,
        final_check,
        fresh,
        skip,
    } = opts;
    let (_tasks, _strict, report, open) = assess(txn, snap, &replay_id, run.as_ref(), fresh, skip)?;
    if final_check && !open.is_empty() {
        return Err(unfinished(&open));
    }
    let old = if fresh {
        None
    } else {
        snap.parse(txn, &handoff::handoff_rel())?
    };
    let (summary, source, replaced) =
        choose_summary(summary, old.as_ref().map(|d| &d.root), &report);
    let h = Handoff {
        summary: summary.clone(),
        current_task_id: report.current_task_id.clone(),
        next_steps: report.next_steps.clone(),
        replay_id: replay_id.clone(),
        run,
    };
    Ok(HandoffOutcome {
        summary,
        summary_source: source,
        replaced_summary: replaced,
        replay_id,
        run: report,
        open,
        handoff: h,
    })
}

/// [`stage`], reading the existing handoff and workspace metadata through the operation's
/// snapshot.
fn stage_in(txn: &mut Transaction, snap: &Artifacts, h: &Handoff) -> Result<(), TxnError> {
    let rel = handoff::handoff_rel();
    let existing = snap
        .read(txn, &rel)?
        .and_then(|b| String::from_utf8(b).ok());
    let text = handoff::render(h, existing.as_deref());
    txn.write(rel, text.into_bytes());
    handoff::touch_workspace_in(txn, snap, Some(&h.replay_id.value))?;
    Ok(())
}

/// Whether the progress log exists, as [`Transaction::exists`] says. Its end is read for
/// that (the activity needs it next, so the log is read once); when that read fails, the
/// plain existence check answers, and the failure shows where the log is read.
fn progress_exists(txn: &Transaction, snap: &Artifacts) -> bool {
    let rel = progress::progress_rel();
    match snap.log_end(txn, &rel) {
        Ok(end) => end.is_some(),
        Err(_) => snap.exists(txn, &rel),
    }
}

/// `small handoff`: write the resume entrypoint for the run as it is now.
pub fn write_handoff(txn: &mut Transaction, req: &HandoffRequest) -> Result<HandoffOutcome, Error> {
    write_handoff_in(txn, &Artifacts::new(), req)
}

/// [`write_handoff`] reading through `snap`: every file is read from disk at most once,
/// also by what the caller did with the same snapshot before (the `--workspace` check).
pub fn write_handoff_in(
    txn: &mut Transaction,
    snap: &Artifacts,
    req: &HandoffRequest,
) -> Result<HandoffOutcome, Error> {
    let prel = progress::progress_rel();
    if !progress_exists(txn, snap) {
        return Err(TxnError::invalid(code::MISSING, format!("{prel} does not exist")).into());
    }
    if let Some(summary) = req.summary.as_deref() {
        let file = crate::spec::consts::ArtifactKind::Handoff.rel_path();
        crate::secrets::refuse_secrets(&file, [("/summary".to_string(), Some("summary"), summary)])
            .map_err(TxnError::Invalid)?;
    }
    let replay_id = match &req.replay_id {
        Some(m) => m.clone(),
        None => default_replay_id_in(txn, snap)?,
    };
    let out = build(
        txn,
        snap,
        replay_id,
        None,
        BuildOptions {
            summary: req.summary.as_deref(),
            final_check: req.final_check,
            fresh: false,
            skip: &req.skip,
        },
    )?;
    stage_in(txn, snap, &out.handoff)?;
    Ok(out)
}

/// Ask to start (or repair) a run.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    pub summary: Option<String>,
}

/// What [`start`] staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartOutcome {
    /// Files created from the templates (workspace-relative).
    pub created: Vec<String>,
    /// Whether a missing replayId was generated (recorded as `meta/replayid-self-heal`).
    pub self_healed: bool,
    pub handoff: HandoffOutcome,
}

/// Create missing artifacts and metadata from the templates (existing files are never
/// changed). Returns the files created. The caller checks the scope after this, and has made
/// sure the workspace is a v1 one (the profile's back end refuses `start` on 2.0.0).
pub fn create_missing(txn: &mut Transaction) -> Result<Vec<String>, Error> {
    let mut created = Vec::new();
    for f in templates::base_artifacts(None) {
        let rel = format!("{SMALL_DIR}/{}", f.name);
        if !txn.exists(&rel) {
            txn.write(rel.clone(), f.content.into_bytes());
            created.push(rel);
        }
    }
    let wrel = handoff::workspace_rel();
    if !txn.exists(&wrel) {
        txn.write(
            wrel.clone(),
            templates::workspace(KIND_REPO_ROOT, &handoff::now_text()).into_bytes(),
        );
        created.push(wrel);
    }
    Ok(created)
}

fn intent_and_plan_valid(txn: &Transaction) -> bool {
    use crate::gates::schemas::{SchemaSet, Target};
    let schemas = SchemaSet::embedded();
    [ArtifactKind::Intent, ArtifactKind::Plan]
        .into_iter()
        .all(|k| {
            let rel = format!("{SMALL_DIR}/{}", k.file_name());
            match handoff::parse_file(txn, &rel) {
                Ok(Some(doc)) => crate::gates::validate::validate_document(
                    &schemas,
                    Target::Artifact(k),
                    &rel,
                    &doc,
                )
                .is_empty(),
                _ => false,
            }
        })
}

/// `small start`: give the run a handoff with `run` metadata (after [`create_missing`]).
/// A handoff without a valid replayId gets one, recorded as `meta/replayid-self-heal`.
pub fn start(txn: &mut Transaction, req: &StartRequest) -> Result<StartOutcome, Error> {
    let existing_id = existing(txn)?.and_then(|e| e.replay_id);
    let self_heal = existing_id.is_none() && intent_and_plan_valid(txn);
    let replay_id = match existing_id {
        Some(r) => r,
        None => default_replay_id(txn)?,
    };
    let run = RunMeta {
        created_at: handoff::now_text(),
        transition_reason: if self_heal { "self_heal" } else { "manual" }.into(),
        previous_replay_id: None,
    };
    let snap = Artifacts::new();
    let out = build(
        txn,
        &snap,
        replay_id,
        Some(run),
        BuildOptions {
            summary: req.summary.as_deref(),
            ..BuildOptions::default()
        },
    )?;
    stage_in(txn, &snap, &out.handoff)?;
    if self_heal {
        let mut e = NewEntry::new("meta/replayid-self-heal", Some("completed"))
            .field(
                "evidence",
                "Generated replayId for handoff during small start",
            )
            .field("notes", "small start self-heal");
        handoff::attach_replay_id(txn, &mut e)?;
        txn.append_progress(&e, &TimestampRule::Now)?;
    }
    Ok(StartOutcome {
        created: Vec::new(),
        self_healed: self_heal,
        handoff: out,
    })
}

/// The strict check of a started run, as committed.
#[derive(Debug, Clone)]
pub struct StartCheck {
    pub strict: handoff::Strict,
    /// What the recoverable repairs did (empty without `fix`, or when the check passed).
    pub repaired: Vec<String>,
    /// The repairs' commit, when they ran.
    pub fixed: Option<crate::workspace::txn::CommitReport>,
}

/// After [`start`] was committed: the strict check of the workspace at `root` and, when it
/// fails and `fix` is set, the recoverable repairs (orphan progress entries, the old runtime
/// layout) committed and the check run again. The progress check resumes from the cache the
/// start's own check left, so this costs what the handoff changed.
pub fn check_started(root: &Path, fix: bool) -> Result<StartCheck, crate::workspace::error::Error> {
    let mut txn = Transaction::begin(root)?;
    let mut strict = handoff::strict_check(&txn)?;
    let mut out = StartCheck {
        strict: strict.clone(),
        repaired: Vec::new(),
        fixed: None,
    };
    if !strict.ok && fix {
        let (layout, orphans) = crate::authoring::repair::repair_recoverable(&mut txn)?;
        out.repaired.extend(layout.describe());
        out.repaired.extend(orphans.describe());
        out.fixed = Some(txn.commit()?);
        let txn = Transaction::begin(root)?;
        strict = handoff::strict_check(&txn)?;
    }
    out.strict = strict;
    Ok(out)
}

/// Ask to reset the workspace for a new run.
#[derive(Debug, Clone, Default)]
pub struct ResetRequest {
    pub keep_intent: bool,
}

/// What [`reset`] staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResetOutcome {
    /// Artifact file names that were reset from the templates.
    pub reset: Vec<String>,
    /// Artifact file names that were kept.
    pub kept: Vec<String>,
    pub replay_id: String,
    pub previous_replay_id: Option<String>,
    pub summary: String,
}

/// `small reset`: reset plan and handoff (and intent unless kept) from the templates for a new
/// run; progress and constraints stay. The new handoff records the previous replayId, and a
/// `meta/reset` entry opens the new run in the progress log.
pub fn reset(txn: &mut Transaction, req: &ResetRequest) -> Result<ResetOutcome, Error> {
    let previous = existing(txn)
        .ok()
        .flatten()
        .and_then(|e| e.replay_id)
        .map(|r| r.value);
    let mut reset_files = Vec::new();
    let mut kept = vec![
        ArtifactKind::Progress.file_name().to_string(),
        ArtifactKind::Constraints.file_name().to_string(),
    ];
    if req.keep_intent {
        kept.push(ArtifactKind::Intent.file_name().to_string());
    } else {
        txn.write(
            format!("{SMALL_DIR}/{}", ArtifactKind::Intent.file_name()),
            templates::intent(None).into_bytes(),
        );
        reset_files.push(ArtifactKind::Intent.file_name().to_string());
    }
    txn.write(plan::plan_rel(), templates::plan().into_bytes());
    reset_files.push(ArtifactKind::Plan.file_name().to_string());

    // The reset entry first: it opens the new run, so the old run's entries stop counting.
    let new_id = handoff::auto_replay_id(txn)?;
    handoff::touch_workspace(txn, Some(&new_id))?;
    let (evidence, notes) = if req.keep_intent {
        (
            "Reset plan and handoff for a new run (intent kept)",
            "small reset --keep-intent",
        )
    } else {
        (
            "Reset intent, plan and handoff for a new run",
            "small reset",
        )
    };
    let mut e = NewEntry::new(RESET_TASK, Some("completed"))
        .field("evidence", evidence)
        .field("notes", notes);
    if let Some(p) = &previous {
        e.set("notes", format!("{notes}; previous replayId {p}"));
    }
    handoff::attach_replay_id(txn, &mut e)?;
    txn.append_progress(&e, &TimestampRule::Now)?;

    let run = RunMeta {
        created_at: handoff::now_text(),
        transition_reason: "reset".into(),
        previous_replay_id: previous.clone(),
    };
    // The handoff is rewritten from scratch: the old one describes the old run.
    let out = build(
        txn,
        &Artifacts::new(),
        ReplayId {
            value: new_id.clone(),
            source: "auto".into(),
        },
        Some(run),
        BuildOptions {
            fresh: true,
            ..BuildOptions::default()
        },
    )?;
    txn.write(
        handoff::handoff_rel(),
        handoff::render_fresh(&out.handoff).into_bytes(),
    );
    handoff::touch_workspace(txn, Some(&new_id))?;
    reset_files.push(ArtifactKind::Handoff.file_name().to_string());
    Ok(ResetOutcome {
        reset: reset_files,
        kept,
        replay_id: new_id,
        previous_replay_id: previous,
        summary: out.summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{self, Limits};

    fn log(entries: &str) -> Node {
        yaml::parse_str(&format!("entries:\n{entries}"), &Limits::default())
            .unwrap()
            .root
    }

    fn task(id: &str, status: &str) -> Task {
        Task {
            id: id.into(),
            title: format!("title of {id}"),
            status: status.into(),
            dependencies: Vec::new(),
        }
    }

    #[test]
    fn activity_ignores_bookkeeping_meta_and_earlier_runs() {
        let l = log(concat!(
            "  - task_id: task-1\n    status: in_progress\n    evidence: old run\n",
            "  - task_id: meta/reset\n    status: completed\n    evidence: reset\n",
            "  - task_id: task-2\n    status: pending\n    evidence: Added task task-2 via small plan --add\n    notes: B\n",
            "  - task_id: task-3\n    status: in_progress\n    evidence: parser half done\n",
            "  - task_id: task-4\n    status: in_progress\n    evidence: other run\n    replayId: bb\n",
            "  - task_id: meta/note\n    status: completed\n    evidence: n\n",
        ));
        let a = run_activity(&l, Some("aa"));
        assert_eq!(a.worked, vec!["task-3"]);
        let ev = a.last_evidence.unwrap();
        assert_eq!(
            (ev.task_id.as_str(), ev.evidence.as_str()),
            ("task-3", "parser half done")
        );
        let tasks = [
            task("task-1", "pending"),
            task("task-2", "pending"),
            task("task-3", "pending"),
        ];
        let open: Vec<String> = open_tasks(&tasks, &run_activity(&l, Some("aa")))
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(open, vec!["task-3"]);
        let closed = [task("task-3", "cancelled")];
        assert!(open_tasks(&closed, &run_activity(&l, None)).is_empty());
    }

    fn report(current: &str, steps: &[&str]) -> RunReport {
        RunReport {
            status: RunStatus::InProgress,
            current_task_id: Some(current.into()),
            next_steps: steps.iter().map(|s| s.to_string()).collect(),
            in_progress: Vec::new(),
            blocked: Vec::new(),
            last_evidence: None,
            strict_ok: true,
            strict_problem: String::new(),
        }
    }

    fn handoff_node(summary: &str, current: &str, steps: &[&str]) -> Node {
        let mut s =
            format!("summary: {summary:?}\nresume:\n  current_task_id: {current}\n  next_steps:\n");
        for st in steps {
            s.push_str(&format!("    - {st:?}\n"));
        }
        yaml::parse_str(&s, &Limits::default()).unwrap().root
    }

    #[test]
    fn a_callers_summary_is_kept_until_the_state_changes() {
        let r = report("task-2", &["Continue with task-2"]);
        let old = handoff_node("Waiting on review", "task-2", &["Continue with task-2"]);
        let (s, src, replaced) = choose_summary(None, Some(&old), &r);
        assert_eq!(
            (s.as_str(), src, replaced),
            ("Waiting on review", SummarySource::Kept, None)
        );
        let moved = report("task-3", &["Continue with task-3"]);
        let (s, src, replaced) = choose_summary(None, Some(&old), &moved);
        assert_eq!(s, "Run in progress. Next task: task-3.");
        assert_eq!(src, SummarySource::Computed);
        assert_eq!(replaced.as_deref(), Some("Waiting on review"));
        let (s, src, _) = choose_summary(Some("new"), Some(&old), &r);
        assert_eq!((s.as_str(), src), ("new", SummarySource::Given));
        let computed = handoff_node(
            "Run in progress. Next task: task-1.",
            "task-2",
            &["Continue with task-2"],
        );
        let (_, src, replaced) = choose_summary(None, Some(&computed), &r);
        assert_eq!((src, replaced), (SummarySource::Computed, None));
    }

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        for f in templates::base_artifacts(Some("Test the session operations")) {
            std::fs::write(small.join(f.name), f.content).unwrap();
        }
        let id = crate::spec::replayid::auto_replay_id_in(&small).unwrap();
        std::fs::write(
            small.join("handoff.small.yml"),
            templates::bootstrap_handoff(&id),
        )
        .unwrap();
        std::fs::write(
            small.join("workspace.small.yml"),
            templates::workspace("repo-root", "2026-01-01T00:00:00.000000000Z"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn the_activity_read_from_the_end_equals_the_whole_log() {
        let dir = workspace();
        let rel = progress::progress_rel();
        let id = "c".repeat(64);
        let mut log = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
        for i in 0..30_000usize {
            let task = format!("task-{}", i % 40 + 1);
            let status = if i % 3 == 0 {
                "completed"
            } else {
                "in_progress"
            };
            log.push_str(&format!(
                "  - timestamp: \"2026-01-01T00:00:00.{i:06}Z\"\n    task_id: \"{task}\"\n    status: \"{status}\"\n    evidence: \"step {i}\"\n    replayId: \"{id}\"\n"
            ));
        }
        std::fs::write(dir.path().join(&rel), &log).unwrap();
        let txn = Transaction::begin(dir.path()).unwrap();
        let tasks: Vec<Task> = (1..=45)
            .map(|i| {
                task(
                    &format!("task-{i}"),
                    if i % 4 == 0 { "completed" } else { "pending" },
                )
            })
            .collect();
        let open: HashSet<String> = tasks
            .iter()
            .filter(|t| !is_closed(&t.effective_status().to_ascii_lowercase()))
            .map(|t| t.id.clone())
            .collect();
        // task-41..45 never have work.
        let named: crate::spec::plan::TaskSet = (1..=40).map(|i| format!("task-{i}")).collect();
        let whole = activity_for(&txn, &Artifacts::new(), &open, None).unwrap();
        // Without the names: the tail read cannot settle, and the whole log is read.
        let all: crate::spec::plan::TaskSet = open
            .iter()
            .cloned()
            .chain(named.iter().map(String::from))
            .collect();
        let unsettled = activity_for(&txn, &Artifacts::new(), &open, Some(&all)).unwrap();
        assert_eq!(unsettled, whole);
        // With them: task-41..45 cannot have work, and the tail answers.
        let from_end = activity_for(&txn, &Artifacts::new(), &open, Some(&named)).unwrap();
        assert_eq!(open_tasks(&tasks, &from_end), open_tasks(&tasks, &whole));
        assert_eq!(from_end.last_evidence, whole.last_evidence);
        // Only tasks that all have recent work: settled from the last chunk.
        let busy: Vec<Task> = tasks[..40].to_vec();
        let open: HashSet<String> = busy.iter().map(|t| t.id.clone()).collect();
        let text = String::from_utf8(txn.read(&rel).unwrap().unwrap()).unwrap();
        assert!(activity::scan_tail(&text, None, &crate::yaml::Limits::default(), &open).is_some());
        let from_end = activity_for(&txn, &Artifacts::new(), &open, Some(&named)).unwrap();
        let whole = activity_for(&txn, &Artifacts::new(), &open, None).unwrap();
        assert_eq!(open_tasks(&busy, &from_end), open_tasks(&busy, &whole));
        assert_eq!(from_end.last_evidence, whole.last_evidence);
        assert!(!open_tasks(&busy, &whole).is_empty());
    }

    /// One `small handoff` reads each `.small/` file from disk at most once: the replayId,
    /// the strict check, the plan, the activity and the existing handoff share what was read.
    #[test]
    fn a_handoff_reads_each_file_from_disk_at_most_once() {
        let dir = workspace();
        // The first handoff computes the auto replayId (reading intent, plan, constraints);
        // the second finds the run's in workspace metadata.
        for _ in 0..2 {
            let mut txn = Transaction::begin(dir.path()).unwrap();
            // As `small handoff` runs it: the `--workspace` check, then the handoff.
            let snap = Artifacts::new();
            handoff::check_command_scope_in(
                &txn,
                &snap,
                crate::workspace::Scope::Root,
                "handoff",
                false,
            )
            .unwrap();
            write_handoff_in(&mut txn, &snap, &HandoffRequest::default()).unwrap();
            let counts = txn.disk_reads_by_path();
            // Before the snapshot: 20 lookups (workspace 5, progress 5, plan 3, handoff 3,
            // intent 2, constraints 2).
            assert_eq!(counts.len(), 6, "{counts:?}");
            for (rel, n) in &counts {
                assert_eq!(*n, 1, "{rel} was looked up {n} times: {counts:?}");
            }
            txn.commit().unwrap();
        }
    }

    #[test]
    fn handoff_mid_run_then_final_then_reset() {
        use crate::authoring::plan_edit::{edit_plan, PlanRequest};
        use crate::authoring::record::{add_progress, RecordRequest};
        let dir = workspace();
        let mut txn = Transaction::begin(dir.path()).unwrap();
        let req = PlanRequest {
            add: vec!["Two".into(), "Three".into()],
            ..Default::default()
        };
        let out = edit_plan(&mut txn, &req).unwrap();
        assert_eq!(out.added.len(), 2);
        txn.commit().unwrap();

        // Bookkeeping only: a final handoff passes.
        let mut txn = Transaction::begin(dir.path()).unwrap();
        let final_req = HandoffRequest {
            final_check: true,
            ..Default::default()
        };
        write_handoff(&mut txn, &final_req).unwrap();
        txn.commit().unwrap();

        let mut txn = Transaction::begin(dir.path()).unwrap();
        add_progress(
            &mut txn,
            &RecordRequest {
                task: "task-2".into(),
                status: "in_progress".into(),
                evidence: vec![("evidence".into(), "half done".into())],
                ..Default::default()
            },
        )
        .unwrap();
        txn.commit().unwrap();

        let mut txn = Transaction::begin(dir.path()).unwrap();
        match write_handoff(&mut txn, &final_req) {
            Err(e) => {
                assert_eq!(e.code(), code::UNFINISHED);
                assert!(e.message().contains("\n  - task-2: "), "{}", e.message());
                assert!(e
                    .diagnostic
                    .help
                    .as_deref()
                    .unwrap()
                    .contains("without --final"));
            }
            Ok(other) => panic!("{other:?}"),
        }
        let out = write_handoff(&mut txn, &HandoffRequest::default()).unwrap();
        assert_eq!(out.open.len(), 1);
        assert_eq!(out.run.current_task_id.as_deref(), Some("task-1"));
        assert!(out.run.strict_ok, "{}", out.run.strict_problem);
        txn.commit().unwrap();

        let mut txn = Transaction::begin(dir.path()).unwrap();
        let r = reset(&mut txn, &ResetRequest { keep_intent: true }).unwrap();
        assert!(r.previous_replay_id.is_some());
        txn.commit().unwrap();
        let mut txn = Transaction::begin(dir.path()).unwrap();
        let out = write_handoff(&mut txn, &final_req).unwrap();
        assert!(out.open.is_empty() && out.run.last_evidence.is_none());
    }
}
