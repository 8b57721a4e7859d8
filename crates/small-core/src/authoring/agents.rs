//! The SMALL harness block in `AGENTS.md` (seed 000, "AGENTS.md Semantics").
//!
//! `AGENTS.md` is advisory documentation for agents; SMALL tooling manages exactly one bounded
//! block in it, delimited by `<!-- BEGIN SMALL HARNESS v1.0.0 -->` and
//! `<!-- END SMALL HARNESS v1.0.0 -->`. Everything outside that block belongs to the people
//! who wrote it, so every composition here keeps the bytes outside the block unchanged: the
//! text before the block is a byte-exact prefix of the result and the text after it a
//! byte-exact suffix. Only a separator line break may be added next to a freshly appended or
//! prepended block, never inside the user's text.
//!
//! Composing and checking only compute text; [`target_path`], [`read_target`] and [`apply`]
//! find, read and write the file, for every front end alike.

use crate::spec::consts::{harness_begin_marker, harness_end_marker, PROTOCOL_VERSION};
use crate::workspace::error::{code, Error};
use regex::Regex;
use std::fmt;
use std::sync::OnceLock;

/// The text between the markers (no markers), with `\n` line endings.
const BLOCK_BODY: &str = r#"# SMALL Execution Harness

This block is maintained by `small init` and `small agents apply`; edits made inside it
are replaced the next time either runs. Write your own guidance outside the block.
The files in `.small/` are the source of truth; where this text and `.small/` disagree,
`.small/` wins.

## Ownership Rules

| File | Owner | What it holds |
|------|-------|---------------|
| intent.small.yml | human | What the project is for and how success is judged |
| constraints.small.yml | human | Rules every change must respect |
| plan.small.yml | agent | The tasks, their status and dependencies |
| progress.small.yml | agent | The append-only record of work done, with evidence |
| handoff.small.yml | agent | Where the next session resumes |
| workspace.small.yml | agent | Workspace kind and the current run's replay id |

- Agents never edit `intent.small.yml` or `constraints.small.yml`. Propose a change with
  `small draft intent|constraints --from <file>`; a human accepts it with `small accept`.
- Agents keep the plan, progress and handoff current through `small` commands rather
  than by editing the YAML by hand.

## Artifact Rules

- Start every session by reading `.small/handoff.small.yml`; it is the only resume point.
- `progress.small.yml` is append-only: never edit or delete an entry. Every entry carries
  evidence (`evidence`, `verification`, `command`, `test`, `link` or `commit`).
- `plan.small.yml` may be rewritten at any time; progress history may not.
- No secrets, tokens or passwords in any `.small/` file.

## Working Loop

1. `small status` to see where things stand: the tasks, their titles, the next task.
   When other agents work in this repository too, work in this loop: `small claim --next`
   takes the next ready task nobody holds (`small claim <task-id>` a given one), a lease
   every clone sharing the git remote sees; do the work; then
   `small checkpoint --status completed --evidence "<what proves it>"` completes the task
   you hold, and `small sync` publishes it (`small sync --commit` commits the `.small/`
   changes first when you have not). Until the completion is on the remote's default
   branch, no other agent takes the task. A task another agent holds or finished is not
   yours to work on: claiming it and the writing commands refuse it. A blocked checkpoint
   gives the lease back.
2. `small plan --add "<task>"` for new work (repeat `--add` for several);
   `small plan --cancel <task-id>` drops a task, `small plan --title <task-id> "<title>"`
   renames one.
3. `small apply --cmd "<command>" --task <task-id>` to run a command with its outcome
   recorded (it does not complete the task), or do the work yourself; then accept it with
   `small checkpoint --task <task-id> --status completed --evidence "<what proves it>"`.
   A completion needs your evidence, and a task completes only after its dependencies.
   Keep credentials out of commands: the exact command is kept beside the workspace and
   `small check --strict` checks all of it.
4. `small handoff` whenever you stop, also in the middle of a run: it records the task to
   resume, open and blocked tasks and the last evidence. At the end of the run,
   `small handoff --final` refuses while a task you worked on is left open.
5. `small check --strict` must pass before the work is called done.

## Sessions, Hosts and Branches

- `small resume` prints what a new session must read: handoff, next task, constraints,
  recent progress and whether the gates pass. `small agents hooks --tool claude` (or
  `gemini`, `codex`) makes the host inject it at session start.
- `small mcp` serves the same operations over MCP (stdio) for hosts without a shell.
- On parallel branches, name new tasks: `small plan --add "<task>" --id <name>`; run
  `small merge-driver --install` once per clone so `.small/` files merge entry by entry.
- Agents on clones of one git remote each run the loop of step 1: `small claim --next`,
  the work, `small checkpoint --status completed --evidence "<what proves it>"`,
  `small sync` (it fetches, rebases through the merge driver and pushes, retrying when
  another agent pushed first). `small claims` lists who holds what.

## SMALL 2.0.0 Workspaces

A workspace with `.small/profile.json` records work as immutable events of a session:
1. `small session start --label "<what>"` (solo mode allows one active session; take one
   over with `--takeover <session-id> --reason "<why>"`). The writing commands use it until
   it is closed; `--session <id>` names another.
2. `plan --add`, `progress add`, `apply` and `checkpoint` work as above (one change per
   `plan` call; repeated `--depends` count as one);
   `small evidence save --task <task-id> --file <file>` stores proof. A task with
   acceptance criteria completes only once such proof (or a passing
   `small apply --task <task-id> --cmd "<command>"`) is recorded for it.
   Writers wait for each other, so parallel calls are safe.
3. `small session show` lists what the session did (events, tasks, receipts); then
   `small session close --summary "<what was done, what is next>"` when you stop.
4. Mode and policy change only with `mode set` / `policy revise`, a reason and
   `--expect-state <frontier>` from `small mode show` / `small policy show`.
5. After a merge, `small resume` lists unresolved conflicts and the steps that resolve
   each (`small reconcile --preview`, then `--apply <file> --expect-state <frontier>`).

## Strict Mode Rules

`small check --strict` also enforces:
- S1: a completed task has a completion entry of its own with evidence (the entries
  `small plan` writes do not count); a blocked task has an entry with evidence.
- S2: every progress `task_id` names a task in the plan (or starts with `meta/`).
- S3: the handoff's `resume.current_task_id` names a task in the plan.
- S4: `.small/` holds only the canonical files (plus `ext/`); caches, drafts and logs live
  in `.small-cache/`.

## Plain HTTP Links

Strict mode rejects `http://` links, except in `progress.small.yml` for local addresses:
`http://localhost`, `http://127.0.0.1`, `http://0.0.0.0` and `http://[::1]`.

## When Blocked

If you cannot proceed, or proceeding would break a constraint:
1. Record it: `small checkpoint --task <task-id> --status blocked --evidence "<why>"`.
2. Run `small handoff` so the blocker is the resume point.
3. Stop and wait for a human. Do not work around a constraint.
"#;

/// How to place a new block in a file that has content but no block yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComposeMode {
    /// Add the block after the existing content.
    Append,
    /// Add the block before the existing content.
    Prepend,
}

impl ComposeMode {
    /// Parses `append` / `prepend` (case-insensitive, surrounding spaces ignored).
    pub fn parse(value: &str) -> Option<ComposeMode> {
        match value.trim().to_ascii_lowercase().as_str() {
            "append" => Some(ComposeMode::Append),
            "prepend" => Some(ComposeMode::Prepend),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ComposeMode::Append => "append",
            ComposeMode::Prepend => "prepend",
        }
    }
}

/// What the caller wants done with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Create the file, or replace an existing block in place; refuse to touch a file
    /// that has content but no block.
    Default,
    /// Like `Default`, but a file without a block gets the block appended or prepended.
    Mode(ComposeMode),
    /// Replace the whole file with the block.
    Overwrite,
}

/// What composing did (or would do) to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The file did not exist; it is created with the block only.
    Created,
    /// The file had a block; it was replaced in place.
    Replaced,
    /// The file had a block identical to the canonical one: nothing to do.
    Unchanged,
    /// The block was added after the existing content.
    Appended,
    /// The block was added before the existing content.
    Prepended,
    /// The whole file was replaced by the block.
    Overwritten,
}

impl Action {
    /// A stable, lower-case name (used in JSON output).
    pub fn name(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Replaced => "replaced",
            Action::Unchanged => "unchanged",
            Action::Appended => "appended",
            Action::Prepended => "prepended",
            Action::Overwritten => "overwritten",
        }
    }

    /// Whether the file content changes.
    pub fn writes(self) -> bool {
        !matches!(self, Action::Unchanged)
    }
}

/// Where the block sits in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// Byte offset of the `<` that starts the BEGIN marker.
    pub start: usize,
    /// Byte offset just past the `>` that ends the END marker.
    pub end: usize,
    /// 1-based line of the BEGIN marker.
    pub begin_line: usize,
    /// 1-based line of the END marker.
    pub end_line: usize,
    /// The version written in the BEGIN marker (equal to the END marker's).
    pub version: String,
}

/// A file whose markers cannot be understood. Lines are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// More than one BEGIN marker.
    MultipleBegin { lines: Vec<usize> },
    /// More than one END marker.
    MultipleEnd { lines: Vec<usize> },
    /// A BEGIN marker and no END marker.
    BeginWithoutEnd { line: usize },
    /// An END marker and no BEGIN marker.
    EndWithoutBegin { line: usize },
    /// The END marker comes first.
    EndBeforeBegin { begin_line: usize, end_line: usize },
    /// The two markers name different versions.
    VersionMismatch {
        begin: String,
        end: String,
        begin_line: usize,
        end_line: usize,
    },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(lines: &[usize]) -> String {
            lines
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
        match self {
            BlockError::MultipleBegin { lines } => write!(
                f,
                "more than one SMALL harness block: BEGIN markers on lines {}; a file may hold only one block",
                list(lines)
            ),
            BlockError::MultipleEnd { lines } => write!(
                f,
                "more than one SMALL harness END marker: lines {}; a file may hold only one block",
                list(lines)
            ),
            BlockError::BeginWithoutEnd { line } => {
                write!(f, "the SMALL harness BEGIN marker on line {line} has no END marker")
            }
            BlockError::EndWithoutBegin { line } => {
                write!(f, "the SMALL harness END marker on line {line} has no BEGIN marker")
            }
            BlockError::EndBeforeBegin { begin_line, end_line } => write!(
                f,
                "the SMALL harness END marker (line {end_line}) comes before the BEGIN marker (line {begin_line})"
            ),
            BlockError::VersionMismatch { begin, end, begin_line, end_line } => write!(
                f,
                "the SMALL harness markers disagree on the version: BEGIN v{begin} (line {begin_line}) but END v{end} (line {end_line})"
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// Why a composition was refused (a detail of [`compose_file`], which reports it as an
/// [`Error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum ComposeError {
    /// The existing file's markers are malformed.
    Malformed(BlockError),
    /// The file has content but no block, and no mode said where to put one.
    NeedsMode,
}

impl fmt::Display for ComposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComposeError::Malformed(e) => write!(f, "{e}"),
            ComposeError::NeedsMode => {
                f.write_str("the file already has content and no SMALL harness block")
            }
        }
    }
}

impl std::error::Error for ComposeError {}

impl ComposeError {
    /// The refusal as the one authoring error (`agents-block`), for the file `file_name`.
    fn into_error(self, file_name: &str) -> Error {
        let (message, help) = match &self {
            ComposeError::NeedsMode => (
                format!("{file_name} already exists and has no SMALL harness block; nothing was changed"),
                "choose where the block goes: --agents-mode append or --agents-mode prepend (your content stays as it is), \
                 or replace the whole file with the block (--overwrite-agents, or --force for `small agents apply`); \
                 `small init --no-agents` leaves the file alone"
                    .to_string(),
            ),
            ComposeError::Malformed(e) => (
                format!("{file_name}: malformed SMALL harness markers: {e}; nothing was changed"),
                format!(
                    "keep exactly one `{}` line and one `{}` line (in that order), or replace the whole file with the block \
                     (--overwrite-agents, or --force for `small agents apply`)",
                    harness_begin_marker(),
                    harness_end_marker()
                ),
            ),
        };
        let line = match &self {
            ComposeError::Malformed(
                BlockError::MultipleBegin { lines } | BlockError::MultipleEnd { lines },
            ) => lines.get(1).copied(),
            ComposeError::Malformed(
                BlockError::BeginWithoutEnd { line } | BlockError::EndWithoutBegin { line },
            ) => Some(*line),
            ComposeError::Malformed(BlockError::EndBeforeBegin { end_line, .. })
            | ComposeError::Malformed(BlockError::VersionMismatch { end_line, .. }) => {
                Some(*end_line)
            }
            ComposeError::NeedsMode => None,
        };
        let at = line.map(|l| {
            let p = crate::diag::Pos {
                line: u32::try_from(l).unwrap_or(u32::MAX),
                column: 1,
                offset: 0,
            };
            crate::diag::Span { start: p, end: p }
        });
        Error::invalid(code::AGENTS_BLOCK, message)
            .in_file(file_name.to_string())
            .at(at)
            .with_help(help)
    }
}

/// The result of composing: the new text and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    pub text: String,
    pub action: Action,
    /// For `Replaced`: the version of the block that was replaced.
    pub previous_version: Option<String>,
}

/// The canonical block body (between the markers, no markers), `\n` line endings.
pub fn block_body() -> &'static str {
    BLOCK_BODY
}

/// The canonical block with both markers, ending in a line break (`\n` line endings).
pub fn canonical_block() -> String {
    format!(
        "{}\n{}{}\n",
        harness_begin_marker(),
        BLOCK_BODY,
        harness_end_marker()
    )
}

/// The canonical block using the given line ending.
fn canonical_block_with(eol: &str) -> String {
    let block = canonical_block();
    if eol == "\n" {
        block
    } else {
        block.replace('\n', eol)
    }
}

fn marker_regexes() -> &'static (Regex, Regex) {
    static RE: OnceLock<(Regex, Regex)> = OnceLock::new();
    RE.get_or_init(|| {
        // Same shape as the canonical markers, any dotted version number.
        let begin =
            Regex::new(r"<!-- BEGIN SMALL HARNESS v([0-9][0-9.]*) -->").expect("valid regex");
        let end = Regex::new(r"<!-- END SMALL HARNESS v([0-9][0-9.]*) -->").expect("valid regex");
        (begin, end)
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Finds the harness block. `Ok(None)` when the file has no markers at all.
pub fn find_block(text: &str) -> Result<Option<BlockInfo>, BlockError> {
    let (begin_re, end_re) = marker_regexes();
    let begins: Vec<_> = begin_re.captures_iter(text).collect();
    let ends: Vec<_> = end_re.captures_iter(text).collect();
    let whole = |c: &regex::Captures<'_>| c.get(0).map(|m| (m.start(), m.end())).unwrap_or((0, 0));
    let version =
        |c: &regex::Captures<'_>| c.get(1).map(|m| m.as_str().to_string()).unwrap_or_default();

    match (begins.len(), ends.len()) {
        (0, 0) => Ok(None),
        (b, _) if b > 1 => Err(BlockError::MultipleBegin {
            lines: begins.iter().map(|c| line_of(text, whole(c).0)).collect(),
        }),
        (_, e) if e > 1 => Err(BlockError::MultipleEnd {
            lines: ends.iter().map(|c| line_of(text, whole(c).0)).collect(),
        }),
        (1, 0) => Err(BlockError::BeginWithoutEnd {
            line: line_of(text, whole(&begins[0]).0),
        }),
        (0, 1) => Err(BlockError::EndWithoutBegin {
            line: line_of(text, whole(&ends[0]).0),
        }),
        _ => {
            let (bs, _) = whole(&begins[0]);
            let (es, ee) = whole(&ends[0]);
            let begin_line = line_of(text, bs);
            let end_line = line_of(text, es);
            if es < bs {
                return Err(BlockError::EndBeforeBegin {
                    begin_line,
                    end_line,
                });
            }
            let bv = version(&begins[0]);
            let ev = version(&ends[0]);
            if bv != ev {
                return Err(BlockError::VersionMismatch {
                    begin: bv,
                    end: ev,
                    begin_line,
                    end_line,
                });
            }
            Ok(Some(BlockInfo {
                start: bs,
                end: ee,
                begin_line,
                end_line,
                version: bv,
            }))
        }
    }
}

/// The line ending a file mostly uses (`\r\n` when it has any CRLF, else `\n`).
fn line_ending(text: &str) -> &'static str {
    if text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

/// Normalises line endings to `\n` and trims surrounding whitespace, for drift comparison.
fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n").trim().to_string()
}

/// Whether an existing block (markers included) differs from the canonical block.
/// Line endings and whitespace around the block do not count as drift.
pub fn block_drifts(block_text: &str) -> bool {
    normalise(block_text) != normalise(&canonical_block())
}

/// Computes the new content of the file `file_name` (`existing`: its content, `None` when
/// it does not exist); a refusal is `agents-block` (see [`compose`] for the rules).
pub fn compose_file(
    file_name: &str,
    existing: Option<&str>,
    request: Request,
) -> Result<Composed, Error> {
    compose(existing, request).map_err(|e| e.into_error(file_name))
}

/// Computes the new file content.
///
/// `existing` is `None` when the file does not exist. The guarantee: every byte outside the
/// block in `existing` appears unchanged, in order, in the result (except for `Overwrite`,
/// which replaces the file by request).
fn compose(existing: Option<&str>, request: Request) -> Result<Composed, ComposeError> {
    let Some(existing) = existing else {
        return Ok(Composed {
            text: canonical_block(),
            action: Action::Created,
            previous_version: None,
        });
    };
    let eol = line_ending(existing);
    let block = canonical_block_with(eol);

    // A malformed file is an error in every mode except an explicit overwrite.
    let found = match find_block(existing) {
        Ok(found) => found,
        Err(e) => {
            if request == Request::Overwrite {
                None
            } else {
                return Err(ComposeError::Malformed(e));
            }
        }
    };

    if request == Request::Overwrite {
        let action = if existing == block {
            Action::Unchanged
        } else {
            Action::Overwritten
        };
        return Ok(Composed {
            text: block,
            action,
            previous_version: found.map(|b| b.version),
        });
    }

    if let Some(info) = found {
        // Replace in place: the block region is swapped, the bytes around it stay as they are.
        // The canonical block ends with a line break; the region ends at the END marker's
        // `>`, so the break that followed the old marker is part of the suffix and kept.
        let new_region = block.strip_suffix(eol).unwrap_or(&block);
        let mut text = String::with_capacity(existing.len() + block.len());
        text.push_str(&existing[..info.start]);
        text.push_str(new_region);
        text.push_str(&existing[info.end..]);
        let action = if text == existing {
            Action::Unchanged
        } else {
            Action::Replaced
        };
        return Ok(Composed {
            text,
            action,
            previous_version: Some(info.version),
        });
    }

    if existing.trim().is_empty() {
        // An empty (or blank) file needs no mode: there is nothing to protect but the blank
        // bytes themselves, and they are kept.
        let composed = if request == Request::Mode(ComposeMode::Prepend) {
            Composed {
                text: format!("{block}{existing}"),
                action: Action::Prepended,
                previous_version: None,
            }
        } else {
            Composed {
                text: format!("{existing}{block}"),
                action: Action::Appended,
                previous_version: None,
            }
        };
        return Ok(composed);
    }

    match request {
        Request::Default => Err(ComposeError::NeedsMode),
        Request::Mode(ComposeMode::Append) => {
            let sep = if existing.ends_with(&format!("{eol}{eol}")) {
                ""
            } else if existing.ends_with('\n') {
                eol
            } else {
                // No final line break: finish the user's last line, then a blank line.
                if eol == "\r\n" {
                    "\r\n\r\n"
                } else {
                    "\n\n"
                }
            };
            Ok(Composed {
                text: format!("{existing}{sep}{block}"),
                action: Action::Appended,
                previous_version: None,
            })
        }
        Request::Mode(ComposeMode::Prepend) => Ok(Composed {
            // A byte-order mark stays the first thing in the file.
            text: match existing.strip_prefix('\u{feff}') {
                Some(rest) => format!("\u{feff}{block}{eol}{rest}"),
                None => format!("{block}{eol}{existing}"),
            },
            action: Action::Prepended,
            previous_version: None,
        }),
        Request::Overwrite => unreachable!("handled above"),
    }
}

/// Options for [`check`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    /// A missing file passes.
    pub allow_missing: bool,
    /// A file without a block, or a block that drifted, fails.
    pub strict: bool,
}

/// The result of checking a file against the canonical block. Field names follow the
/// reference's JSON report, so scripts written for it keep working.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub file_path: String,
    pub has_file: bool,
    pub has_block: bool,
    pub block_valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_version: Option<String>,
    /// Byte offsets `[start, end)` of the block; serialized as `[0, 0]` when there is none,
    /// as the reference always gives the key.
    #[serde(serialize_with = "span_or_zero")]
    pub block_span: Option<[usize; 2]>,
    /// 1-based lines of the BEGIN and END markers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_lines: Option<[usize; 2]>,
    pub has_drift: bool,
    /// The check failed (exit 1).
    pub failed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
}

fn span_or_zero<S: serde::Serializer>(span: &Option<[usize; 2]>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&span.unwrap_or([0, 0]), s)
}

/// Checks `content` (`None` = file missing). `file_name` is used in messages only,
/// `file_path` is reported as is.
pub fn check(
    content: Option<&str>,
    file_name: &str,
    file_path: &str,
    opts: CheckOptions,
) -> CheckReport {
    let mut r = CheckReport {
        file_path: file_path.to_string(),
        has_file: content.is_some(),
        has_block: false,
        block_valid: false,
        block_version: None,
        block_span: None,
        block_lines: None,
        has_drift: false,
        failed: false,
        error: None,
        recommendation: None,
    };
    let apply_hint = if file_name == crate::spec::consts::AGENTS_FILE {
        "small agents apply".to_string()
    } else {
        format!("small agents apply --file {file_name}")
    };
    let Some(text) = content else {
        if opts.allow_missing {
            r.recommendation = Some(format!(
                "{file_name} is missing, which --allow-missing permits"
            ));
        } else {
            r.failed = true;
            r.error = Some(format!("{file_name} does not exist"));
            r.recommendation = Some(format!("create it with: {apply_hint}"));
        }
        return r;
    };
    let info = match find_block(text) {
        Ok(Some(info)) => info,
        Ok(None) => {
            if opts.strict {
                r.failed = true;
                r.error = Some(format!("{file_name} has no SMALL harness block"));
                r.recommendation = Some(format!("add one with: {apply_hint} --agents-mode append"));
            } else {
                r.recommendation = Some(format!(
                    "{file_name} has no SMALL harness block; add one with `{apply_hint} --agents-mode append` (--strict makes this an error)"
                ));
            }
            return r;
        }
        Err(e) => {
            r.failed = true;
            r.error = Some(e.to_string());
            r.recommendation = Some(format!(
                "keep exactly one BEGIN and one END marker, both v{PROTOCOL_VERSION}, then run: {apply_hint}"
            ));
            return r;
        }
    };
    r.has_block = true;
    r.block_version = Some(info.version.clone());
    r.block_span = Some([info.start, info.end]);
    r.block_lines = Some([info.begin_line, info.end_line]);

    // The spec requires the marker version to be the protocol version.
    if info.version != PROTOCOL_VERSION {
        r.failed = true;
        r.has_drift = true;
        r.error = Some(format!(
            "the SMALL harness block is v{}, but this protocol version is v{PROTOCOL_VERSION}",
            info.version
        ));
        r.recommendation = Some(format!("upgrade the block in place with: {apply_hint}"));
        return r;
    }
    let block_text = &text[info.start..info.end];
    let inner = block_text
        .strip_prefix(&harness_begin_marker())
        .and_then(|s| s.strip_suffix(&harness_end_marker()))
        .unwrap_or("");
    if inner.trim().is_empty() {
        r.failed = true;
        r.error = Some("the SMALL harness block is empty".to_string());
        r.recommendation = Some(format!("restore it with: {apply_hint}"));
        return r;
    }
    r.block_valid = true;
    r.has_drift = block_drifts(block_text);
    if r.has_drift {
        r.recommendation = Some(format!(
            "the block differs from the one this version of small writes; refresh it with: {apply_hint}"
        ));
        if opts.strict {
            r.failed = true;
            r.error = Some("the SMALL harness block differs from the canonical block".to_string());
        }
    }
    r
}

/// The file that holds the block: `dir` (default: the current directory; its parent when it
/// is `.small`) joined with `file` (default AGENTS.md; an absolute `file` is used as is). A
/// symbolic link is followed, so writing replaces the file it points to instead of the link,
/// but only to a place inside the directory it sits in: a cloned repository must not make
/// small write outside it.
pub fn target_path(
    dir: Option<&std::path::Path>,
    file: Option<&str>,
) -> Result<std::path::PathBuf, crate::workspace::error::Error> {
    use crate::workspace::error::{code, Error};
    use std::path::Path;
    let base = match dir {
        Some(d) if !d.is_dir() => {
            return Err(Error::usage(
                code::IO,
                format!("{} is not a directory", d.display()),
            ))
        }
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| {
            Error::system(code::IO, format!("cannot read the current directory: {e}"))
        })?,
    };
    // AGENTS.md lives at the repository root, never inside `.small/` (seed 000): from inside
    // `.small/`, the file next to it is meant.
    let base = match base.file_name() {
        Some(n) if n == crate::spec::consts::SMALL_DIR => {
            base.parent().map(Path::to_path_buf).unwrap_or(base)
        }
        _ => base,
    };
    let path = base.join(file.unwrap_or(crate::spec::consts::AGENTS_FILE));
    let resolved = match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(&path) {
            Ok(real) => real,
            // A dangling link: write where it points if we can tell, else at the link.
            Err(_) => match std::fs::read_link(&path) {
                Ok(t) if t.is_absolute() => t,
                Ok(t) => path.parent().map(|p| p.join(&t)).unwrap_or(t),
                Err(_) => path.clone(),
            },
        },
        _ => return Ok(path),
    };
    let inside = |p: &Path| {
        let dir = p.parent().unwrap_or(p);
        match std::fs::canonicalize(&base) {
            Ok(b) => crate::fsio::canonical_or_planned(dir).starts_with(b),
            Err(_) => false,
        }
    };
    if !inside(&resolved) {
        return Err(Error::usage(
            code::IO,
            format!(
                "{} is a symbolic link to {}, outside {}; small does not follow links out of the workspace",
                path.display(),
                resolved.display(),
                base.display()
            ),
        ));
    }
    Ok(resolved)
}

/// The file's text, or `None` when it does not exist. Only a regular file is read, without
/// blocking on a FIFO and with a bounded size; text that is not UTF-8 is refused.
pub fn read_target(
    path: &std::path::Path,
) -> Result<Option<String>, crate::workspace::error::Error> {
    use crate::fsio;
    use crate::workspace::error::{code, Error};
    match fsio::read_bounded(path, fsio::MAX_READ_BYTES) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::invalid(
                code::REFUSED,
                format!(
                    "{} is not valid UTF-8 text; SMALL will not edit it",
                    path.display()
                ),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Err(Error::usage(
            code::IO,
            format!("{} is a directory, not a file", path.display()),
        )),
        Err(e) => Err(Error::system(
            code::IO,
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

/// What to do to the block of one file.
#[derive(Debug, Clone)]
pub struct ApplyRequest<'a> {
    /// Directory holding the file (see [`target_path`]).
    pub dir: Option<&'a std::path::Path>,
    /// The file, relative to `dir` (default AGENTS.md).
    pub file: Option<&'a str>,
    pub request: Request,
    /// Compose the result and write nothing.
    pub dry_run: bool,
}

/// What [`apply`] did (or, for a dry run, would do).
#[derive(Debug, Clone)]
pub struct Applied {
    /// The file written (a link resolved).
    pub path: std::path::PathBuf,
    /// The file's text before.
    pub existing: Option<String>,
    pub composed: Composed,
    /// Whether the file was written.
    pub written: bool,
    /// The file's name as the words show it (`--file`, else AGENTS.md).
    pub name: String,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
}

/// Why [`apply`] did nothing.
#[derive(Debug)]
pub enum ApplyError {
    /// The block cannot be composed as asked (a file without a block needs a mode; broken
    /// markers): `agents-block`.
    Compose(Error),
    /// The file cannot be found, read or written.
    File(crate::workspace::error::Error),
}

/// Create or update the block of one file (content outside the block is never changed).
pub fn apply(req: &ApplyRequest) -> Result<Applied, ApplyError> {
    let path = target_path(req.dir, req.file).map_err(ApplyError::File)?;
    let existing = read_target(&path).map_err(ApplyError::File)?;
    let name = req.file.unwrap_or(crate::spec::consts::AGENTS_FILE);
    let composed =
        compose_file(name, existing.as_deref(), req.request).map_err(ApplyError::Compose)?;
    let written = !req.dry_run && composed.action.writes();
    if written {
        crate::workspace::txn::atomic_write(&path, composed.text.as_bytes()).map_err(|e| {
            ApplyError::File(crate::workspace::error::Error::system(
                crate::workspace::error::code::IO,
                format!("cannot write {}: {e}", path.display()),
            ))
        })?;
    }
    Ok(Applied {
        path,
        existing,
        composed,
        written,
        name: name.to_string(),
        dry_run: req.dry_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outside(text: &str) -> (String, String) {
        let info = find_block(text).unwrap().unwrap();
        (text[..info.start].to_string(), text[info.end..].to_string())
    }

    #[test]
    fn canonical_block_is_found_and_does_not_drift() {
        let b = canonical_block();
        let info = find_block(&b).unwrap().unwrap();
        assert_eq!(info.start, 0);
        assert_eq!(info.end, b.len() - 1);
        assert_eq!(info.version, PROTOCOL_VERSION);
        assert!(!block_drifts(&b[info.start..info.end]));
        let r = check(
            Some(&b),
            "AGENTS.md",
            "AGENTS.md",
            CheckOptions {
                strict: true,
                ..Default::default()
            },
        );
        assert!(!r.failed && r.block_valid && !r.has_drift, "{r:?}");
    }

    #[test]
    fn replace_keeps_outside_bytes() {
        let old = "# Mine\n\n\n<!-- BEGIN SMALL HARNESS v1.0.0 -->\nold\n<!-- END SMALL HARNESS v1.0.0 -->\n\n\nfooter  \n";
        let c = compose(Some(old), Request::Default).unwrap();
        assert_eq!(c.action, Action::Replaced);
        assert_eq!(outside(&c.text), outside(old));
        let again = compose(Some(&c.text), Request::Default).unwrap();
        assert_eq!(again.action, Action::Unchanged);
        assert_eq!(again.text, c.text);
    }

    #[test]
    fn append_and_prepend_keep_existing_bytes() {
        for existing in ["# Mine", "# Mine\n", "# Mine\n\n", "  x\n\n\n"] {
            let a = compose(Some(existing), Request::Mode(ComposeMode::Append)).unwrap();
            assert!(a.text.starts_with(existing));
            assert!(a.text.ends_with(&canonical_block()));
            let p = compose(Some(existing), Request::Mode(ComposeMode::Prepend)).unwrap();
            assert!(p.text.ends_with(existing));
            assert!(p.text.starts_with(&canonical_block()));
        }
    }

    #[test]
    fn crlf_files_get_crlf_blocks() {
        let existing = "# Mine\r\nline\r\n";
        let a = compose(Some(existing), Request::Mode(ComposeMode::Append)).unwrap();
        assert!(!a.text.replace("\r\n", "").contains('\n'));
        let again = compose(Some(&a.text), Request::Default).unwrap();
        assert_eq!(again.action, Action::Unchanged);
    }

    #[test]
    fn malformed_markers_are_errors() {
        let b = "<!-- BEGIN SMALL HARNESS v1.0.0 -->\n";
        let e = "<!-- END SMALL HARNESS v1.0.0 -->\n";
        assert!(matches!(
            find_block(&format!("{b}{b}{e}")),
            Err(BlockError::MultipleBegin { .. })
        ));
        assert!(matches!(
            find_block(&format!("{b}{e}{e}")),
            Err(BlockError::MultipleEnd { .. })
        ));
        assert!(matches!(
            find_block(b),
            Err(BlockError::BeginWithoutEnd { line: 1 })
        ));
        assert!(matches!(
            find_block(e),
            Err(BlockError::EndWithoutBegin { line: 1 })
        ));
        assert!(matches!(
            find_block(&format!("{e}{b}")),
            Err(BlockError::EndBeforeBegin { .. })
        ));
        let mixed = "<!-- BEGIN SMALL HARNESS v1.0.0 -->\nx\n<!-- END SMALL HARNESS v0.9.0 -->\n";
        assert!(matches!(
            find_block(mixed),
            Err(BlockError::VersionMismatch { .. })
        ));
        assert!(compose(Some(mixed), Request::Default).is_err());
        assert_eq!(
            compose(Some(mixed), Request::Overwrite).unwrap().text,
            canonical_block()
        );
    }

    #[test]
    fn old_version_block_is_an_error_in_check_and_upgraded_by_compose() {
        let old = "top\n<!-- BEGIN SMALL HARNESS v0.9.0 -->\nx\n<!-- END SMALL HARNESS v0.9.0 -->\nbottom\n";
        let r = check(Some(old), "AGENTS.md", "AGENTS.md", CheckOptions::default());
        assert!(r.failed);
        let c = compose(Some(old), Request::Default).unwrap();
        assert_eq!(c.previous_version.as_deref(), Some("0.9.0"));
        assert!(c.text.starts_with("top\n") && c.text.ends_with("\nbottom\n"));
    }

    #[test]
    fn content_without_block_needs_a_mode() {
        assert_eq!(
            compose(Some("x"), Request::Default),
            Err(ComposeError::NeedsMode)
        );
        let e = compose_file("AGENTS.md", Some("x"), Request::Default).unwrap_err();
        assert_eq!(e.code(), code::AGENTS_BLOCK);
        assert_eq!(e.diagnostic.file.as_deref(), Some("AGENTS.md"));
        let help = e.diagnostic.help.as_deref().unwrap();
        assert!(
            help.contains("--agents-mode append") && help.contains("--no-agents"),
            "{help}"
        );
    }

    #[test]
    fn malformed_markers_are_agents_block_errors_at_the_marker() {
        let text = "<!-- END SMALL HARNESS v1.0.0 -->\nno begin\n";
        let e = compose_file("CLAUDE.md", Some(text), Request::Default).unwrap_err();
        assert_eq!(e.code(), code::AGENTS_BLOCK);
        assert!(e
            .message()
            .starts_with("CLAUDE.md: malformed SMALL harness markers"));
        assert!(e.message().contains("no BEGIN marker"), "{}", e.message());
        assert_eq!(e.diagnostic.span.map(|s| s.start.line), Some(1));
        assert!(e
            .diagnostic
            .help
            .as_deref()
            .unwrap()
            .contains("--overwrite-agents"));
    }

    #[test]
    fn bom_stays_first_when_prepending() {
        let c = compose(
            Some("\u{feff}# Mine\n"),
            Request::Mode(ComposeMode::Prepend),
        )
        .unwrap();
        assert!(c.text.starts_with("\u{feff}<!-- BEGIN"));
        assert!(c.text.ends_with("# Mine\n"));
    }

    proptest::proptest! {
        #[test]
        fn outside_bytes_survive_every_mode(before in "[ -~\t\n\r]{0,80}", after in "[ -~\t\n\r]{0,80}") {
            proptest::prop_assume!(!before.contains("SMALL HARNESS") && !after.contains("SMALL HARNESS"));
            // Replace in place.
            let old = format!("{before}<!-- BEGIN SMALL HARNESS v1.0.0 -->\nx\n<!-- END SMALL HARNESS v1.0.0 -->{after}");
            for req in [Request::Default, Request::Mode(ComposeMode::Append), Request::Mode(ComposeMode::Prepend)] {
                let c = compose(Some(&old), req).unwrap();
                let info = find_block(&c.text).unwrap().unwrap();
                proptest::prop_assert_eq!(&c.text[..info.start], before.as_str());
                proptest::prop_assert_eq!(&c.text[info.end..], after.as_str());
            }
            // Append / prepend to a file without a block.
            if !before.trim().is_empty() {
                let a = compose(Some(&before), Request::Mode(ComposeMode::Append)).unwrap();
                proptest::prop_assert!(a.text.starts_with(before.as_str()));
                let p = compose(Some(&before), Request::Mode(ComposeMode::Prepend)).unwrap();
                proptest::prop_assert!(p.text.ends_with(before.as_str()));
                proptest::prop_assert!(find_block(&a.text).unwrap().is_some());
                proptest::prop_assert!(find_block(&p.text).unwrap().is_some());
            }
        }
    }

    #[test]
    fn apply_writes_the_file_and_a_dry_run_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let req = |dry_run| ApplyRequest {
            dir: Some(tmp.path()),
            file: None,
            request: Request::Default,
            dry_run,
        };
        let dry = apply(&req(true)).unwrap();
        assert_eq!(dry.composed.action, Action::Created);
        assert!(!dry.written && !tmp.path().join("AGENTS.md").exists());
        let done = apply(&req(false)).unwrap();
        assert!(done.written);
        let text = std::fs::read_to_string(tmp.path().join("AGENTS.md")).unwrap();
        assert_eq!(text, done.composed.text);
        assert_eq!(
            apply(&req(false)).unwrap().composed.action,
            Action::Unchanged
        );
        std::fs::write(tmp.path().join("NOTES.md"), "mine\n").unwrap();
        let needs = apply(&ApplyRequest {
            file: Some("NOTES.md"),
            ..req(false)
        });
        assert!(
            matches!(needs, Err(ApplyError::Compose(e)) if e.diagnostic.code == code::AGENTS_BLOCK)
        );
    }

    #[test]
    fn target_path_stays_inside_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let small = tmp.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        let p = target_path(Some(&small), None).unwrap();
        assert_eq!(p, tmp.path().join("AGENTS.md"));
        assert!(target_path(Some(&tmp.path().join("nope")), None).is_err());
        #[cfg(unix)]
        {
            let out = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(out.path().join("X.md"), tmp.path().join("AGENTS.md"))
                .unwrap();
            assert!(target_path(Some(tmp.path()), None).is_err());
        }
        std::fs::write(tmp.path().join("bin.md"), [0xff, 0xfe]).unwrap();
        assert!(read_target(&tmp.path().join("bin.md")).is_err());
        assert_eq!(read_target(&tmp.path().join("none.md")).unwrap(), None);
    }
}
