//! Per-file structure: a mapping at the top, `small_version` (INV5), `owner` (OWN), known
//! keys (KEYS), required fields' shapes (SHAPE) and unique ids (DUP).

use std::collections::HashMap;

use super::{diag, is_seq, need, non_empty_str, show};
use crate::diag::Diagnostic;
use crate::json::pointer::escape as escape_pointer;
use crate::spec::consts::{ArtifactKind, PROTOCOL_VERSION};
use crate::yaml::{Node, Value};

fn allowed_keys(kind: ArtifactKind) -> &'static [&'static str] {
    match kind {
        ArtifactKind::Intent => &[
            "small_version",
            "owner",
            "intent",
            "scope",
            "success_criteria",
        ],
        ArtifactKind::Constraints => &["small_version", "owner", "constraints"],
        ArtifactKind::Plan => &["small_version", "owner", "tasks"],
        ArtifactKind::Progress => &["small_version", "owner", "entries"],
        ArtifactKind::Handoff => &[
            "small_version",
            "owner",
            "summary",
            "resume",
            "links",
            "replayId",
            "run",
        ],
    }
}

/// Rules every artifact shares: a mapping at the top, version, owner, known keys.
pub(super) fn check_common(kind: ArtifactKind, root: &Node, out: &mut Vec<Diagnostic>) -> bool {
    if root.as_map().is_none() {
        out.push(
            diag(
                "SHAPE",
                kind,
                Some(root.span),
                "",
                format!(
                    "the top level must be a mapping, found {}",
                    root.type_name()
                ),
            )
            .with_help(format!(
                "start the file with `small_version: \"{PROTOCOL_VERSION}\"`"
            )),
        );
        return false;
    }
    match root.get("small_version") {
        Some(v) if v.as_str() == Some(PROTOCOL_VERSION) => {}
        Some(v) => out.push(
            diag(
                "INV5",
                kind,
                Some(v.span),
                "/small_version",
                format!(
                    "small_version must be the string \"{PROTOCOL_VERSION}\", found {}",
                    show(v)
                ),
            )
            .with_help(format!("write `small_version: \"{PROTOCOL_VERSION}\"`")),
        ),
        None => out.push(
            diag(
                "INV5",
                kind,
                Some(root.span),
                "/small_version",
                "small_version is missing".into(),
            )
            .with_help(format!("add `small_version: \"{PROTOCOL_VERSION}\"`")),
        ),
    }
    let want = kind.owner();
    match root.get("owner") {
        Some(o) if o.as_str() == Some(want) => {}
        other => {
            let found = other.map_or("nothing".to_string(), show);
            out.push(
                diag(
                    "OWN",
                    kind,
                    Some(other.map_or(root.span, |o| o.span)),
                    "/owner",
                    format!(
                        "owner of the {} artifact must be \"{want}\", found {found}",
                        kind.name()
                    ),
                )
                .with_help(format!("write `owner: \"{want}\"`")),
            );
        }
    }
    let allowed = allowed_keys(kind);
    for e in root.as_map().unwrap_or(&[]) {
        if !allowed.contains(&e.key.as_ref()) {
            out.push(
                diag(
                    "KEYS",
                    kind,
                    Some(e.key_span),
                    &format!("/{}", escape_pointer(&e.key)),
                    format!(
                        "unknown top-level key `{}` in the {} artifact",
                        e.key,
                        kind.name()
                    ),
                )
                .with_help(format!("allowed keys: {}", allowed.join(", "))),
            );
        }
    }
    true
}

pub(super) fn check_intent(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Intent;
    need(
        out,
        k,
        root,
        root,
        "/intent",
        non_empty_str(root.get("intent")),
        "a non-empty string",
    );
    let Some(scope) = root.get("scope").filter(|s| s.as_map().is_some()) else {
        need(
            out,
            k,
            root,
            root,
            "/scope",
            false,
            "a mapping with `include` and `exclude` lists",
        );
        return;
    };
    need(
        out,
        k,
        root,
        scope,
        "/scope/include",
        is_seq(scope.get("include")),
        "a list",
    );
    need(
        out,
        k,
        root,
        scope,
        "/scope/exclude",
        is_seq(scope.get("exclude")),
        "a list",
    );
    need(
        out,
        k,
        root,
        root,
        "/success_criteria",
        is_seq(root.get("success_criteria")),
        "a list",
    );
}

/// Report ids that occur more than once in a list of mappings.
fn check_unique_ids(kind: ArtifactKind, list: &str, items: &[Node], out: &mut Vec<Diagnostic>) {
    // Ids borrowed from the items, hashed fast: a plan can hold thousands.
    let mut first: HashMap<&str, usize, foldhash::fast::RandomState> = HashMap::default();
    for (i, item) in items.iter().enumerate() {
        let Some(idn) = item.get("id") else { continue };
        let Some(id) = idn.as_str().map(str::trim).filter(|s| !s.is_empty()) else {
            continue;
        };
        if let Some(&j) = first.get(id) {
            out.push(
                diag(
                    "DUP",
                    kind,
                    Some(idn.span),
                    &format!("/{list}/{i}/id"),
                    format!("duplicate id \"{id}\": {list}[{i}] repeats the id of {list}[{j}]"),
                )
                .with_help("give every item its own id"),
            );
        } else {
            first.insert(id, i);
        }
    }
}

pub(super) fn check_constraints(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Constraints;
    let items = root
        .get("constraints")
        .and_then(Node::as_seq)
        .filter(|s| !s.is_empty());
    let Some(items) = items else {
        need(
            out,
            k,
            root,
            root,
            "/constraints",
            false,
            "a non-empty list",
        );
        return;
    };
    for (i, it) in items.iter().enumerate() {
        let p = format!("/constraints/{i}");
        if it.as_map().is_none() {
            need(out, k, root, root, &p, false, "a mapping");
            continue;
        }
        need(
            out,
            k,
            root,
            it,
            &format!("{p}/id"),
            non_empty_str(it.get("id")),
            "a non-empty string",
        );
        need(
            out,
            k,
            root,
            it,
            &format!("{p}/rule"),
            non_empty_str(it.get("rule")),
            "a non-empty string",
        );
        let sev_ok = matches!(
            it.get("severity").and_then(Node::as_str),
            Some("error" | "warn")
        );
        need(
            out,
            k,
            root,
            it,
            &format!("{p}/severity"),
            sev_ok,
            "\"error\" or \"warn\"",
        );
    }
    check_unique_ids(k, "constraints", items, out);
}

pub(super) fn check_plan(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Plan;
    let Some(tasks) = root
        .get("tasks")
        .and_then(Node::as_seq)
        .filter(|s| !s.is_empty())
    else {
        need(out, k, root, root, "/tasks", false, "a non-empty list");
        return;
    };
    for (i, t) in tasks.iter().enumerate() {
        let p = format!("/tasks/{i}");
        if t.as_map().is_none() {
            need(out, k, root, root, &p, false, "a mapping");
            continue;
        }
        need(
            out,
            k,
            root,
            t,
            &format!("{p}/id"),
            non_empty_str(t.get("id")),
            "a non-empty string",
        );
        need(
            out,
            k,
            root,
            t,
            &format!("{p}/title"),
            non_empty_str(t.get("title")),
            "a non-empty string",
        );
    }
    check_unique_ids(k, "tasks", tasks, out);
}

pub(super) fn check_handoff(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Handoff;
    need(
        out,
        k,
        root,
        root,
        "/summary",
        non_empty_str(root.get("summary")),
        "a non-empty string",
    );
    let Some(resume) = root.get("resume").filter(|r| r.as_map().is_some()) else {
        need(out, k, root, root, "/resume", false, "a mapping");
        return;
    };
    if let Some(cur) = resume.get("current_task_id") {
        match &cur.value {
            Value::Null => {}
            Value::Str(s) if s.trim().is_empty() => out.push(
                diag(
                    "SHAPE",
                    k,
                    Some(cur.span),
                    "/resume/current_task_id",
                    "resume.current_task_id must not be an empty string".into(),
                )
                .with_help("name a plan task, or write `current_task_id: null`"),
            ),
            Value::Str(_) => {}
            _ => need(
                out,
                k,
                root,
                resume,
                "/resume/current_task_id",
                false,
                "a string or null",
            ),
        }
    }
    need(
        out,
        k,
        root,
        resume,
        "/resume/next_steps",
        is_seq(resume.get("next_steps")),
        "a list",
    );
    need(
        out,
        k,
        root,
        root,
        "/links",
        is_seq(root.get("links")),
        "a list",
    );
}
