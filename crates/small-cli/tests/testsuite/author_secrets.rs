//! The writing commands refuse text that holds a credential (INV1) before anything is
//! written: the agent learns at once, not when the gate fails, and nothing lands in the
//! append-only log. The refusal names the format and shows the secret masked only.

use crate::author_support::{progress_add, Ws};

/// Built from parts so that the source holds no scanner-shaped credential.
fn github_token() -> String {
    ["ghp", "_", "0123456789abcdefghijABCDEFGHIJ012345"].concat()
}

/// The secret part of the token (what must never be printed).
fn hidden(token: &str) -> &str {
    &token[4..]
}

fn snapshot(ws: &Ws) -> Vec<(String, String)> {
    [
        "plan.small.yml",
        "progress.small.yml",
        "handoff.small.yml",
        "workspace.small.yml",
    ]
    .iter()
    .map(|f| (f.to_string(), ws.read(f)))
    .collect()
}

/// Run, require exit 1 with an INV1 refusal that names `format`, never shows the secret,
/// and leaves every file as it was.
fn refused(ws: &Ws, args: &[&str], secret: &str, format: &str) -> String {
    let before = snapshot(ws);
    let o = ws.run(args);
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{args:?}\n{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(!all.contains(secret), "secret printed back: {all}");
    assert!(all.contains("INV1"), "{all}");
    assert!(all.contains(format), "{all}");
    assert!(all.contains("redacted"), "{all}");
    assert_eq!(snapshot(ws), before, "{args:?} wrote something");
    all
}

#[test]
fn progress_add_refuses_a_pasted_token() {
    let ws = Ws::new();
    let token = github_token();
    let notes = format!("pushed with {token} from the CI box");
    let out = refused(
        &ws,
        &progress_add(
            "task-1",
            "in_progress",
            &["--evidence", "pushed the branch", "--notes", &notes],
        ),
        hidden(&token),
        "GitHub token",
    );
    assert!(out.contains("ghp_…[36 chars redacted]"), "{out}");
    assert!(out.contains("`notes`"), "names the field: {out}");
    assert!(out.contains("remove it"), "says how to proceed: {out}");

    // In every evidence field, and in the JSON form of the error.
    let password = ["Pq7", "fxWFzs3Gc9Cnd"].concat();
    let cmd = format!("psql postgres://app:{password}@db.internal:5432/app");
    let out = refused(
        &ws,
        &progress_add("task-1", "in_progress", &["--command", &cmd, "--json"]),
        &password,
        "password in a URL",
    );
    let doc: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON error");
    assert_eq!(doc["errors"][0]["code"], "INV1", "{doc}");
    assert_eq!(
        doc["errors"][0]["secret"]["kind"], "password in a URL",
        "{doc}"
    );

    // An assignment in prose is refused too; ordinary text is written.
    refused(
        &ws,
        &progress_add(
            "task-1",
            "in_progress",
            &["--evidence", "ran DB_PASSWORD=Xk9#mQ2vLp7z ./migrate"],
        ),
        "Xk9#mQ2vLp7z",
        "secret assignment",
    );
    ws.ok(&progress_add("task-1", "in_progress", &["--evidence", "exported GITHUB_TOKEN=$GITHUB_TOKEN from the vault, commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"]));
    assert_eq!(ws.entries().len(), 1);
}

#[test]
fn checkpoint_plan_and_handoff_refuse_a_secret() {
    let ws = Ws::new();
    let token = github_token();
    let evidence = format!("tests pass; token {token}");
    refused(
        &ws,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            &evidence,
        ],
        hidden(&token),
        "GitHub token",
    );
    let title = format!("Rotate {token}");
    let out = refused(
        &ws,
        &["plan", "--add", &title],
        hidden(&token),
        "GitHub token",
    );
    assert!(out.contains("`title`"), "{out}");
    let summary = format!("Stopped; the deploy key is {token}");
    refused(
        &ws,
        &["handoff", "--summary", &summary],
        hidden(&token),
        "GitHub token",
    );
    // Nothing was written, so the workspace still passes its strict check.
    ws.ok(&["check", "--strict"]);
}
