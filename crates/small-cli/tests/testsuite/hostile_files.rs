//! A workspace is untrusted input (it arrives by `git clone`): symbolic links, FIFOs, devices
//! and huge files in it get a clear error in bounded time and memory, never a write outside
//! the workspace, a hang or a runaway read.

use crate::author_support::{bin, Ws};
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run `small` in `root` with a deadline and a 2 GiB address-space limit; a hang or a
/// runaway read fails the test instead of the machine.
fn run_bounded(root: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .env("SMALL_LOCK_TIMEOUT", "5")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = c.spawn().expect("spawn small");
    let start = Instant::now();
    let deadline = Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            assert!(!err.contains("panicked"), "small {args:?} panicked: {err}");
            let code = status
                .code()
                .unwrap_or_else(|| panic!("small {args:?} killed: {status:?}\n{err}"));
            return (code, out, err);
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("small {args:?} hung for {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {}",
        p.display()
    );
}

fn outside_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("outside.txt");
    std::fs::write(&p, text).unwrap();
    (d, p)
}

const ADD: &[&str] = &[
    "progress",
    "add",
    "--task",
    "task-1",
    "--status",
    "in_progress",
    "--evidence",
    "x",
];

#[test]
fn a_linked_append_note_is_never_written_through() {
    let ws = Ws::new();
    let (_d, outside) = outside_file("precious\n");
    std::fs::create_dir_all(ws.root().join(".small-cache")).unwrap();
    symlink(&outside, ws.root().join(".small-cache/append.note")).unwrap();
    let (code, _, err) = run_bounded(ws.root(), ADD);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("append.note") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
}

#[test]
fn a_linked_cache_directory_is_refused() {
    let ws = Ws::new();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), ws.root().join(".small-cache")).unwrap();
    let (code, _, err) = run_bounded(ws.root(), ADD);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains(".small-cache") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn appends_and_rewrites_never_follow_a_linked_progress_log() {
    let ws = Ws::new();
    let (_d, outside) = outside_file(&ws.read("progress.small.yml"));
    let before = std::fs::read(&outside).unwrap();
    std::fs::remove_file(ws.path("progress.small.yml")).unwrap();
    symlink(&outside, ws.path("progress.small.yml")).unwrap();
    for args in [
        ADD,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "x",
        ],
        &["reset", "--yes"],
    ] {
        let (code, _, err) = run_bounded(ws.root(), args);
        assert_ne!(code, 0, "small {args:?} succeeded through a link: {err}");
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert_eq!(
            std::fs::read(&outside).unwrap(),
            before,
            "{args:?} changed the target"
        );
    }
}

#[test]
fn a_linked_small_directory_is_refused() {
    let ws = Ws::new();
    let real = tempfile::tempdir().unwrap();
    let moved = real.path().join("state");
    std::fs::rename(ws.root().join(".small"), &moved).unwrap();
    symlink(&moved, ws.root().join(".small")).unwrap();
    for args in [&["check"][..], ADD, &["run", "snapshot"], &["archive"]] {
        let (code, _, err) = run_bounded(ws.root(), args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
    }
    let (_, out, _) = run_bounded(ws.root(), &["status"]);
    assert!(
        out.contains("symbolic link") && !out.contains("task-1"),
        "{out}"
    );
}

#[test]
fn snapshots_and_archives_never_copy_a_linked_file() {
    let ws = Ws::new();
    let (_d, outside) = outside_file("small_version: \"1.0.0\"\nsecret: outside\n");
    std::fs::remove_file(ws.path("constraints.small.yml")).unwrap();
    symlink(&outside, ws.path("constraints.small.yml")).unwrap();
    for args in [&["run", "snapshot"][..], &["archive"]] {
        let (code, _, err) = run_bounded(ws.root(), args);
        assert_ne!(code, 0, "{args:?}: {err}");
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
    }
    for dir in [".small-runs", ".small-archive"] {
        if !ws.root().join(dir).exists() {
            continue;
        }
        let found = Command::new("grep")
            .args(["-rq", "secret: outside", dir])
            .current_dir(ws.root())
            .status()
            .unwrap();
        assert!(!found.success(), "outside content copied into {dir}");
    }
}

/// Every command that reads the workspace returns promptly when a canonical file, AGENTS.md
/// or the append note is a FIFO.
#[test]
fn fifos_never_hang_any_command() {
    let readers: &[&[&str]] = &[
        &["check"],
        &["validate"],
        &["lint"],
        &["verify"],
        &["status"],
        &["emit"],
        &["doctor"],
        &["plan", "--add", "x"],
        ADD,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "x",
        ],
        &["handoff"],
    ];
    for name in [
        "intent.small.yml",
        "plan.small.yml",
        "progress.small.yml",
        "handoff.small.yml",
    ] {
        let ws = Ws::new();
        std::fs::remove_file(ws.path(name)).unwrap();
        mkfifo(&ws.path(name));
        for args in readers {
            // Returning at all is the point (some commands never need the file, or stop
            // earlier for another reason); `check` reads every file and names the FIFO.
            let (code, out, err) = run_bounded(ws.root(), args);
            if args[0] == "check" {
                assert_ne!(code, 0);
                assert!(format!("{out}{err}").contains("FIFO"), "{name}: {out}{err}");
            }
        }
    }
    // AGENTS.md and the append note.
    let ws = Ws::new();
    mkfifo(&ws.root().join("AGENTS.md"));
    for args in [
        &["agents", "check"][..],
        &["agents", "apply"],
        &["init", "--force"],
    ] {
        let (code, out, err) = run_bounded(ws.root(), args);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            format!("{out}{err}").contains("FIFO"),
            "{args:?}: {out}{err}"
        );
    }
    let ws = Ws::new();
    std::fs::create_dir_all(ws.root().join(".small-cache")).unwrap();
    mkfifo(&ws.root().join(".small-cache/append.note"));
    let (code, _, err) = run_bounded(ws.root(), ADD);
    assert_ne!(code, 0);
    assert!(err.contains("append.note") && err.contains("FIFO"), "{err}");
}

/// `/dev/zero` in place of a canonical file, the journal, AGENTS.md or .gitignore is refused
/// at once (it is a link to a device); as the input of `store artifact put`, reading stops at
/// the input limit. The child runs under a 2 GiB address-space limit.
#[test]
fn dev_zero_is_never_read_without_bound() {
    for rel in [
        ".small/plan.small.yml",
        ".small-cache/txn.journal",
        "AGENTS.md",
        ".gitignore",
    ] {
        let ws = Ws::new();
        let p = ws.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&p);
        symlink("/dev/zero", &p).unwrap();
        let args: &[&str] = match rel {
            "AGENTS.md" => &["agents", "check"],
            ".gitignore" => &["init", "--force"],
            ".small-cache/txn.journal" => ADD,
            _ => &["check"],
        };
        let (code, out, err) = run_bounded(ws.root(), args);
        assert_ne!(code, 0, "{rel}: {args:?}\n{out}");
        let all = format!("{out}{err}");
        assert!(
            all.contains("symbolic link") || all.contains("device"),
            "{rel}: {all}"
        );
    }
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("s.db");
    let store = db.display().to_string();
    let (code, _, err) = run_bounded(
        d.path(),
        &["store", "artifact", "put", "--store", &store, "/dev/zero"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("larger than the limit"), "{err}");
}

/// A rewritten file keeps the mode of the regular file it replaces; a new file gets 0644
/// under the umask; a link is never replaced by a file with its target's mode.
#[test]
fn rewritten_files_keep_their_mode() {
    let ws = Ws::new();
    let plan = ws.path("plan.small.yml");
    std::fs::set_permissions(&plan, std::fs::Permissions::from_mode(0o600)).unwrap();
    let handoff = ws.path("handoff.small.yml");
    std::fs::set_permissions(&handoff, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, _, err) = run_bounded(ws.root(), &["reset", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&plan), 0o600);
    assert_eq!(mode(&handoff), 0o640);

    // A fresh workspace: every file is 0644 at most (the test process umask is 022 or
    // stricter), never group- or world-writable.
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = run_bounded(d.path(), &["init", "--intent", "x"]);
    assert_eq!(code, 0, "{err}");
    for e in std::fs::read_dir(d.path().join(".small")).unwrap() {
        let m = mode(&e.unwrap().path());
        assert_eq!(m & 0o022, 0, "{m:o}");
    }

    // reset over a linked world-writable plan: refused, no 0666 file appears.
    let ws = Ws::new();
    let (_o, outside) = outside_file(&ws.read("plan.small.yml"));
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::remove_file(ws.path("plan.small.yml")).unwrap();
    symlink(&outside, ws.path("plan.small.yml")).unwrap();
    let (code, _, err) = run_bounded(ws.root(), &["reset", "--yes"]);
    assert_ne!(code, 0);
    assert!(err.contains("symbolic link"), "{err}");
    assert!(std::fs::symlink_metadata(ws.path("plan.small.yml"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn agents_md_linked_outside_the_workspace_is_not_written() {
    let ws = Ws::new();
    let (_d, outside) = outside_file("# mine\n");
    symlink(&outside, ws.root().join("AGENTS.md")).unwrap();
    let (code, _, err) = run_bounded(ws.root(), &["agents", "apply", "--agents-mode", "append"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("outside"), "{err}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "# mine\n");
}

#[test]
fn store_import_skips_links_and_fifos_without_hanging() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in");
    std::fs::create_dir(&input).unwrap();
    symlink(".", input.join("loop")).unwrap();
    mkfifo(&input.join("pipe.json"));
    let (_o, outside) = outside_file("{}");
    symlink(&outside, input.join("linked.json")).unwrap();
    let store = d.path().join("s.db").display().to_string();
    let (code, out, err) = run_bounded(
        d.path(),
        &[
            "store",
            "import",
            "--store",
            &store,
            input.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("pipe.json") && err.contains("linked.json"),
        "{err}"
    );
}

/// Evidence that carries terminal escapes is stored exactly, printed escaped by every human
/// view, and exact in `--json`.
#[test]
fn terminal_escapes_in_the_log_are_printed_escaped() {
    let ws = Ws::new();
    let evil = "done \x1b]0;PWNED\x07\x1b[2J\u{9b}31m";
    let (code, _, err) = run_bounded(
        ws.root(),
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            evil,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_bounded(ws.root(), &["status"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains('\x1b') && !out.contains('\x07') && !out.contains('\u{9b}'),
        "{out:?}"
    );
    assert!(out.contains("\\x1b]0;PWNED\\x07\\x1b[2J"), "{out}");
    let (_, json, _) = run_bounded(ws.root(), &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v.to_string().contains("PWNED"));
    assert!(json.contains("\\u001b]0;PWNED\\u0007\\u001b[2J"), "{json}");
    // A diagnostic quoting a file line escapes it too.
    std::fs::write(ws.path("plan.small.yml"), "tasks: [\x1b[2J\n").unwrap();
    let (code, out, err) = run_bounded(ws.root(), &["check"]);
    assert_ne!(code, 0);
    assert!(!format!("{out}{err}").contains('\x1b'), "{out}{err}");
}

/// What a killed `small` left in `.small-runs/` and `.small-archive/` (staged directories,
/// directories moved aside, temporary index files) is removed by the next snapshot or
/// archive once its writer is gone; a live writer's entries are left alone.
#[test]
fn leftovers_of_killed_writers_are_cleaned() {
    let ws = Ws::new();
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let dead = child.id();
    let live = std::process::id();
    for (dir, cmd) in [
        (".small-runs", &["run", "snapshot"][..]),
        (".small-archive", &["archive"]),
    ] {
        let d = ws.root().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let leftovers = [
            format!(".tmp-snapshot-{dead}-Ab12Cd"),
            format!(".tmp-archive-{dead}-Ef34Gh"),
            format!(".replaced-{}-{dead}-123456-0", "a".repeat(64)),
        ];
        for name in &leftovers {
            std::fs::create_dir(d.join(name)).unwrap();
            let f = d.join(name).join("plan.small.yml");
            std::fs::write(&f, "x").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        let tmp_index = format!(".index.small.yml.small-tmp-{dead}-0");
        std::fs::write(d.join(&tmp_index), "x").unwrap();
        let busy = format!(".tmp-snapshot-{live}-Busy00");
        std::fs::create_dir(d.join(&busy)).unwrap();
        let (code, _, err) = run_bounded(ws.root(), cmd);
        assert_eq!(code, 0, "{cmd:?}: {err}");
        let names: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for gone in leftovers.iter().chain([&tmp_index]) {
            assert!(
                !names.contains(gone),
                "{dir}: {gone} left behind: {names:?}"
            );
        }
        assert!(
            names.contains(&busy),
            "{dir}: a live writer's directory was removed"
        );
    }
}
