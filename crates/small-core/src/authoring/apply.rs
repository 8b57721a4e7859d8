//! What `apply` records (seed 000, invariant 7: progress modes). Running the command is the
//! front end's business (a shell, a terminal, Ctrl-C); what a run means for the workspace is
//! decided here: which events are recorded in which mode, which task ids may be recorded,
//! the command log a run leaves in `.small-cache/logs/`, the progress entries and their
//! evidence, and the replay IDs they are filed under, read inside a transaction.

use sha2::{Digest, Sha256};
use std::path::Path;

use crate::authoring::error::{code, Error};
use crate::authoring::progress::{NewEntry, TimestampRule};
use crate::authoring::txn::{atomic_write, Transaction};
use crate::spec::consts::{ArtifactKind, CACHE_DIR, META_TASK_PREFIX, WORKSPACE_FILE};
use crate::spec::model::{TaskStatus, HANDOFF_REPLAY_ID_POINTER, RUN_REPLAY_ID_POINTER};
use crate::yaml::{self, Limits};

/// Longest command summary stored in `command_summary`.
pub const SUMMARY_CAP: usize = 200;
/// Most output kept in the evidence of `--auto-progress` / `--auto-checkpoint`.
pub const EVIDENCE_OUTPUT_CAP: usize = 4000;

/// Progress mode (seed 000, invariant 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Record only the end of a run of a plan task (and dry runs of one).
    Signal,
    /// Record everything: starts, ends, dry runs, any task id.
    Audit,
}

impl ProgressMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ProgressMode::Signal => "signal",
            ProgressMode::Audit => "audit",
        }
    }
}

/// The moments of a run that may be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    DryRun,
    Start,
    End,
}

/// Whether an event is recorded: audit records everything; signal records only the end of a
/// run (and dry runs) of a plan task.
pub fn should_record(event: Event, task_id: &str, mode: ProgressMode) -> bool {
    match mode {
        ProgressMode::Audit => true,
        ProgressMode::Signal => match event {
            Event::Start => false,
            Event::DryRun | Event::End => is_plan_task_id(task_id),
        },
    }
}

fn is_plan_task_id(id: &str) -> bool {
    let id = id.trim();
    id.strip_prefix("task-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The command with runs of whitespace collapsed, cut to `cap` characters (ending in `...`).
pub fn summarize(command: &str, cap: usize) -> String {
    let normalized = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if normalized.chars().count() <= cap {
        return normalized;
    }
    if cap <= 3 {
        return normalized.chars().take(cap).collect();
    }
    let mut s: String = normalized.chars().take(cap - 3).collect();
    s.push_str("...");
    s
}

/// `exit code N; output …` with the last [`EVIDENCE_OUTPUT_CAP`] bytes of the output.
pub fn output_evidence(output: &[u8], exit_code: i32) -> String {
    let text = String::from_utf8_lossy(output);
    let trimmed = text.trim_end_matches(['\n', '\r']);
    if trimmed.trim().is_empty() {
        return format!("exit code {exit_code}; no output");
    }
    if trimmed.len() <= EVIDENCE_OUTPUT_CAP {
        return format!("exit code {exit_code}; output: {trimmed}");
    }
    let mut start = trimmed.len() - EVIDENCE_OUTPUT_CAP;
    while !trimmed.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "exit code {exit_code}; output (last {} of {} bytes): {}",
        trimmed.len() - start,
        trimmed.len(),
        &trimmed[start..]
    )
}

/// What a run needs to know about the workspace, read in one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The workspace's run replay ID (what run-bound entries carry in `replayId`).
    pub run_replay: Option<String>,
    /// The replay ID the run's logs are filed under: the run's, else the handoff's (lower
    /// case), else `unbound`.
    pub log_replay: String,
    /// The plan's task ids, `None` when the plan cannot be read.
    pub plan_ids: Option<Vec<String>>,
}

/// Read the [`Context`] of a run inside a transaction (released before the command runs,
/// so that the command may itself run `small`).
pub fn context(root: &Path) -> Result<Context, Error> {
    let txn = Transaction::begin(root)?;
    let read = |rel: &str| -> Option<yaml::Document> {
        let bytes = txn.read(rel).ok()??;
        yaml::parse_bytes(&bytes, &Limits::default()).ok()
    };
    let well_formed = |doc: &Option<yaml::Document>, pointer: &str| -> Option<String> {
        let v = doc.as_ref()?.root.pointer(pointer)?.as_str()?.trim();
        crate::spec::replayid::is_well_formed(&v.to_ascii_lowercase()).then(|| v.to_string())
    };
    let meta = read(&crate::spec::consts::small_rel(WORKSPACE_FILE));
    let handoff = read(&ArtifactKind::Handoff.rel_path());
    let run_replay = well_formed(&meta, RUN_REPLAY_ID_POINTER);
    let log_replay = run_replay
        .clone()
        .or_else(|| well_formed(&handoff, HANDOFF_REPLAY_ID_POINTER))
        .map(|v| v.to_ascii_lowercase())
        .unwrap_or_else(|| "unbound".to_string());
    let plan_ids = read(&ArtifactKind::Plan.rel_path()).and_then(|doc| {
        let tasks = doc.root.get("tasks")?.as_seq()?;
        Some(
            tasks
                .iter()
                .filter_map(|t| t.get("id")?.as_str().map(str::to_string))
                .collect(),
        )
    });
    Ok(Context {
        run_replay: run_replay.filter(|v| crate::spec::replayid::is_well_formed(v)),
        log_replay,
        plan_ids,
    })
}

impl Context {
    /// Refuse a task that is not in the plan before anything runs, when something would be
    /// recorded for it (an entry for an unknown task would break strict check S2). `meta/`
    /// ids and unreadable plans pass.
    pub fn check_task(&self, task: &str, records: bool) -> Result<(), Error> {
        if !records || task.starts_with(META_TASK_PREFIX) {
            return Ok(());
        }
        match &self.plan_ids {
            Some(ids) if !ids.iter().any(|id| id == task) => {
                let mut e = Error::unknown_task(task, ids);
                e.diagnostic.message.push_str("; nothing was run");
                Err(e)
            }
            _ => Ok(()),
        }
    }

    /// A progress entry of this run, bound to the run's replay ID when there is one.
    pub fn entry(
        &self,
        task: &str,
        status: TaskStatus,
        evidence: impl Into<String>,
        notes: impl Into<String>,
        log: Option<&CommandLog>,
    ) -> NewEntry {
        let mut e = NewEntry::new(task, Some(status.as_str()))
            .field("evidence", evidence.into())
            .field("notes", notes.into());
        if let Some(r) = &self.run_replay {
            e.set("replayId", r.clone());
        }
        if let Some(log) = log {
            e.set("command", log.summary.clone());
            e.set("command_summary", log.summary.clone());
            e.set("command_sha256", log.sha256.clone());
            e.set("command_ref", log.command_ref.clone());
        }
        e
    }
}

/// Files of one run of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLog {
    /// Workspace-relative path of the file holding the command (`command_ref`).
    pub command_ref: String,
    /// Workspace-relative path of the output log.
    pub output_ref: String,
    pub sha256: String,
    pub summary: String,
}

/// Write the command file (atomically) and return the log's names. The file name is the
/// run's start time `stamp`, so a run's command and output sit side by side.
pub fn write_command_log(
    root: &Path,
    replay: &str,
    stamp: &str,
    command: &str,
) -> Result<CommandLog, Error> {
    let dir = format!("{CACHE_DIR}/logs/{replay}/commands");
    // 2026-01-02T03:04:05.123456789Z -> 20260102T030405.123456789Z
    let name: String = stamp.chars().filter(|c| *c != '-' && *c != ':').collect();
    let command_ref = format!("{dir}/{name}.txt");
    let output_ref = format!("{dir}/{name}.output.log");
    atomic_write(root.join(&command_ref), command.as_bytes()).map_err(|e| {
        Error::system(
            code::IO,
            format!("cannot write the command log {command_ref}: {e}"),
        )
    })?;
    Ok(CommandLog {
        command_ref,
        output_ref,
        sha256: hex::encode(Sha256::digest(command.as_bytes())),
        summary: summarize(command, SUMMARY_CAP),
    })
}

/// Append entries in one transaction; returns their timestamps.
pub fn record(root: &Path, entries: &[NewEntry]) -> Result<Vec<String>, Error> {
    let mut txn = Transaction::begin(root)?;
    let mut stamps = Vec::new();
    for e in entries {
        stamps.push(txn.append_progress(e, &TimestampRule::Now)?.timestamp);
    }
    txn.commit()?;
    Ok(stamps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authoring::templates;

    #[test]
    fn summary_collapses_and_caps() {
        assert_eq!(
            summarize("  cargo   test\n --all ", 200),
            "cargo test --all"
        );
        let long = "x".repeat(300);
        let s = summarize(&long, 200);
        assert_eq!(s.chars().count(), 200);
        assert!(s.ends_with("..."));
    }

    #[test]
    fn signal_mode_records_plan_task_ends_only() {
        use ProgressMode::*;
        assert!(!should_record(Event::Start, "task-1", Signal));
        assert!(should_record(Event::End, "task-12", Signal));
        assert!(!should_record(Event::End, "apply", Signal));
        assert!(!should_record(Event::DryRun, "task-x", Signal));
        assert!(should_record(Event::Start, "apply", Audit));
    }

    #[test]
    fn evidence_keeps_the_tail_on_char_boundaries() {
        let out = "é".repeat(3000);
        let e = output_evidence(out.as_bytes(), 0);
        assert!(e.starts_with("exit code 0; output (last"));
        assert_eq!(output_evidence(b"\n", 3), "exit code 3; no output");
    }

    fn workspace() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let small = tmp.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        for f in templates::base_artifacts(Some("Apply")) {
            std::fs::write(small.join(f.name), f.content).unwrap();
        }
        tmp
    }

    #[test]
    fn context_reads_the_plan_and_refuses_unknown_tasks() {
        let tmp = workspace();
        let ctx = context(tmp.path()).unwrap();
        assert_eq!(ctx.log_replay, "unbound");
        assert_eq!(ctx.plan_ids, Some(vec!["task-1".to_string()]));
        ctx.check_task("task-1", true).unwrap();
        ctx.check_task("task-9", false).unwrap();
        ctx.check_task("meta/x", true).unwrap();
        let e = ctx.check_task("task-9", true).unwrap_err();
        assert_eq!(e.code(), code::UNKNOWN_TASK);
        assert!(
            e.message().ends_with("; nothing was run"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_run_is_logged_and_recorded_with_its_command() {
        let tmp = workspace();
        let ctx = context(tmp.path()).unwrap();
        let log = write_command_log(
            tmp.path(),
            &ctx.log_replay,
            "2026-01-02T03:04:05.5Z",
            "cargo   test",
        )
        .unwrap();
        assert_eq!(
            log.command_ref,
            ".small-cache/logs/unbound/commands/20260102T030405.5Z.txt"
        );
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(&log.command_ref)).unwrap(),
            "cargo   test"
        );
        let e = ctx.entry("task-1", TaskStatus::Completed, "ok", "n", Some(&log));
        let stamps = record(tmp.path(), &[e]).unwrap();
        assert_eq!(stamps.len(), 1);
        let progress =
            std::fs::read_to_string(tmp.path().join(".small/progress.small.yml")).unwrap();
        assert!(
            progress.contains("command_summary: \"cargo test\""),
            "{progress}"
        );
    }
}
