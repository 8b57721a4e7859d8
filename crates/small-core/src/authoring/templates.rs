//! The starting content of the six `.small/` files that `small init` writes.
//!
//! Every template is a valid v1.0.0 artifact as written (the workspace passes
//! `small check --strict` right after `init`). The comments in them tell a newcomer who owns
//! the file and what to do next; YAML comments are ignored by every SMALL reader.
//! These functions only build text: timestamps and replay ids are passed in by the caller.

use crate::spec::consts::{ArtifactKind, PROTOCOL_VERSION};

/// The intent used when `init` is not given one.
pub const DEFAULT_INTENT: &str = "Describe in one or two sentences what this project is for";

/// The summary of the handoff written by `init`.
pub const BOOTSTRAP_SUMMARY: &str = "Project initialized.";

/// The resume steps of the handoff written by `init`.
pub const BOOTSTRAP_NEXT_STEPS: [&str; 3] = [
    "A human writes the project intent in .small/intent.small.yml",
    "A human reviews the rules in .small/constraints.small.yml",
    "Plan the first tasks with small plan --add \"<task>\"",
];

/// The task id of the progress entry `init` records.
pub const INIT_TASK_ID: &str = "meta/init";

/// Renders a string as a YAML double-quoted scalar, escaping everything YAML needs escaped
/// (quotes, backslashes, control characters, line breaks and the Unicode line separators).
pub fn yaml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0}' => out.push_str("\\0"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            '\u{feff}' => out.push_str("\\uFEFF"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `intent.small.yml`. `intent` is the project intent, or `None` for the placeholder.
pub fn intent(intent: Option<&str>) -> String {
    let value = match intent.map(str::trim) {
        Some(s) if !s.is_empty() => s,
        _ => DEFAULT_INTENT,
    };
    format!(
        "# Human-owned: what this project is for. Agents read this file and never edit it;\n\
         # they propose changes with `small draft intent` for a human to `small accept`.\n\
         small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"human\"\n\
         intent: {}\n\
         scope:\n\
         \x20 include: []   # paths or areas the work may touch\n\
         \x20 exclude: []   # paths or areas it must leave alone\n\
         success_criteria: []   # how a human will judge the work done\n",
        yaml_quote(value)
    )
}

/// `constraints.small.yml`, with the two rules every workspace starts with.
pub fn constraints() -> String {
    format!(
        "# Human-owned: rules every change must respect. Agents never edit this file.\n\
         # severity is `error` (must not be broken) or `warn` (needs a stated reason).\n\
         small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"human\"\n\
         constraints:\n\
         \x20 - id: \"no-secrets\"\n\
         \x20   rule: \"Keep secrets, keys and passwords out of every .small/ file\"\n\
         \x20   severity: \"error\"\n\
         \x20 - id: \"no-prod-writes\"\n\
         \x20   rule: \"Do not write to production systems unless a human asks for it\"\n\
         \x20   severity: \"error\"\n"
    )
}

/// `plan.small.yml` with its one placeholder task (the schema requires at least one).
pub fn plan() -> String {
    format!(
        "# Agent-owned: the tasks and their status. Change it with `small plan`, not by hand.\n\
         small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"agent\"\n\
         tasks:\n\
         \x20 - id: \"task-1\"\n\
         \x20   title: \"Initial task\"\n\
         \x20   steps: []\n\
         \x20   acceptance: []\n"
    )
}

/// `plan.small.yml` with these tasks (`task-1`, `task-2`, ... in order, all pending) instead
/// of the placeholder: `small init --task TITLE`.
pub fn plan_with_tasks(titles: &[String]) -> String {
    let mut out = format!(
        "# Agent-owned: the tasks and their status. Change it with `small plan`, not by hand.\n\
         small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"agent\"\n\
         tasks:\n"
    );
    for (i, t) in titles.iter().enumerate() {
        out.push_str(&format!(
            "  - id: \"task-{}\"\n    title: {}\n    status: \"pending\"\n",
            i + 1,
            yaml_quote(t.trim())
        ));
    }
    out
}

/// `progress.small.yml` with no entries yet.
pub fn progress() -> String {
    format!(
        "# Agent-owned and append-only: every entry records work done, with evidence.\n\
         # Add entries with `small progress add`, `small checkpoint` or `small apply`.\n\
         small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"agent\"\n\
         entries: []\n"
    )
}

/// `workspace.small.yml`. `kind` is `repo-root` or `examples`; `now` an RFC 3339 UTC time.
pub fn workspace(kind: &str, now: &str) -> String {
    format!(
        "small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"agent\"\n\
         kind: {}\n\
         created_at: {}\n\
         updated_at: {}\n",
        yaml_quote(kind),
        yaml_quote(now),
        yaml_quote(now)
    )
}

/// The `handoff.small.yml` that `init` writes: nothing to resume yet, the first steps,
/// and the replay id computed from the new intent, plan and constraints.
pub fn bootstrap_handoff(replay_id: &str) -> String {
    let mut steps = String::new();
    for step in BOOTSTRAP_NEXT_STEPS {
        steps.push_str("    - ");
        steps.push_str(&yaml_quote(step));
        steps.push('\n');
    }
    format!(
        "# The resume point: every session starts by reading this file. Regenerate it with\n\
         # `small handoff`.\n\
         small_version: \"{PROTOCOL_VERSION}\"\n\
         owner: \"agent\"\n\
         summary: {}\n\
         resume:\n\
         \x20 next_steps:\n\
         {steps}\
         links: []\n\
         replayId:\n\
         \x20 value: {}\n\
         \x20 source: \"auto\"\n",
        yaml_quote(BOOTSTRAP_SUMMARY),
        yaml_quote(&replay_id.to_ascii_lowercase())
    )
}

/// The evidence of the `meta/init` progress entry.
pub const INIT_EVIDENCE: &str = "Created the .small workspace and its canonical artifacts";

/// The notes of the `meta/init` progress entry.
pub fn init_notes(dir: &str) -> String {
    format!("small init in {dir}")
}

/// One file of a fresh workspace: its name inside `.small/` and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateFile {
    pub name: &'static str,
    pub content: String,
}

/// The four artifacts whose content does not depend on the others, in writing order:
/// intent, constraints, plan, progress. (The handoff needs the replay id computed from
/// these; workspace metadata needs the time.)
pub fn base_artifacts(intent_text: Option<&str>) -> Vec<TemplateFile> {
    vec![
        TemplateFile {
            name: ArtifactKind::Intent.file_name(),
            content: intent(intent_text),
        },
        TemplateFile {
            name: ArtifactKind::Constraints.file_name(),
            content: constraints(),
        },
        TemplateFile {
            name: ArtifactKind::Plan.file_name(),
            content: plan(),
        },
        TemplateFile {
            name: ArtifactKind::Progress.file_name(),
            content: progress(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_yaml_needs() {
        assert_eq!(yaml_quote("plain"), "\"plain\"");
        assert_eq!(yaml_quote("a \"b\" \\ c\nd"), "\"a \\\"b\\\" \\\\ c\\nd\"");
        assert_eq!(yaml_quote("\u{1}"), "\"\\x01\"");
    }

    #[test]
    fn intent_placeholder_and_custom() {
        assert!(intent(None).contains(DEFAULT_INTENT));
        assert!(intent(Some("   ")).contains(DEFAULT_INTENT));
        assert!(intent(Some("Build: a \"thing\"")).contains("intent: \"Build: a \\\"thing\\\"\""));
    }

    #[test]
    fn handoff_lowercases_replay_id() {
        let h = bootstrap_handoff(&"AB".repeat(32));
        assert!(h.contains(&"ab".repeat(32)));
    }

    #[test]
    fn every_template_is_a_valid_artifact() {
        use crate::gates::schemas::{SchemaSet, Target};
        let limits = crate::yaml::Limits::default();
        let schemas = SchemaSet::embedded();
        let mut files: Vec<(Target, String)> =
            base_artifacts(Some("A \"quoted\": intent\nwith two lines"))
                .into_iter()
                .map(|f| {
                    let kind = ArtifactKind::ALL
                        .into_iter()
                        .find(|k| k.file_name() == f.name)
                        .unwrap();
                    (Target::Artifact(kind), f.content)
                })
                .collect();
        files.push((
            Target::Artifact(ArtifactKind::Handoff),
            bootstrap_handoff(&"0".repeat(64)),
        ));
        files.push((
            Target::Workspace,
            workspace("repo-root", "2026-01-02T03:04:05.000000000Z"),
        ));
        files.push((
            Target::Workspace,
            workspace("examples", "2026-01-02T03:04:05.000000000Z"),
        ));
        for (target, text) in files {
            let doc =
                crate::yaml::parse_str(&text, &limits).unwrap_or_else(|e| panic!("{text}\n{e:?}"));
            let diags =
                crate::gates::validate::validate_document(&schemas, target, "template", &doc);
            assert!(diags.is_empty(), "{text}\n{diags:?}");
        }
    }
}
