//! `emit`: the workspace state as one JSON document, for tools and agents (read-only).
//!
//! Always: paths, status, progress (recent entries), intent and constraints summaries (the
//! reference prints these keys whatever is named). A named section adds its full content:
//! intent and constraints their artifact, progress all entries, plan the plan, enforcement
//! the check report. `check` runs the `check` gate and adds its report under `enforcement`.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::gates::check::{self, GateOptions};
use crate::ops::gate::{self, Verdict};
use crate::spec::consts::{ArtifactKind, PROTOCOL_VERSION, TOOL_VERSION};
use crate::state::report::{recent_entries, RecentEntry};
use crate::workspace::{LoadOptions, LocateError, Scope, Workspace};
use crate::yaml::Node;

/// A section of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Status,
    Intent,
    Constraints,
    Plan,
    Progress,
    Paths,
    Enforcement,
}

impl Section {
    pub const ALL: [Section; 7] = [
        Section::Status,
        Section::Intent,
        Section::Constraints,
        Section::Plan,
        Section::Progress,
        Section::Paths,
        Section::Enforcement,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Section::Status => "status",
            Section::Intent => "intent",
            Section::Constraints => "constraints",
            Section::Plan => "plan",
            Section::Progress => "progress",
            Section::Paths => "paths",
            Section::Enforcement => "enforcement",
        }
    }

    /// A section by name (any case, surrounding blanks ignored).
    pub fn parse(s: &str) -> Option<Section> {
        let s = s.trim().to_ascii_lowercase();
        Section::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// What to emit.
#[derive(Debug, Clone)]
pub struct EmitRequest {
    pub dir: Option<PathBuf>,
    /// Workspace kinds accepted.
    pub scope: Scope,
    /// Recent progress entries to include.
    pub recent: usize,
    /// Next actionable tasks to include.
    pub tasks: usize,
    /// The sections asked for (empty: the default set).
    pub sections: Vec<Section>,
    /// Run the `check` gate and add its report (the verdict is then check's).
    pub check: bool,
}

/// The emitted document, and the verdict of the check when one was asked for.
#[derive(Debug)]
pub struct Emitted {
    pub document: Value,
    /// The check's verdict (`None` without `check`).
    pub check: Option<Verdict>,
}

/// Why nothing could be emitted.
#[derive(Debug)]
pub enum EmitError {
    /// There is no workspace.
    NoWorkspace(LocateError),
    /// The workspace's kind is outside the requested scope.
    OutOfScope(String),
}

fn load(
    req: &EmitRequest,
    loc: crate::workspace::Location,
    wants: &dyn Fn(Section) -> bool,
) -> check::Loaded {
    let whole = |loc| check::Loaded::whole(Workspace::load(loc, &LoadOptions::all()));
    // Only the progress section needs the whole log in memory; the check streams it, and
    // the other sections read its last entries only.
    if wants(Section::Progress) {
        whole(loc)
    } else if req.check || wants(Section::Enforcement) {
        match gate::schemas(None) {
            Ok(s) => check::load(
                loc,
                Some(&s),
                &GateOptions {
                    scope: req.scope,
                    ..Default::default()
                },
            ),
            Err(_) => whole(loc),
        }
    } else {
        let kinds: Vec<ArtifactKind> = ArtifactKind::ALL
            .into_iter()
            .filter(|k| *k != ArtifactKind::Progress)
            .collect();
        check::Loaded::whole(Workspace::load(loc, &LoadOptions::only(&kinds)))
    }
}

/// Build the document.
pub fn emit(req: &EmitRequest) -> Result<Emitted, EmitError> {
    let loc = crate::workspace::locate(req.dir.as_deref()).map_err(EmitError::NoWorkspace)?;
    loc.backend().emit(loc, req)
}

/// [`emit`] of a 2.0.0 workspace.
pub(super) fn emit_v2(loc: crate::workspace::Location, req: &EmitRequest) -> Emitted {
    emit_state(req, &loc)
}

/// [`emit`] of a v1 workspace.
pub(super) fn emit_v1(
    loc: crate::workspace::Location,
    req: &EmitRequest,
) -> Result<Emitted, EmitError> {
    let has = |s: Section| req.sections.contains(&s);
    let loaded = load(req, loc, &has);
    let ws = &loaded.ws;
    if req.scope != Scope::Any {
        if let Some(d) = ws.check_scope(req.scope).first() {
            return Err(EmitError::OutOfScope(d.message.clone()));
        }
    }
    let mut out = Map::new();
    out.insert("cliVersion".into(), json!(TOOL_VERSION));
    out.insert("specVersion".into(), json!([PROTOCOL_VERSION]));
    out.insert(
        "workspace".into(),
        json!(ws.metadata.as_ref().and_then(|m| m.kind())),
    );
    let root = |k: ArtifactKind| ws.artifact(k).map(|a| &a.document.root);
    // The summary sections are always there
    // (docs/decisions/0011-emit-summary-sections-always-present.md); a named section adds its
    // full content.
    out.insert("paths".into(), paths(ws));
    // From the project state the load built (no plan: an empty summary).
    let p = crate::state::status::plan_summary(loaded.state.task_list(), req.tasks);
    out.insert(
        "status".into(),
        json!({"totalTasks": p.total_tasks, "tasksByStatus": p.tasks_by_status, "nextActionable": p.next_actionable}),
    );
    out.insert(
        "progress".into(),
        progress(ws, req.recent, has(Section::Progress)),
    );
    if let Some(i) = root(ArtifactKind::Intent) {
        out.insert("intent".into(), intent(i, has(Section::Intent)));
    }
    out.insert(
        "constraints".into(),
        constraints(root(ArtifactKind::Constraints), has(Section::Constraints)),
    );
    if has(Section::Plan) {
        if let Some(p) = root(ArtifactKind::Plan) {
            out.insert("plan".into(), plan(p));
        }
    }
    let mut verdict = None;
    if req.check || has(Section::Enforcement) {
        let (enforcement, v) = enforcement(&loaded, req.scope);
        out.insert("enforcement".into(), enforcement);
        verdict = req.check.then_some(v);
    }
    Ok(Emitted {
        document: Value::Object(out),
        check: verdict,
    })
}

/// The plan section: the plan's versions and its tasks as written (with the reference's keys
/// added; tasks that are not a list, in an invalid plan, as they are).
fn plan(p: &Node) -> Value {
    let tasks = match p.get("tasks") {
        None => json!([]),
        Some(t) => match t.as_seq() {
            Some(items) => Value::Array(items.iter().map(plan_task).collect()),
            None => t.to_json(),
        },
    };
    json!({
        "smallVersion": p.get("small_version").and_then(Node::as_str),
        "owner": p.get("owner").and_then(Node::as_str),
        "tasks": tasks,
    })
}

/// A task as written, plus the reference's keys: `ID`, `Title` and `Status` (empty when
/// absent), `Steps`, `Acceptance` and `Dependencies` (null when absent).
fn plan_task(t: &Node) -> Value {
    let mut v = t.to_json();
    let Value::Object(m) = &mut v else {
        return v;
    };
    let text = |k: &str| json!(t.get(k).and_then(Node::as_str).unwrap_or_default());
    let list = |k: &str| match t.get(k).and_then(Node::as_seq) {
        Some(items) => json!(items.iter().filter_map(Node::as_str).collect::<Vec<_>>()),
        None => Value::Null,
    };
    m.insert("ID".into(), text("id"));
    m.insert("Title".into(), text("title"));
    m.insert("Steps".into(), list("steps"));
    m.insert("Acceptance".into(), list("acceptance"));
    m.insert("Status".into(), text("status"));
    m.insert("Dependencies".into(), list("dependencies"));
    v
}

fn paths(ws: &Workspace) -> Value {
    let mut arts = Map::new();
    for k in ArtifactKind::ALL {
        arts.insert(
            k.name().into(),
            json!(ws.small_dir.join(k.file_name()).display().to_string()),
        );
    }
    // `workspace` is the directory holding .small/ (as the reference gives it); `smallDir`
    // is the .small directory itself.
    json!({
        "root": ws.root.display().to_string(),
        "workspace": ws.root.display().to_string(),
        "smallDir": ws.small_dir.display().to_string(),
        "artifacts": arts,
    })
}

fn progress(ws: &Workspace, recent: usize, entries: bool) -> Value {
    let path = ws.small_dir.join(ArtifactKind::Progress.file_name());
    let mut prog = Map::new();
    if !path.is_file() {
        prog.insert("recent".into(), json!([]));
        return Value::Object(prog);
    }
    let last = recent_entries(&path, 1, &|_| true).unwrap_or_default();
    let recent = recent_entries(&path, recent, &|_| true).unwrap_or_default();
    if let Some(ts) = last
        .first()
        .and_then(|e| e.get("timestamp"))
        .and_then(Node::as_str)
    {
        prog.insert("lastTimestamp".into(), json!(ts));
    }
    let recent: Vec<RecentEntry> = recent.iter().map(RecentEntry::from_node).collect();
    prog.insert("recent".into(), json!(recent));
    if entries {
        let all = ws
            .artifact(ArtifactKind::Progress)
            .and_then(|a| a.document.root.get("entries"))
            .map_or(json!([]), Node::to_json);
        prog.insert("entries".into(), all);
    }
    Value::Object(prog)
}

fn intent(i: &Node, artifact: bool) -> Value {
    let len = |p: &str| i.pointer(p).and_then(Node::as_seq).map_or(0, <[Node]>::len);
    let mut m = Map::new();
    m.insert(
        "smallVersion".into(),
        json!(i.get("small_version").and_then(Node::as_str)),
    );
    m.insert("owner".into(), json!(i.get("owner").and_then(Node::as_str)));
    m.insert(
        "intent".into(),
        json!(i.get("intent").and_then(Node::as_str)),
    );
    m.insert(
        "scope".into(),
        json!({"includeCount": len("/scope/include"), "excludeCount": len("/scope/exclude")}),
    );
    m.insert(
        "successCriteriaCount".into(),
        json!(len("/success_criteria")),
    );
    if artifact {
        m.insert("artifact".into(), i.to_json());
    }
    Value::Object(m)
}

fn constraints(c: Option<&Node>, artifact: bool) -> Value {
    let mut m = Map::new();
    let Some(c) = c else {
        m.insert("present".into(), json!(false));
        return Value::Object(m);
    };
    let mut ids: Vec<String> = c
        .get("constraints")
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .filter_map(|it| it.get("id").and_then(Node::as_str))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    ids.sort();
    m.insert("present".into(), json!(true));
    m.insert("constraintIds".into(), json!(ids));
    if artifact {
        m.insert("artifact".into(), c.to_json());
    }
    Value::Object(m)
}

/// The check report with the reference's keys added: `exitCode`, and `failures` (one line
/// per error) when failing.
fn enforcement(loaded: &check::Loaded, scope: Scope) -> (Value, Verdict) {
    let opts = GateOptions {
        scope,
        ..Default::default()
    };
    let report = match gate::schemas(None) {
        Ok(s) => check::run_check(loaded, &s, &opts),
        Err(d) => check::no_workspace_report(*d),
    };
    enforcement_of(report)
}

/// A check report as `enforcement`.
fn enforcement_of(report: check::CheckReport) -> (Value, Verdict) {
    let mut v = serde_json::to_value(&report).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("exitCode".into(), json!(report.exit_code));
        let failures: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|(_, d)| d.is_error())
            .map(|(_, d)| gate::compact_line(d))
            .collect();
        if !failures.is_empty() {
            m.insert("failures".into(), json!(failures));
        }
    }
    (v, Verdict::from_code(report.exit_code))
}

/// The document of a 2.0.0 workspace, from its [`ProjectState`](crate::state::ProjectState):
/// the same sections, the policy files standing in for intent and constraints, the events
/// for progress, and the 2.0.0 checks as `enforcement`.
fn emit_state(req: &EmitRequest, loc: &crate::workspace::Location) -> Emitted {
    let has = |s: Section| req.sections.contains(&s);
    let st = crate::state::load_v2(
        loc,
        &crate::state::LoadOptions {
            recent: req.recent,
            audit: true,
        },
        false,
    );
    let mut out = Map::new();
    out.insert("cliVersion".into(), json!(TOOL_VERSION));
    out.insert("specVersion".into(), json!([crate::v2::PROFILE_VERSION]));
    out.insert("profile".into(), json!(crate::v2::PROFILE_VERSION));
    out.insert("workspace".into(), Value::Null);
    out.insert("paths".into(), state_paths(loc));
    if let Some(p) = crate::state::status::plan_status(&st, req.tasks) {
        out.insert(
            "status".into(),
            json!({"totalTasks": p.total_tasks, "tasksByStatus": p.tasks_by_status, "nextActionable": p.next_actionable}),
        );
    }
    if let Some(s) = &st.sessions {
        out.insert(
            "session".into(),
            json!({"mode": s.mode, "frontier": s.frontier, "events": s.events, "sessions": s.sessions, "conflicts": s.conflicts}),
        );
    }
    let mut prog = Map::new();
    if let Some(last) = st.recent.first() {
        prog.insert("lastTimestamp".into(), json!(last.timestamp));
    }
    prog.insert("recent".into(), json!(st.recent));
    out.insert("progress".into(), Value::Object(prog));
    if let Some(i) = &st.intent {
        out.insert("intent".into(), state_intent(i, has(Section::Intent)));
    }
    out.insert(
        "constraints".into(),
        state_constraints(&st, has(Section::Constraints)),
    );
    if has(Section::Plan) {
        out.insert("plan".into(), json!({"tasks": st.task_list()}));
    }
    let mut verdict = None;
    if req.check || has(Section::Enforcement) {
        let findings = st.sessions.as_ref().map_or(&[][..], |s| &s.findings[..]);
        let (enforcement, v) = enforcement_of(gate::v2_check_report(findings));
        out.insert("enforcement".into(), enforcement);
        verdict = req.check.then_some(v);
    }
    let mut document = Value::Object(out);
    crate::secrets::redact_json(&mut document);
    Emitted {
        document,
        check: verdict,
    }
}

/// The paths of a 2.0.0 workspace.
fn state_paths(loc: &crate::workspace::Location) -> Value {
    let small = &loc.small_dir;
    json!({
        "root": loc.root.display().to_string(),
        "workspace": loc.root.display().to_string(),
        "smallDir": small.display().to_string(),
        "profile": small.join("profile.json").display().to_string(),
        "policy": {
            "intent": small.join("policy/intent.small.yml").display().to_string(),
            "constraints": small.join("policy/constraints.small.yml").display().to_string(),
        },
    })
}

/// The intent section of a 2.0.0 workspace (with the policy's intent when `artifact`).
fn state_intent(i: &crate::state::Intent, artifact: bool) -> Value {
    let mut m = json!({
        "intent": i.intent,
        "scope": {"includeCount": i.scope_include.len(), "excludeCount": i.scope_exclude.len()},
        "successCriteriaCount": i.success_criteria.len(),
    });
    if artifact {
        m["artifact"] = json!(i);
    }
    m
}

/// The constraints section of a 2.0.0 workspace (with the constraints when `artifact`).
fn state_constraints(st: &crate::state::ProjectState, artifact: bool) -> Value {
    let mut ids: Vec<&str> = st.constraints.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    let present = st.intent.is_some() || !st.constraints.is_empty();
    let mut m = json!({"present": present, "constraintIds": ids});
    if artifact {
        m["artifact"] = json!(st.constraints);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> tempfile::TempDir {
        crate::authoring::init::fresh_workspace("Emit the state", &["First"])
    }

    fn req(dir: &std::path::Path, sections: &[Section], check: bool) -> EmitRequest {
        EmitRequest {
            dir: Some(dir.to_path_buf()),
            scope: Scope::Any,
            recent: 5,
            tasks: 3,
            sections: sections.to_vec(),
            check,
        }
    }

    #[test]
    fn sections_parse_by_name() {
        assert_eq!(Section::parse(" Plan "), Some(Section::Plan));
        assert_eq!(Section::parse("nope"), None);
        for s in Section::ALL {
            assert_eq!(Section::parse(s.name()), Some(s));
        }
    }

    #[test]
    fn the_default_document_has_the_summary_sections_only() {
        let tmp = fresh();
        let e = emit(&req(tmp.path(), &[], false)).unwrap();
        let d = &e.document;
        for k in ["paths", "status", "progress", "intent", "constraints"] {
            assert!(d.get(k).is_some(), "{k}: {d}");
        }
        assert!(d.get("plan").is_none() && d.get("enforcement").is_none());
        assert!(d["intent"].get("artifact").is_none());
        assert!(d["progress"].get("entries").is_none());
        assert_eq!(d["status"]["totalTasks"], 1);
        assert!(e.check.is_none());
    }

    #[test]
    fn named_sections_bring_their_full_content() {
        let tmp = fresh();
        let e = emit(&req(
            tmp.path(),
            &[Section::Intent, Section::Progress, Section::Plan],
            false,
        ))
        .unwrap();
        let d = &e.document;
        for k in ["paths", "status", "constraints"] {
            assert!(d.get(k).is_some(), "the summary sections stay: {k}: {d}");
        }
        assert!(d["constraints"].get("artifact").is_none());
        assert!(d["intent"].get("artifact").is_some());
        assert!(d["progress"]["entries"]
            .as_array()
            .is_some_and(|a| !a.is_empty()));
        assert_eq!(d["plan"]["tasks"][0]["id"], "task-1");
    }

    #[test]
    fn plan_tasks_carry_the_reference_keys() {
        let tmp = fresh();
        std::fs::write(
            tmp.path().join(".small/plan.small.yml"),
            "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"First\"\n    steps: [\"a\"]\n  - id: \"task-2\"\n    title: \"Second\"\n    status: \"pending\"\n    dependencies: [\"task-1\"]\n",
        )
        .unwrap();
        let e = emit(&req(tmp.path(), &[Section::Plan], false)).unwrap();
        let tasks = &e.document["plan"]["tasks"];
        assert_eq!(tasks[0]["id"], "task-1", "ours stay: {tasks}");
        assert_eq!(tasks[0]["ID"], "task-1");
        assert_eq!(tasks[0]["Title"], "First");
        assert_eq!(tasks[0]["Status"], "");
        assert_eq!(tasks[0]["Steps"], json!(["a"]));
        assert_eq!(tasks[0]["Acceptance"], Value::Null);
        assert_eq!(tasks[0]["Dependencies"], Value::Null);
        assert_eq!(tasks[1]["Status"], "pending");
        assert_eq!(tasks[1]["Dependencies"], json!(["task-1"]));
    }

    #[test]
    fn check_adds_enforcement_and_its_verdict() {
        let tmp = fresh();
        let e = emit(&req(tmp.path(), &[Section::Status], true)).unwrap();
        assert_eq!(e.check, Some(Verdict::Pass));
        assert_eq!(e.document["enforcement"]["exitCode"], 0);
        std::fs::write(
            tmp.path().join(".small/intent.small.yml"),
            "owner: \"human\"\n",
        )
        .unwrap();
        let e = emit(&req(tmp.path(), &[], true)).unwrap();
        assert_eq!(e.check, Some(Verdict::Invalid));
        assert!(e.document["enforcement"]["failures"].as_array().is_some());
    }

    #[test]
    fn no_workspace_and_scope_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(matches!(
            emit(&req(tmp.path(), &[], false)),
            Err(EmitError::NoWorkspace(_))
        ));
        let ws = fresh();
        let mut r = req(ws.path(), &[], false);
        r.scope = Scope::Examples;
        assert!(matches!(emit(&r), Err(EmitError::OutOfScope(_))));
    }
}
