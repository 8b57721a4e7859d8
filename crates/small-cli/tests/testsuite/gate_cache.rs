//! The gates' cache of progress checks (`.small-cache/`): a gate after an append answers
//! exactly as a full check does, and a damaged cache or a changed byte only means a full check.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_small");

const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Ship it\"\nscope:\n  include: [\"src/**\"]\n  exclude: []\nsuccess_criteria: [\"works\"]\n";
const CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: \"Be kind\"\n    severity: \"warn\"\n";
const PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"First\"\n    status: \"completed\"\n  - id: \"b\"\n    title: \"Second\"\n    status: \"pending\"\n";
const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Next: b\"\nresume:\n  current_task_id: \"b\"\n  next_steps: [\"do b\"]\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: \"auto\"\n";
const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\n";

fn entry(i: usize, evidence: &str) -> String {
    format!(
        "  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:{:02}:{:02}.000001Z\"\n    status: \"completed\"\n    evidence: \"{evidence} {i}\"\n",
        i / 60,
        i % 60
    )
}

fn workspace(entries: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join(".small");
    std::fs::create_dir(&small).unwrap();
    let mut log = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    for i in 0..entries {
        log.push_str(&entry(i, "tests pass"));
    }
    for (name, text) in [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", PLAN),
        ("progress.small.yml", log.as_str()),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ] {
        std::fs::write(small.join(name), text).unwrap();
    }
    dir
}

fn small(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn cache_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(".small-cache"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("progress-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `progress add` of a completed entry for task `a`.
fn add_completed(dir: &Path, evidence: &str) {
    let args = [
        "progress",
        "add",
        "--task",
        "a",
        "--status",
        "completed",
        "--evidence",
    ];
    let mut args = args.to_vec();
    args.push(evidence);
    let (code, _, err) = small(dir, &args);
    assert_eq!(code, 0, "{err}");
}

/// Every gate, with the cache and without: the same output and exit code.
fn assert_gates_agree(dir: &Path) {
    for args in [
        &["check", "--strict", "--json"][..],
        &["check", "--json"],
        &["lint", "--strict"],
        &["verify", "--strict"],
        &["validate", "--json"],
    ] {
        let cached = small(dir, args);
        let mut full_args = args.to_vec();
        full_args.push("--no-cache");
        let full = small(dir, &full_args);
        assert_eq!(cached, full, "{args:?}");
    }
}

#[test]
fn gates_after_appends_answer_as_a_full_check() {
    let ws = workspace(40);
    let dir = ws.path();
    let (code, _, _) = small(dir, &["check", "--strict", "--json", "--no-cache"]);
    assert_eq!(code, 0);
    assert!(cache_files(dir).is_empty(), "--no-cache writes no cache");
    assert_gates_agree(dir);
    assert!(!cache_files(dir).is_empty());
    assert!(dir.join(".small-cache/.gitignore").is_file());
    // An append with a problem in it (a secret-looking value, an insecure link).
    add_completed(dir, "see http://example.com/report");
    assert_gates_agree(dir);
    let (code, out, _) = small(dir, &["check", "--strict", "--json"]);
    assert_eq!(code, 1);
    assert!(out.contains("LINK"), "{out}");
}

#[test]
fn a_changed_byte_or_a_damaged_cache_means_a_full_check() {
    let ws = workspace(30);
    let dir = ws.path();
    assert_gates_agree(dir);
    // Change one byte of an early entry (same length): the cache must not vouch for it.
    let path = dir.join(".small/progress.small.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen("2026-01-01T10:00:03", "2026-01-01T10:00:09", 1);
    assert_ne!(changed, text);
    std::fs::write(&path, &changed).unwrap();
    let (code, out, _) = small(dir, &["check", "--strict", "--json"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("TS"), "{out}");
    assert_gates_agree(dir);
    // Damage every cache file: still the full answer.
    for name in cache_files(dir) {
        let p = dir.join(".small-cache").join(name);
        let mut bytes = std::fs::read(&p).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x01;
        std::fs::write(&p, bytes).unwrap();
    }
    assert_gates_agree(dir);
    // A cache that is not a file at all.
    std::fs::remove_dir_all(dir.join(".small-cache")).unwrap();
    std::fs::write(dir.join(".small-cache"), "not a directory").unwrap();
    let (code, _, err) = small(dir, &["check", "--strict", "--json"]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn a_log_checked_from_its_tail_still_shows_snippets_of_old_entries() {
    let ws = workspace(30);
    let dir = ws.path();
    // An old entry out of order: its diagnostic comes from the cache on later runs, and its
    // snippet from the file, read again only to show it.
    let path = dir.join(".small/progress.small.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("2026-01-01T10:00:03", "2026-01-01T10:00:01", 1),
    )
    .unwrap();
    let full = small(dir, &["check", "--strict", "--no-cache"]);
    assert_eq!(full.0, 1, "{full:?}");
    assert!(
        full.2.contains("timestamp: \"2026-01-01T10:00:01")
            || full.1.contains("timestamp: \"2026-01-01T10:00:01"),
        "{full:?}"
    );
    let first = small(dir, &["check", "--strict"]);
    assert_eq!(first, full);
    add_completed(dir, "ok");
    let resumed = small(dir, &["check", "--strict"]);
    let full = small(dir, &["check", "--strict", "--no-cache"]);
    assert_eq!(resumed, full);
}

/// How many stats the carry note's chain holds (0 without a note).
fn carried(dir: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(dir.join(".small-cache/log-carry.v1")) else {
        return 0;
    };
    let body = text.split_once('\n').map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["chain"].as_array().map_or(0, Vec::len)
}

/// Past the racy margin (200 ms) of everything written so far.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(300));
}

fn check_strict(dir: &Path) -> (i32, String, String) {
    small(dir, &["check", "--strict", "--json"])
}

fn check_strict_full(dir: &Path) -> (i32, String, String) {
    small(dir, &["check", "--strict", "--json", "--no-cache"])
}

#[test]
fn a_check_after_progress_add_trusts_the_carried_stat_and_answers_as_a_full_check() {
    let ws = workspace(40);
    let dir = ws.path();
    settle();
    let first = check_strict(dir);
    assert_eq!(first.0, 0, "{first:?}");
    assert_eq!(carried(dir), 1, "a settled log's stat starts the chain");
    // An entry with a problem, appended by `progress add`: carried, and still checked.
    add_completed(dir, "see http://example.com/report");
    assert_eq!(carried(dir), 2, "the append is carried");
    let resumed = check_strict(dir);
    assert_eq!(resumed, check_strict_full(dir));
    assert_eq!(resumed.0, 1);
    assert!(resumed.1.contains("LINK"), "{resumed:?}");
    add_completed(dir, "fine");
    assert_eq!(carried(dir), 3);
    assert_eq!(check_strict(dir), check_strict_full(dir));
    assert_gates_agree(dir);
}

#[test]
fn a_young_log_starts_no_chain() {
    let ws = workspace(20);
    let dir = ws.path();
    settle();
    // Stamped later than the check starts (as a change within the racy margin is): its
    // stat is not recorded, nothing is carried.
    let path = dir.join(".small/progress.small.yml");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(later))
        .unwrap();
    let first = check_strict(dir);
    assert_eq!(first.0, 0, "{first:?}");
    assert_eq!(carried(dir), 0);
    add_completed(dir, "ok");
    assert_eq!(carried(dir), 0);
    assert_eq!(check_strict(dir), check_strict_full(dir));
}

#[test]
fn an_edit_after_a_carried_append_is_found_by_the_resumed_check() {
    for same_length in [true, false] {
        let ws = workspace(30);
        let dir = ws.path();
        settle();
        assert_eq!(check_strict(dir).0, 0);
        add_completed(dir, "ok");
        assert_eq!(carried(dir), 2);
        // An early entry edited in place: out of order now. Same length (a later time
        // stamps it) or not.
        let path = dir.join(".small/progress.small.yml");
        let text = std::fs::read_to_string(&path).unwrap();
        let changed = if same_length {
            text.replacen("2026-01-01T10:00:03", "2026-01-01T10:00:09", 1)
        } else {
            text.replacen("2026-01-01T10:00:03", "2026-01-01T10:00:09", 1)
                .replacen("tests pass 3\"", "tests pass 3, longer\"", 1)
        };
        assert_ne!(changed, text);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, changed.as_bytes()))
            .unwrap();
        let resumed = check_strict(dir);
        assert_eq!(resumed.0, 1, "{resumed:?}");
        assert!(resumed.1.contains("\"TS"), "{resumed:?}");
        assert_eq!(
            resumed,
            check_strict_full(dir),
            "same length: {same_length}"
        );
    }
}

#[test]
fn an_entry_appended_by_hand_after_a_carried_append_is_checked() {
    let ws = workspace(30);
    let dir = ws.path();
    settle();
    assert_eq!(check_strict(dir).0, 0);
    add_completed(dir, "ok");
    assert_eq!(carried(dir), 2);
    // A second entry, out of order, that the note does not cover.
    let path = dir.join(".small/progress.small.yml");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, entry(1, "late").as_bytes()).unwrap();
    drop(f);
    let resumed = check_strict(dir);
    assert_eq!(resumed.0, 1, "{resumed:?}");
    assert!(resumed.1.contains("\"TS"), "{resumed:?}");
    assert_eq!(resumed, check_strict_full(dir));
    // `progress add` after it carries nothing more: the chain does not end at the log.
    add_completed(dir, "after");
    assert_eq!(carried(dir), 2);
    assert_eq!(check_strict(dir), check_strict_full(dir));
}
