//! Migration of a v1 workspace to the SMALL 2.0.0 session profile, producing the same tree,
//! byte for byte, as the reference implementation (small v1.1.2).
//!
//! - [`preview`] reads `.small/` (nothing is written) and returns the [`Plan`]: the digest
//!   of the inputs (`expected_input_digest`) and the identities derived from it and the
//!   namespace. Unlike the reference, preview also builds the migrated records in memory
//!   and refuses what apply would refuse (a fractional number in a v1 progress entry).
//! - [`apply`] re-hashes the inputs (a changed input is refused as stale), writes the
//!   candidate tree to `.small-cache/migrations/<import_id>/candidate/.small`, then swaps it
//!   into `.small/` through a journal: the v1 tree is renamed to `legacy.small` beside it,
//!   the candidate renamed into place. Killed at any instant, the workspace holds the
//!   untouched v1 tree, the complete v2 tree, or no `.small/` with the journal naming both
//!   halves; [`recover`] (also run first by every apply) finishes that last state.
//!   Applying the same plan to the migrated tree succeeds as idempotent.

pub use crate::v2::gojson;
pub mod legacy;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::v2::json::sha256_hex;
use crate::v2::record;
use gojson::GoValue;

/// The plan format the reference writes.
pub const PLAN_VERSION: &str = "small-migration-plan/v1";
/// The only target profile.
pub const PROFILE_VERSION: &str = "2.0.0";
const EPOCH: &str = "1970-01-01T00:00:00Z";

/// Test hook: sleep this many milliseconds before each step of apply's swap (so that a
/// crash test can kill the process between any two steps).
pub const SLOW_MIGRATION_ENV: &str = "SMALL_TEST_SLOW_MIGRATION_MS";

fn slow_point() {
    if let Some(ms) = std::env::var(SLOW_MIGRATION_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Why a migration step did not happen.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The request or the workspace is not migratable as asked (nothing changed).
    #[error("{0}")]
    Refused(String),
    /// The inputs changed since the plan was made.
    #[error("stale state frontier: migration expected {expected}, actual {actual}")]
    Stale { expected: String, actual: String },
    /// The file system failed.
    #[error("{0}")]
    Io(String),
}

fn io_err(what: &str, path: &Path, e: &std::io::Error) -> MigrateError {
    MigrateError::Io(format!("{what} {}: {e}", path.display()))
}

/// One input file of `.small/`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputFile {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

/// A v1 task id and the 2.0.0 task id it becomes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskMapping {
    pub legacy_id: String,
    pub task_id: String,
}

/// A reviewed migration: what preview prints and apply is given.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub plan_version: String,
    pub to: String,
    pub namespace: String,
    pub mode: String,
    pub expected_input_digest: String,
    pub import_id: String,
    pub project_id: String,
    pub lineage_id: String,
    pub policy_revision: String,
    pub files: Vec<InputFile>,
    /// `None` when the plan has no tasks (printed as `null`, as the reference does).
    pub tasks: Option<Vec<TaskMapping>>,
}

fn files_value(files: &[InputFile]) -> GoValue {
    GoValue::Arr(
        files
            .iter()
            .map(|f| {
                GoValue::Obj(vec![
                    ("path".into(), GoValue::str(&f.path)),
                    ("sha256".into(), GoValue::str(&f.sha256)),
                    ("size".into(), GoValue::Int(f.size as i64)),
                ])
            })
            .collect(),
    )
}

fn tasks_value(tasks: &Option<Vec<TaskMapping>>) -> GoValue {
    match tasks {
        None => GoValue::Null,
        Some(tasks) => GoValue::Arr(
            tasks
                .iter()
                .map(|t| {
                    GoValue::Obj(vec![
                        ("legacy_id".into(), GoValue::str(&t.legacy_id)),
                        ("task_id".into(), GoValue::str(&t.task_id)),
                    ])
                })
                .collect(),
        ),
    }
}

impl Plan {
    /// The plan in the reference's member order.
    pub fn to_value(&self) -> GoValue {
        GoValue::Obj(vec![
            ("plan_version".into(), GoValue::str(&self.plan_version)),
            ("to".into(), GoValue::str(&self.to)),
            ("namespace".into(), GoValue::str(&self.namespace)),
            ("mode".into(), GoValue::str(&self.mode)),
            (
                "expected_input_digest".into(),
                GoValue::str(&self.expected_input_digest),
            ),
            ("import_id".into(), GoValue::str(&self.import_id)),
            ("project_id".into(), GoValue::str(&self.project_id)),
            ("lineage_id".into(), GoValue::str(&self.lineage_id)),
            (
                "policy_revision".into(),
                GoValue::str(&self.policy_revision),
            ),
            ("files".into(), files_value(&self.files)),
            ("tasks".into(), tasks_value(&self.tasks)),
        ])
    }

    /// The plan as preview prints it with `--json` (indented, final newline).
    pub fn to_json(&self) -> String {
        format!("{}\n", gojson::indented(&self.to_value()))
    }

    /// Read a plan file: unknown or duplicate members, and numbers with a fraction, are
    /// refused.
    pub fn from_json(text: &str) -> Result<Plan, MigrateError> {
        serde_json::from_str(text)
            .map_err(|e| MigrateError::Refused(format!("migration plan: {e}")))
    }

    fn validate(&self) -> Result<(), MigrateError> {
        if self.plan_version != PLAN_VERSION || self.to != PROFILE_VERSION {
            return Err(MigrateError::Refused("unsupported migration plan".into()));
        }
        let ids = [
            &self.namespace,
            &self.expected_input_digest,
            &self.import_id,
            &self.project_id,
            &self.lineage_id,
            &self.policy_revision,
        ];
        if ids.iter().any(|s| s.is_empty()) {
            return Err(MigrateError::Refused(
                "migration plan identity fields are required".into(),
            ));
        }
        // The import id names a directory: it must be one path component.
        if self.import_id.contains(['/', '\\']) || self.import_id.starts_with('.') {
            return Err(MigrateError::Refused(
                "invalid import id in migration plan".into(),
            ));
        }
        if self.mode != "solo" && self.mode != "collaborative" {
            return Err(MigrateError::Refused("invalid migration mode".into()));
        }
        Ok(())
    }
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub import_id: String,
    pub project_id: String,
    pub lineage_id: String,
    /// The state frontier of the migrated tree.
    pub frontier: String,
    pub event_count: usize,
    /// The plan had already been applied; nothing changed.
    pub idempotent: bool,
    /// Where the v1 tree was moved (absent when idempotent).
    pub backup_path: Option<PathBuf>,
}

impl Outcome {
    /// The outcome as `--json` prints it (indented, final newline).
    pub fn to_json(&self) -> String {
        let mut members = vec![
            ("import_id".into(), GoValue::str(&self.import_id)),
            ("project_id".into(), GoValue::str(&self.project_id)),
            ("lineage_id".into(), GoValue::str(&self.lineage_id)),
            ("frontier".into(), GoValue::str(&self.frontier)),
            ("event_count".into(), GoValue::Int(self.event_count as i64)),
            ("idempotent".into(), GoValue::Bool(self.idempotent)),
        ];
        if let Some(p) = &self.backup_path {
            members.push((
                "backup_path".into(),
                GoValue::str(p.to_string_lossy().into_owned()),
            ));
        }
        format!("{}\n", gojson::indented(&GoValue::Obj(members)))
    }
}

fn hash_parts(parts: &[&str]) -> String {
    sha256_hex(parts.join("\0").as_bytes())
}

fn stable_id(prefix: &str, parts: &[&str]) -> String {
    format!("{prefix}_{}", &hash_parts(parts)[..32])
}

/// The v1 tree: its files (sorted by path), their digest, their bytes.
struct LegacyTree {
    files: Vec<InputFile>,
    digest: String,
    contents: BTreeMap<String, Vec<u8>>,
}

fn small_dir(root: &Path) -> PathBuf {
    root.join(".small")
}

fn read_legacy_tree(root: &Path) -> Result<LegacyTree, MigrateError> {
    let dir = small_dir(root);
    if dir.join("profile.json").symlink_metadata().is_ok() {
        return Err(MigrateError::Refused(
            "the workspace is already on the 2.0.0 session profile (.small/profile.json exists); there is no v1 workspace to migrate".into(),
        ));
    }
    let meta = dir
        .symlink_metadata()
        .map_err(|e| io_err("cannot read", &dir, &e))?;
    if meta.file_type().is_symlink() {
        return Err(MigrateError::Refused(format!(
            "legacy state contains symlink {}",
            dir.display()
        )));
    }
    if !meta.is_dir() {
        return Err(MigrateError::Refused(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let mut contents = BTreeMap::new();
    walk(&dir, "", &mut contents)?;
    if contents.is_empty() {
        return Err(MigrateError::Refused("no legacy .small files found".into()));
    }
    let files: Vec<InputFile> = contents
        .iter()
        .map(|(path, data)| InputFile {
            path: path.clone(),
            sha256: sha256_hex(data),
            size: data.len() as u64,
        })
        .collect();
    let parts: Vec<String> = files
        .iter()
        .map(|f| format!("{}\0{}\0{}", f.path, f.sha256, f.size))
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    Ok(LegacyTree {
        digest: hash_parts(&parts),
        files,
        contents,
    })
}

fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), MigrateError> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_err("cannot read", dir, &e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_err("cannot read", dir, &e))?;
        let path = entry.path();
        let ft = entry
            .file_type()
            .map_err(|e| io_err("cannot read", &path, &e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(MigrateError::Refused(format!(
                "legacy state contains a file name that is not UTF-8: {}",
                path.display()
            )));
        };
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if ft.is_symlink() {
            return Err(MigrateError::Refused(format!(
                "legacy state contains symlink {}",
                path.display()
            )));
        } else if ft.is_dir() {
            walk(&path, &rel, out)?;
        } else if ft.is_file() {
            let data = std::fs::read(&path).map_err(|e| io_err("cannot read", &path, &e))?;
            out.insert(rel, data);
        } else {
            return Err(MigrateError::Refused(format!(
                "legacy state contains non-regular file {}",
                path.display()
            )));
        }
    }
    Ok(())
}

fn plan_for(tree: &LegacyTree, namespace: &str) -> Result<Plan, MigrateError> {
    let ns = namespace.trim();
    let digest = tree.digest.as_str();
    let tasks = legacy::plan_tasks(tree.contents.get("plan.small.yml").map(Vec::as_slice))
        .map_err(|e| MigrateError::Refused(format!("plan.small.yml: {e}")))?;
    let handoff = legacy::handoff(tree.contents.get("handoff.small.yml").map(Vec::as_slice));
    let replay = handoff.replay_id.trim();
    let lineage_source = if handoff.clean && !replay.is_empty() {
        replay
    } else {
        digest
    };
    // The reference joins the raw bytes; they are hashed as bytes here too.
    let policy_material = {
        let mut bytes = tree
            .contents
            .get("intent.small.yml")
            .cloned()
            .unwrap_or_default();
        bytes.push(0);
        bytes.extend_from_slice(
            tree.contents
                .get("constraints.small.yml")
                .map(Vec::as_slice)
                .unwrap_or_default(),
        );
        sha256_hex(&bytes)
    };
    let mapped: Vec<TaskMapping> = tasks
        .iter()
        .map(|t| TaskMapping {
            legacy_id: t.id.clone(),
            task_id: stable_id("task", &[ns, digest, &t.id]),
        })
        .collect();
    Ok(Plan {
        plan_version: PLAN_VERSION.into(),
        to: PROFILE_VERSION.into(),
        namespace: ns.into(),
        mode: "solo".into(),
        expected_input_digest: digest.into(),
        import_id: stable_id("import", &[ns, digest]),
        project_id: stable_id("project", &[ns, digest]),
        lineage_id: stable_id("lineage", &[ns, lineage_source]),
        policy_revision: stable_id("policy", &[ns, &policy_material]),
        files: tree.files.clone(),
        tasks: (!mapped.is_empty()).then_some(mapped),
    })
}

/// The migrated tree, in memory: files relative to `.small/`, and its frontier.
struct Built {
    frontier: String,
    event_count: usize,
}

/// Where [`build`] puts each file of the migrated tree (path relative to `.small/`, bytes)
/// as soon as it is made, so that the tree is never held in memory whole.
type Sink<'a> = &'a mut dyn FnMut(String, Vec<u8>) -> Result<(), MigrateError>;

/// A record as the reference writes it (see [`crate::v2::record`]): sealed with its digest
/// (sessions, events) or not (profile, manifest).
fn sealed(
    members: Vec<(String, GoValue)>,
    with_digest: bool,
) -> Result<(Vec<u8>, String), MigrateError> {
    let out = if with_digest {
        record::seal(members)
    } else {
        record::unsealed(members)
    };
    out.map_err(|e| MigrateError::Refused(format!("candidate validation: {e}")))
}

fn build(
    plan: &Plan,
    contents: &BTreeMap<String, Vec<u8>>,
    files: Sink<'_>,
) -> Result<Built, MigrateError> {
    let s = |v: &str| GoValue::str(v);
    let ns = plan.namespace.as_str();
    let import = plan.import_id.as_str();
    let digest = plan.expected_input_digest.as_str();

    let material = |name: &str| {
        contents
            .get(name)
            .map(|d| sha256_hex(d))
            .unwrap_or_else(|| "absent".into())
    };
    let mut profile = vec![
        ("small_version".into(), s(PROFILE_VERSION)),
        ("project_id".into(), s(&plan.project_id)),
        ("lineage_id".into(), s(&plan.lineage_id)),
        ("mode".into(), s(&plan.mode)),
        ("policy_revision".into(), s(&plan.policy_revision)),
        ("intent_digest".into(), s(&material("intent.small.yml"))),
        (
            "constraints_digest".into(),
            s(&material("constraints.small.yml")),
        ),
    ];
    profile.push(("import_id".into(), s(import)));
    files("profile.json".into(), sealed(profile, false)?.0)?;
    for name in ["intent.small.yml", "constraints.small.yml"] {
        if let Some(data) = contents.get(name) {
            files(format!("policy/{name}"), data.clone())?;
        }
    }
    let import_dir = format!("imports/v1/{import}");
    for (path, data) in contents {
        files(format!("{import_dir}/originals/{path}"), data.clone())?;
    }
    let handoff = legacy::handoff(contents.get("handoff.small.yml").map(Vec::as_slice));
    let replay = handoff.replay_id.trim().to_string();
    let mut manifest = vec![
        ("profile".into(), s(PROFILE_VERSION)),
        ("import_id".into(), s(import)),
        ("namespace".into(), s(ns)),
        ("input_digest".into(), s(digest)),
    ];
    if !replay.is_empty() {
        manifest.push(("original_replay_id".into(), s(&replay)));
    }
    manifest.push(("files".into(), files_value(&plan.files)));
    manifest.push(("tasks".into(), tasks_value(&plan.tasks)));
    files(
        format!("{import_dir}/manifest.json"),
        sealed(manifest, false)?.0,
    )?;

    let session_id = stable_id("session", &[ns, import, "v1-import"]);
    let session = vec![
        ("small_version".into(), s(PROFILE_VERSION)),
        ("project_id".into(), s(&plan.project_id)),
        ("lineage_id".into(), s(&plan.lineage_id)),
        ("session_id".into(), s(&session_id)),
        ("label".into(), s("v1 migration")),
        ("observed_frontier".into(), s(&sha256_hex(b""))),
        ("tool_version".into(), s("small-migrate")),
        ("created_at".into(), s(EPOCH)),
    ];
    files(
        format!("sessions/{session_id}.json"),
        sealed(session, true)?.0,
    )?;

    let mut events = Events {
        plan,
        session_id: &session_id,
        previous: String::new(),
        heads: Vec::new(),
        files,
    };
    events.push(
        "session_started",
        EPOCH,
        "",
        vec![("imported".into(), GoValue::Bool(true))],
    )?;
    events.push(
        "v1_imported",
        "1970-01-01T00:00:01Z",
        "",
        vec![
            ("import_id".into(), s(import)),
            ("namespace".into(), s(ns)),
            ("input_digest".into(), s(digest)),
        ],
    )?;
    let tasks = legacy::plan_tasks(contents.get("plan.small.yml").map(Vec::as_slice))
        .map_err(|e| MigrateError::Refused(format!("plan.small.yml: {e}")))?;
    let mut mappings: std::collections::HashMap<String, String> = plan
        .tasks
        .iter()
        .flatten()
        .map(|m| (m.legacy_id.clone(), m.task_id.clone()))
        .collect();
    let list = |v: &Option<Vec<String>>| match v {
        None => GoValue::Null,
        Some(items) => GoValue::Arr(items.iter().map(|i| s(i)).collect()),
    };
    for (i, task) in tasks.iter().enumerate() {
        let task_id = mappings.get(&task.id).cloned().unwrap_or_default();
        events.push(
            "task_created",
            &format!("legacy-plan-{i:06}"),
            &task_id,
            vec![
                ("alias".into(), s(&task.id)),
                ("title".into(), s(&task.title)),
                ("acceptance".into(), list(&task.acceptance)),
                ("dependencies".into(), list(&task.dependencies)),
                ("legacy_status".into(), s(&task.status)),
            ],
        )?;
    }
    let progress = legacy::progress(contents.get("progress.small.yml").map(Vec::as_slice));
    let mut last_status: std::collections::HashMap<String, String> = Default::default();
    for (i, entry) in progress.entries().enumerate() {
        let legacy_id = legacy::entry_text(&entry, "task_id");
        let task_id = match mappings.get(&legacy_id).filter(|t| !t.is_empty()) {
            Some(t) => t.clone(),
            None => {
                let t = stable_id("task", &[ns, digest, "orphan", &legacy_id, &i.to_string()]);
                mappings.insert(legacy_id.clone(), t.clone());
                events.push(
                    "task_created",
                    &format!("legacy-progress-orphan-{i:06}"),
                    &t,
                    vec![
                        ("alias".into(), s(&legacy_id)),
                        ("title".into(), s("Imported legacy progress task")),
                    ],
                )?;
                t
            }
        };
        let status = legacy::entry_text(&entry, "status");
        let mut occurrence = legacy::entry_text(&entry, "timestamp");
        if occurrence.is_empty() {
            occurrence = format!("legacy-progress-{i:06}");
        }
        if !status.is_empty() {
            let legacy_entry = match entry {
                None => GoValue::Null,
                Some(members) => GoValue::map(members),
            };
            if let Some(n) = legacy_entry.first_non_integer() {
                return Err(MigrateError::Refused(format!(
                    "candidate validation: load events: non-integer numeric value {n} is not allowed (progress entry {i})"
                )));
            }
            if legacy_entry.has_unsupported_float() {
                return Err(MigrateError::Refused(format!(
                    "progress entry {i}: an infinite or NaN number cannot be migrated"
                )));
            }
            events.push(
                "task_transitioned",
                &format!("{occurrence}#{i:06}"),
                &task_id,
                vec![
                    ("status".into(), s(&status)),
                    ("legacy_entry".into(), legacy_entry),
                ],
            )?;
            last_status.insert(legacy_id, status);
        }
    }
    for (i, task) in tasks.iter().enumerate() {
        let status = task.status.trim();
        if !status.is_empty()
            && status != "pending"
            && last_status.get(&task.id).map(String::as_str) != Some(status)
        {
            let task_id = mappings.get(&task.id).cloned().unwrap_or_default();
            events.push(
                "task_transitioned",
                &format!("legacy-plan-status-{i:06}"),
                &task_id,
                vec![
                    ("status".into(), s(status)),
                    ("source".into(), s("plan.small.yml")),
                ],
            )?;
        }
    }
    if !handoff.summary.trim().is_empty() {
        events.push(
            "handoff_recorded",
            "legacy-handoff",
            "",
            vec![
                ("summary".into(), s(&handoff.summary)),
                ("authoritative".into(), GoValue::Bool(true)),
                ("legacy_replay_id".into(), s(&replay)),
            ],
        )?;
    }
    events.push(
        "session_closed",
        "legacy-import-complete",
        "",
        vec![("reason".into(), s("migration import session complete"))],
    )?;
    let frontier = frontier_of(&events.heads);
    let event_count = events.heads.len();
    Ok(Built {
        frontier,
        event_count,
    })
}

fn frontier_of(events: &[(String, String)]) -> String {
    record::frontier_of(events)
}

struct Events<'a> {
    plan: &'a Plan,
    session_id: &'a str,
    previous: String,
    /// Every event written: (event id, digest).
    heads: Vec<(String, String)>,
    files: Sink<'a>,
}

impl Events<'_> {
    fn push(
        &mut self,
        kind: &str,
        occurrence: &str,
        task_id: &str,
        payload: Vec<(String, GoValue)>,
    ) -> Result<(), MigrateError> {
        let p = self.plan;
        let sequence = self.heads.len() as i64 + 1;
        let id = stable_id(
            "event",
            &[&p.namespace, &p.import_id, kind, occurrence, task_id],
        );
        let draft = record::EventDraft {
            session_id: self.session_id.to_string(),
            event_id: id.clone(),
            kind: kind.to_string(),
            sequence,
            previous_event: self.previous.clone(),
            parents: Vec::new(),
            occurred_at: occurrence.to_string(),
            task_id: task_id.to_string(),
            task_revision: if task_id.is_empty() { 0 } else { 1 },
            policy_revision: p.policy_revision.clone(),
            source_digest: p.expected_input_digest.clone(),
            payload,
        };
        let ids = record::Ids {
            project_id: p.project_id.clone(),
            lineage_id: p.lineage_id.clone(),
        };
        let (bytes, digest) = sealed(draft.into_members(&ids), true)?;
        (self.files)(format!("events/{}/{id}.json", self.session_id), bytes)?;
        self.heads.push((id.clone(), digest));
        self.previous = id;
        Ok(())
    }
}

/// Plan the migration of the v1 workspace at `root` (read-only).
#[cfg(test)]
pub fn preview(root: &Path, namespace: &str) -> Result<Plan, MigrateError> {
    preview_with_mode(root, namespace, "solo")
}

/// [`preview`] with the initial mode of the migrated workspace: `solo` (one active session
/// at a time) or `collaborative` (several, whose incompatible outcomes become conflicts). The
/// mode is recorded in the plan and in `profile.json`; no identity depends on it.
pub fn preview_with_mode(root: &Path, namespace: &str, mode: &str) -> Result<Plan, MigrateError> {
    if namespace.trim().is_empty() {
        return Err(MigrateError::Refused(
            "migration namespace is required".into(),
        ));
    }
    if mode != "solo" && mode != "collaborative" {
        return Err(MigrateError::Refused(
            "mode must be solo or collaborative".into(),
        ));
    }
    let tree = read_legacy_tree(root)?;
    let mut plan = plan_for(&tree, namespace)?;
    plan.mode = mode.to_string();
    // Refuse now what apply would refuse (the records are made and dropped).
    build(&plan, &tree.contents, &mut |_, _| Ok(()))?;
    Ok(plan)
}

/// The journal of one migration, in `.small-cache/migrations/<import_id>/journal.json`.
#[derive(Debug, serde::Serialize, Deserialize)]
struct Journal {
    import_id: String,
    /// prepared (candidate complete), backed_up (v1 moved aside), published (v2 in place).
    stage: String,
}

fn migrations_dir(root: &Path) -> PathBuf {
    root.join(".small-cache").join("migrations")
}

fn write_file_synced(path: &Path, data: &[u8]) -> Result<(), MigrateError> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_err("cannot create", parent, &e))?;
    }
    let mut f = std::fs::File::create(path).map_err(|e| io_err("cannot write", path, &e))?;
    f.write_all(data)
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("cannot write", path, &e))
}

/// Build the migrated tree and write it as the candidate at `candidate`: the records are
/// made on this thread and written on a second one as they come (through a short queue, so
/// the tree is never in memory whole), each directory created once; then one `syncfs`
/// makes all of it durable (file data and directory entries alike) instead of an `fsync`
/// per file, which cost a disk flush per event. Nothing points at the candidate until the
/// journal says `prepared`, which is written after this returns.
fn write_candidate(
    candidate: &Path,
    plan: &Plan,
    contents: &BTreeMap<String, Vec<u8>>,
) -> Result<Built, MigrateError> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(String, Vec<u8>)>>(4);
    let (built, writer) = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
            let mut writer = CandidateWriter::new(candidate);
            for batch in rx {
                for (rel, data) in batch {
                    writer.write(&rel, &data)?;
                }
            }
            Ok::<_, MigrateError>(writer)
        });
        match spawned {
            Ok(handle) => {
                // Files go over in batches: one hand-over (and at most one wake-up of
                // either thread) per batch, not per file.
                let stopped = || MigrateError::Io("the candidate writer stopped".into());
                let mut batch = Vec::with_capacity(WRITE_BATCH);
                let built = build(plan, contents, &mut |rel, data| {
                    batch.push((rel, data));
                    if batch.len() == WRITE_BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(WRITE_BATCH));
                        tx.send(full).map_err(|_| stopped())?;
                    }
                    Ok(())
                })
                .and_then(|b| {
                    if !batch.is_empty() {
                        tx.send(std::mem::take(&mut batch)).map_err(|_| stopped())?;
                    }
                    Ok(b)
                });
                drop(tx);
                let writer = handle
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                // (A write error stops the writer, and then the builder: the `?` above
                // reports the cause.)
                Ok::<_, MigrateError>((built?, writer))
            }
            // No second thread: write each file as it is made.
            Err(_) => {
                let mut writer = CandidateWriter::new(candidate);
                let built = build(plan, contents, &mut |rel, data| writer.write(&rel, &data))?;
                Ok((built, writer))
            }
        }
    })?;
    writer.sync()?;
    Ok(built)
}

/// How many files the builder hands the candidate writer at a time.
const WRITE_BATCH: usize = 128;

/// Writes the files of a candidate tree, creating each directory once.
struct CandidateWriter<'a> {
    root: &'a Path,
    dirs: BTreeSet<PathBuf>,
    /// The directory the last file went to, held open: the next file of the same directory
    /// (a session's events come one after another) is created relative to it, without a walk
    /// of the whole path. At 100 000 events that walk was a fifth of the time of apply.
    #[cfg(target_os = "linux")]
    at: Option<(PathBuf, rustix::fd::OwnedFd)>,
}

impl<'a> CandidateWriter<'a> {
    fn new(root: &'a Path) -> Self {
        CandidateWriter {
            root,
            dirs: BTreeSet::new(),
            #[cfg(target_os = "linux")]
            at: None,
        }
    }

    /// Create the directory `dir` (and its parents) once per writer.
    fn ensure_dir(&mut self, dir: &Path) -> Result<(), MigrateError> {
        if !self.dirs.contains(dir) {
            std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, &e))?;
            self.dirs.insert(dir.to_path_buf());
        }
        Ok(())
    }

    #[cfg(target_os = "linux")]
    fn write(&mut self, rel: &str, data: &[u8]) -> Result<(), MigrateError> {
        use rustix::fs::{Mode, OFlags};
        use std::io::Write as _;
        let path = self.root.join(rel);
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return write_new_file(&path, data);
        };
        if self.at.as_ref().is_none_or(|(d, _)| d != parent) {
            self.ensure_dir(parent)?;
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            self.at = rustix::fs::open(parent, flags, Mode::empty())
                .ok()
                .map(|fd| (parent.to_path_buf(), fd));
        }
        let Some((_, dir)) = &self.at else {
            return write_new_file(&path, data);
        };
        // As `std::fs::write` creates a file (mode 0o666 less the umask), from the directory;
        // the candidate is a new tree, so a name already there is an error, never overwritten.
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o666))
            .map_err(|e| io_err("cannot write", &path, &std::io::Error::from(e)))?;
        std::fs::File::from(fd)
            .write_all(data)
            .map_err(|e| io_err("cannot write", &path, &e))
    }

    #[cfg(not(target_os = "linux"))]
    fn write(&mut self, rel: &str, data: &[u8]) -> Result<(), MigrateError> {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            self.ensure_dir(parent)?;
        }
        write_new_file(&path, data)
    }

    /// Make the files and directories written durable.
    #[cfg(target_os = "linux")]
    fn sync(&self) -> Result<(), MigrateError> {
        use std::os::fd::AsRawFd;
        let d = std::fs::File::open(self.root).map_err(|e| io_err("cannot open", self.root, &e))?;
        // SAFETY: syncfs takes an open descriptor, which `d` holds for the call.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(io_err("cannot sync", self.root, &e));
        }
        Ok(())
    }

    /// Make the files and directories written durable (each file was synced as written).
    #[cfg(not(target_os = "linux"))]
    fn sync(&self) -> Result<(), MigrateError> {
        for dir in &self.dirs {
            sync_dir(dir);
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn write_new_file(path: &Path, data: &[u8]) -> Result<(), MigrateError> {
    std::fs::write(path, data).map_err(|e| io_err("cannot write", path, &e))
}

#[cfg(not(target_os = "linux"))]
fn write_new_file(path: &Path, data: &[u8]) -> Result<(), MigrateError> {
    write_file_synced(path, data)
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

fn write_journal(dir: &Path, import_id: &str, stage: &str) -> Result<(), MigrateError> {
    let j = Journal {
        import_id: import_id.into(),
        stage: stage.into(),
    };
    let text = serde_json::to_string(&j).map_err(|e| MigrateError::Io(e.to_string()))?;
    let tmp = dir.join("journal.json.tmp");
    write_file_synced(&tmp, format!("{text}\n").as_bytes())?;
    let path = dir.join("journal.json");
    std::fs::rename(&tmp, &path).map_err(|e| io_err("cannot write", &path, &e))?;
    sync_dir(dir);
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<(), MigrateError> {
    std::fs::rename(from, to).map_err(|e| {
        MigrateError::Io(format!(
            "cannot move {} to {}: {e}",
            from.display(),
            to.display()
        ))
    })?;
    if let Some(p) = to.parent() {
        sync_dir(p);
    }
    if let Some(p) = from.parent() {
        sync_dir(p);
    }
    Ok(())
}

/// The import id of the 2.0.0 profile at `root`, if there is one.
fn current_import(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(small_dir(root).join("profile.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    if v.get("small_version")?.as_str()? != PROFILE_VERSION {
        return None;
    }
    Some(v.get("import_id")?.as_str().unwrap_or_default().to_string())
}

/// Hold the workspace's write lock (the one every v1 transaction takes) while `f` runs.
fn locked<T>(root: &Path, f: impl FnOnce() -> Result<T, MigrateError>) -> Result<T, MigrateError> {
    let path = root.join(crate::workspace::txn::LOCK_FILE);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, &e))?;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_err("cannot open", &path, &e))?;
    fs4::FileExt::lock(&lock).map_err(|e| io_err("cannot lock", &path, &e))?;
    let out = f();
    let _ = fs4::FileExt::unlock(&lock);
    out
}

/// What [`recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Import ids whose interrupted swap was completed.
    pub completed: Vec<String>,
    /// Import ids whose interrupted swap was rolled back to the v1 tree.
    pub rolled_back: Vec<String>,
}

/// Finish any migration an interruption left half done.
pub fn recover(root: &Path) -> Result<Recovery, MigrateError> {
    if !migrations_dir(root).is_dir() {
        return Ok(Recovery::default());
    }
    locked(root, || recover_locked(root))
}

fn recover_locked(root: &Path) -> Result<Recovery, MigrateError> {
    let mut out = Recovery::default();
    let dir = migrations_dir(root);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for mig in dirs {
        let Ok(text) = std::fs::read_to_string(mig.join("journal.json")) else {
            continue;
        };
        let j: Journal = serde_json::from_str(&text)
            .map_err(|e| MigrateError::Io(format!("migration journal {}: {e}", mig.display())))?;
        if j.stage == "published" {
            continue;
        }
        let target = small_dir(root);
        let candidate = mig.join("candidate").join(".small");
        let backup = mig.join("legacy.small");
        if target.symlink_metadata().is_err() {
            if candidate.is_dir() {
                rename(&candidate, &target)?;
                out.completed.push(j.import_id.clone());
            } else if backup.is_dir() {
                rename(&backup, &target)?;
                out.rolled_back.push(j.import_id.clone());
            }
        }
        if current_import(root).as_deref() == Some(j.import_id.as_str()) {
            write_journal(&mig, &j.import_id, "published")?;
        }
    }
    Ok(out)
}

/// The frontier and event count of the migrated tree at `root`.
fn tree_frontier(root: &Path) -> Result<(String, usize), MigrateError> {
    let events = small_dir(root).join("events");
    let mut heads = Vec::new();
    let sessions = std::fs::read_dir(&events).map_err(|e| io_err("cannot read", &events, &e))?;
    for s in sessions.flatten() {
        let Ok(files) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for f in files.flatten() {
            let path = f.path();
            let text =
                std::fs::read_to_string(&path).map_err(|e| io_err("cannot read", &path, &e))?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                MigrateError::Refused(format!("load events: {}: {e}", path.display()))
            })?;
            let field = |k: &str| {
                v.get(k)
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            heads.push((field("event_id"), field("digest")));
        }
    }
    Ok((frontier_of(&heads), heads.len()))
}

/// Apply a reviewed plan to the workspace at `root`. `expect_state` must be the plan's
/// `expected_input_digest`.
pub fn apply(root: &Path, plan: &Plan, expect_state: &str) -> Result<Outcome, MigrateError> {
    plan.validate()?;
    if plan.expected_input_digest != expect_state {
        return Err(MigrateError::Refused(
            "expected state does not match reviewed migration plan".into(),
        ));
    }
    if current_import(root).is_none() {
        // A v1 commit a crashed writer left half done is finished first, so that the
        // inputs hashed are a state the v1 tools wrote.
        crate::workspace::txn::recover(root).map_err(|e| {
            MigrateError::Io(format!("cannot finish an interrupted v1 commit: {e}"))
        })?;
    }
    locked(root, || apply_locked(root, plan))
}

fn apply_locked(root: &Path, plan: &Plan) -> Result<Outcome, MigrateError> {
    recover_locked(root)?;
    if let Some(existing) = current_import(root) {
        if existing != plan.import_id {
            return Err(MigrateError::Refused(format!(
                "workspace already uses v2 import {existing}, not {}",
                plan.import_id
            )));
        }
        let (frontier, event_count) = tree_frontier(root)?;
        let profile =
            std::fs::read_to_string(small_dir(root).join("profile.json")).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&profile).unwrap_or_default();
        let field = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .unwrap_or_default()
                .to_string()
        };
        return Ok(Outcome {
            import_id: plan.import_id.clone(),
            project_id: field("project_id"),
            lineage_id: field("lineage_id"),
            frontier,
            event_count,
            idempotent: true,
            backup_path: None,
        });
    }
    let tree = read_legacy_tree(root)?;
    if tree.digest != plan.expected_input_digest {
        return Err(MigrateError::Stale {
            expected: plan.expected_input_digest.clone(),
            actual: tree.digest,
        });
    }
    let mig = migrations_dir(root).join(&plan.import_id);
    // A journal of an earlier attempt that stopped before moving the v1 tree (recovery
    // left it, the v1 tree being in place) no longer describes the candidate.
    let journal = mig.join("journal.json");
    if journal.exists() {
        std::fs::remove_file(&journal).map_err(|e| io_err("cannot remove", &journal, &e))?;
        sync_dir(&mig);
    }
    let candidate_root = mig.join("candidate");
    if candidate_root.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(&candidate_root)
            .map_err(|e| io_err("cannot remove", &candidate_root, &e))?;
    }
    let candidate = candidate_root.join(".small");
    let built = match write_candidate(&candidate, plan, &tree.contents) {
        Ok(built) => built,
        Err(e) => {
            // A refused or failed candidate is not left behind.
            let _ = std::fs::remove_dir_all(&candidate_root);
            return Err(e);
        }
    };
    drop(tree);
    let again = read_legacy_tree(root)?;
    if again.digest != plan.expected_input_digest {
        return Err(MigrateError::Stale {
            expected: plan.expected_input_digest.clone(),
            actual: again.digest,
        });
    }
    let backup = mig.join("legacy.small");
    if backup.symlink_metadata().is_ok() {
        return Err(MigrateError::Refused(format!(
            "a backup of an earlier attempt is in the way: {}",
            backup.display()
        )));
    }
    slow_point();
    write_journal(&mig, &plan.import_id, "prepared")?;
    slow_point();
    rename(&small_dir(root), &backup)?;
    slow_point();
    write_journal(&mig, &plan.import_id, "backed_up")?;
    slow_point();
    rename(&candidate, &small_dir(root))?;
    slow_point();
    write_journal(&mig, &plan.import_id, "published")?;
    let abs_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    Ok(Outcome {
        import_id: plan.import_id.clone(),
        project_id: plan.project_id.clone(),
        lineage_id: plan.lineage_id.clone(),
        frontier: built.frontier,
        event_count: built.event_count,
        idempotent: false,
        backup_path: Some(
            abs_root
                .join(".small-cache")
                .join("migrations")
                .join(&plan.import_id)
                .join("legacy.small"),
        ),
    })
}

#[cfg(test)]
mod tests;
