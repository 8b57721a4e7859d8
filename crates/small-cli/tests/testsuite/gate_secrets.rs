//! Secrets in a workspace: every credential of the labelled corpus is reported by lint,
//! verify and check, and none is ever printed back (human, `--ci` or `--json` output).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_small");
const TRUE_POSITIVES: &str =
    include_str!("../../../small-core/src/tests/secrets_corpus/true_positives.txt");

const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Ship it\"\nscope:\n  include: [\"src/**\"]\n  exclude: []\nsuccess_criteria: [\"works\"]\n";
const CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: \"Be kind\"\n    severity: \"warn\"\n";
const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Next: a\"\nresume:\n  current_task_id: \"a\"\n  next_steps: [\"do a\"]\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: \"auto\"\n";
const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\n";

/// (text, secret) of every true positive, marks removed.
fn corpus() -> Vec<(String, String)> {
    TRUE_POSITIVES
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let text = l.split_once('\t').unwrap().1;
            let text = text.replace(['⟨', '⟩'], "").replace("\\n", "\n");
            let secret = text.split_once('«').unwrap().1.split_once('»').unwrap().0;
            let secret = secret.to_string();
            (text.replace(['«', '»'], ""), secret)
        })
        .collect()
}

fn small(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap(), text)
}

/// A workspace whose progress log holds every corpus secret, in turn in `notes`,
/// `command` and `evidence`, plus a secret-named key in the plan.
fn leaky_workspace(cases: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join(".small");
    std::fs::create_dir(&small).unwrap();
    let mut progress = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    for (i, (text, _)) in cases.iter().enumerate() {
        let field = ["notes", "command", "evidence"][i % 3];
        let quoted = serde_json::to_string(text).unwrap();
        progress.push_str(&format!(
            "  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:00:00.{:06}Z\"\n    evidence: \"ok\"\n    {field}: {quoted}\n",
            i + 1
        ));
    }
    let progress = progress.replace("    evidence: \"ok\"\n    evidence:", "    evidence:");
    let plan = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"First\"\n    status: \"in_progress\"\n    db_password: Hq7vL2mZ\n";
    for (name, text) in [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", plan),
        ("progress.small.yml", &progress),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ] {
        std::fs::write(small.join(name), text).unwrap();
    }
    dir
}

fn assert_no_secret(out: &str, cases: &[(String, String)], what: &str) {
    for (_, secret) in cases {
        let tail = &secret[secret.len() / 2..];
        assert!(
            !out.contains(tail),
            "{what} printed a secret ({tail}):\n{out}"
        );
    }
    assert!(
        !out.contains("Hq7vL2mZ"),
        "{what} printed the plan password:\n{out}"
    );
}

#[test]
fn every_secret_is_reported_and_none_is_printed() {
    let cases = corpus();
    let ws = leaky_workspace(&cases);
    let n = cases.len() + 1;
    for (args, code) in [
        (&["lint"][..], 0),
        (&["lint", "--strict"], 1),
        (&["verify", "--strict"], 1),
        (&["check", "--strict"], 1),
        (&["check", "--strict", "--ci"], 1),
        (&["check", "--strict", "--json"], 1),
        (&["lint", "--strict", "--json"], 1),
        (&["verify", "--strict", "--json"], 1),
    ] {
        let (got, out) = small(ws.path(), args);
        assert_eq!(got, code, "small {args:?}:\n{out}");
        assert_no_secret(&out, &cases, &format!("small {args:?}"));
        // A JSON report names each one twice: its line under `errors`, its object under
        // `diagnostics`.
        let per_secret = if args.contains(&"--json") { 2 } else { 1 };
        assert_eq!(
            out.matches("INV1").count(),
            n * per_secret,
            "small {args:?} should report each secret once:\n{out}"
        );
        if args == ["check", "--strict", "--json"] {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let lint = &v["lint"]["diagnostics"];
            let first = lint
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["code"] == "INV1")
                .unwrap();
            assert!(first["secret"]["kind"].is_string(), "{first}");
            assert!(first["secret"]["masked"]
                .as_str()
                .unwrap()
                .contains("chars redacted]"));
        }
    }
    // The human report names the format and shows the mask under a caret.
    let (_, out) = small(ws.path(), &["lint", "--strict"]);
    assert!(
        out.contains("GitHub token `ghp_…[36 chars redacted]`"),
        "{out}"
    );
}

#[test]
fn long_lines_are_cut_in_the_snippet() {
    let cases: Vec<(String, String)> = Vec::new();
    let ws = leaky_workspace(&cases);
    let long = format!(
        "cargo test {} && curl http://ci.example.com/x",
        "--features x ".repeat(400)
    );
    let progress = format!(
        "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:00:00.000001Z\"\n    evidence: \"ok\"\n    link: {}\n",
        serde_json::to_string(&long).unwrap()
    );
    std::fs::write(ws.path().join(".small/progress.small.yml"), progress).unwrap();
    let (_, out) = small(ws.path(), &["lint"]);
    assert!(out.contains("LINK"), "{out}");
    let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
    // The message quotes the URL; the snippet line is cut to about 120 characters.
    let snippet = out
        .lines()
        .find(|l| l.starts_with("7 |") && l.contains("link"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(snippet.contains("..."), "{snippet}");
    assert!(snippet.chars().count() < 140, "{snippet}");
    assert!(widest < 400, "{out}");
}

#[test]
fn status_masks_a_secret_in_recent_entries() {
    let cases = corpus();
    let ws = leaky_workspace(&cases[..6]);
    for args in [&["status"][..], &["status", "--json"]] {
        let (code, out) = small(ws.path(), args);
        assert_eq!(code, 0, "{out}");
        assert_no_secret(&out, &cases[..6], "small status");
    }
}
