//! `small emit`: the workspace state as one JSON document, for tools and agents.

use std::path::PathBuf;

use serde_json::{json, Map, Value};
use small_core::gates::check::{self, GateOptions};
use small_core::gates::invariants::PlanIndex;
use small_core::gates::status::{self, PlanStatus, RecentEntry};
use small_core::spec::consts::{ArtifactKind, PROTOCOL_VERSION, TOOL_VERSION};
use small_core::workspace::{LoadOptions, Scope, Workspace};
use small_core::yaml::Node;

use crate::commands::check::{compact_line, schemas};
use crate::error::{CliError, CmdResult, EXIT_INVALID, EXIT_USAGE};
use crate::GlobalArgs;

const SECTIONS: [&str; 7] = [
    "status",
    "intent",
    "constraints",
    "plan",
    "progress",
    "paths",
    "enforcement",
];

/// Print the workspace state as JSON on stdout (read-only).
///
/// Without --include: paths, status, progress (recent entries), intent and constraints
/// summaries. --include picks sections (comma-separated: status, intent, constraints, plan,
/// progress, paths, enforcement); naming intent, constraints or progress also includes the
/// full artifact / all entries. --check runs `small check` and adds its report under
/// "enforcement"; the exit code is then check's.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Workspace kinds accepted: root (kind repo-root), examples, or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Number of recent progress entries to include
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub recent: usize,
    /// Number of next actionable tasks to include
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub tasks: usize,
    /// Sections to include, comma-separated
    #[arg(long, value_name = "LIST")]
    pub include: Option<String>,
    /// Run `small check` and include its report (exit code follows check)
    #[arg(long)]
    pub check: bool,
}

fn parse_include(s: Option<&str>) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    for part in s.unwrap_or("").split(',') {
        let p = part.trim().to_ascii_lowercase();
        if p.is_empty() {
            continue;
        }
        if !SECTIONS.contains(&p.as_str()) {
            return Err(CliError::usage(format!(
                "unknown --include section `{p}`; choose from {}",
                SECTIONS.join(", ")
            )));
        }
        out.push(p);
    }
    Ok(out)
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let include = parse_include(args.include.as_deref())?;
    let loc = small_core::workspace::locate(args.dir.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    let has_section = |s: &str| include.iter().any(|i| i == s);
    // Only `--include progress` needs the whole log in memory; the check streams it, and the
    // other sections read its last entries only.
    let loaded = if has_section("progress") {
        check::Loaded {
            ws: Workspace::load(loc, &LoadOptions::all()),
            streamed: None,
        }
    } else if args.check || has_section("enforcement") {
        match schemas(None) {
            Ok(s) => check::load(
                loc,
                Some(&s),
                &GateOptions {
                    scope: args.workspace,
                    ..Default::default()
                },
            ),
            Err(_) => check::Loaded {
                ws: Workspace::load(loc, &LoadOptions::all()),
                streamed: None,
            },
        }
    } else {
        let kinds: Vec<ArtifactKind> = ArtifactKind::ALL
            .into_iter()
            .filter(|k| *k != ArtifactKind::Progress)
            .collect();
        check::Loaded {
            ws: Workspace::load(loc, &LoadOptions::only(&kinds)),
            streamed: None,
        }
    };
    let ws = &loaded.ws;
    if args.workspace != Scope::Any {
        if let Some(d) = ws.check_scope(args.workspace).first() {
            return Err(CliError::invalid(d.message.clone()));
        }
    }
    let all = include.is_empty();
    let has = |s: &str| include.iter().any(|i| i == s);
    let mut out = Map::new();
    out.insert("cliVersion".into(), json!(TOOL_VERSION));
    out.insert("specVersion".into(), json!([PROTOCOL_VERSION]));
    out.insert(
        "workspace".into(),
        json!(ws.metadata.as_ref().and_then(|m| m.kind())),
    );
    let root = |k: ArtifactKind| ws.artifact(k).map(|a| &a.document.root);

    if all || has("paths") {
        let mut arts = Map::new();
        for k in ArtifactKind::ALL {
            arts.insert(
                k.name().into(),
                json!(ws.small_dir.join(k.file_name()).display().to_string()),
            );
        }
        out.insert(
            "paths".into(),
            // `workspace` is the directory holding .small/ (as the reference gives it);
            // `smallDir` is the .small directory itself.
            json!({
                "root": ws.root.display().to_string(),
                "workspace": ws.root.display().to_string(),
                "smallDir": ws.small_dir.display().to_string(),
                "artifacts": arts,
            }),
        );
    }
    let plan = PlanIndex::from_plan(root(ArtifactKind::Plan));
    if all || has("status") {
        let p = PlanStatus::from_plan(&plan, args.tasks);
        out.insert(
            "status".into(),
            json!({"totalTasks": p.total_tasks, "tasksByStatus": p.tasks_by_status, "nextActionable": p.next_actionable}),
        );
    }
    if all || has("progress") {
        let path = ws.small_dir.join(ArtifactKind::Progress.file_name());
        let mut prog = Map::new();
        if path.is_file() {
            let recent = status::recent_entries(&path, args.recent, &|_| true).unwrap_or_default();
            let last = status::recent_entries(&path, 1, &|_| true).unwrap_or_default();
            if let Some(ts) = last
                .first()
                .and_then(|e| e.get("timestamp"))
                .and_then(Node::as_str)
            {
                prog.insert("lastTimestamp".into(), json!(ts));
            }
            let recent: Vec<RecentEntry> = recent.iter().map(RecentEntry::from_node).collect();
            prog.insert("recent".into(), json!(recent));
            if has("progress") {
                let entries = root(ArtifactKind::Progress)
                    .and_then(|r| r.get("entries"))
                    .map_or(json!([]), Node::to_json);
                prog.insert("entries".into(), entries);
            }
        } else {
            prog.insert("recent".into(), json!([]));
        }
        out.insert("progress".into(), Value::Object(prog));
    }
    if all || has("intent") {
        if let Some(i) = root(ArtifactKind::Intent) {
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
            if has("intent") {
                m.insert("artifact".into(), i.to_json());
            }
            out.insert("intent".into(), Value::Object(m));
        }
    }
    if all || has("constraints") {
        let mut m = Map::new();
        match root(ArtifactKind::Constraints) {
            None => {
                m.insert("present".into(), json!(false));
            }
            Some(c) => {
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
                if has("constraints") {
                    m.insert("artifact".into(), c.to_json());
                }
            }
        }
        out.insert("constraints".into(), Value::Object(m));
    }
    if has("plan") {
        if let Some(p) = root(ArtifactKind::Plan) {
            out.insert(
                "plan".into(),
                json!({
                    "smallVersion": p.get("small_version").and_then(Node::as_str),
                    "owner": p.get("owner").and_then(Node::as_str),
                    "tasks": p.get("tasks").map_or(json!([]), Node::to_json),
                }),
            );
        }
    }
    let mut exit = 0;
    if args.check || has("enforcement") {
        let opts = GateOptions {
            scope: args.workspace,
            ..Default::default()
        };
        let report = match schemas(None) {
            Ok(s) => check::run_check(&loaded, &s, &opts),
            Err(d) => check::no_workspace_report(*d),
        };
        exit = report.exit_code;
        let mut enforcement = serde_json::to_value(&report).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut enforcement {
            // The reference's keys: `exitCode`, and `failures` (one line per error) when failing.
            m.insert("exitCode".into(), json!(report.exit_code));
            let failures: Vec<String> = report
                .diagnostics
                .iter()
                .filter(|(_, d)| d.is_error())
                .map(|(_, d)| compact_line(d))
                .collect();
            if !failures.is_empty() {
                m.insert("failures".into(), json!(failures));
            }
        }
        out.insert("enforcement".into(), enforcement);
    }
    g.json(&Value::Object(out))?;
    match (args.check, exit) {
        (true, 1) => Err(CliError::silent(EXIT_INVALID)),
        (true, 2) => Err(CliError::silent(EXIT_USAGE)),
        _ => Ok(()),
    }
}
