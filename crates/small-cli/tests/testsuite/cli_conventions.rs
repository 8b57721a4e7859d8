//! The conventions every command shares: help, version, `--flag=BOOL`, `--quiet`, colour,
//! completions, man pages, durations and sizes, and the environment settings.

use crate::tools_support::{init, small};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command as StdCommand;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A workspace whose lint has one warning (an http:// link) and no error.
fn workspace_with_a_warning(dir: &Path) {
    init(dir);
    let log = dir.join(".small/progress.small.yml");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(
        "  - task_id: \"meta/ci\"\n    timestamp: \"2030-03-01T10:30:00.250000Z\"\n    status: \"completed\"\n    evidence: \"ran ci\"\n    link: \"http://ci.example.com/run/7\"\n",
    );
    std::fs::write(&log, text).unwrap();
}

/// Every command path (`["run", "list"]`, ...), read from the help of each level.
pub(crate) fn command_paths() -> Vec<Vec<String>> {
    fn walk(prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let o = small().args(&prefix).arg("--help").output().unwrap();
        assert!(o.status.success(), "small {prefix:?} --help");
        let help = stdout(&o);
        let mut in_commands = false;
        for line in help.lines() {
            if line.starts_with("Commands:") {
                in_commands = true;
                continue;
            }
            if in_commands {
                if !line.starts_with("  ") {
                    break;
                }
                let name = line.split_whitespace().next().unwrap_or("");
                if name.is_empty() || name == "help" || !line.starts_with("  ") {
                    continue;
                }
                // Continuation lines of a wrapped description are indented further.
                if line.starts_with("   ") {
                    continue;
                }
                let mut p = prefix.clone();
                p.push(name.to_string());
                out.push(p.clone());
                walk(p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &mut out);
    assert!(out.len() > 40, "found only {} commands", out.len());
    out
}

#[test]
fn bare_small_prints_help_on_stdout_and_succeeds() {
    let o = small().output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Usage: small"), "{}", stdout(&o));
    assert!(stdout(&o).contains("Commands:"));
    assert_eq!(stderr(&o), "");
}

#[test]
fn version_flags_follow_clap_and_the_reference() {
    let expected = stdout(&small().arg("version").output().unwrap());
    assert!(expected.starts_with("small "), "{expected}");
    for flag in ["-V", "--version", "-v"] {
        let o = small().arg(flag).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{flag}");
        assert_eq!(stdout(&o), expected, "{flag}");
    }
    let help = stdout(&small().arg("--help").output().unwrap());
    assert!(help.contains("-V, --version"), "{help}");
}

#[test]
fn boolean_flags_take_true_or_false() {
    let d = tempfile::tempdir().unwrap();
    workspace_with_a_warning(d.path());
    let lint = |flag: &str| {
        small()
            .args(["lint", flag, "--dir"])
            .arg(d.path())
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(lint("--strict"), Some(1));
    assert_eq!(lint("--strict=true"), Some(1));
    assert_eq!(lint("--strict=false"), Some(0));
    assert_eq!(lint("--strict=1"), Some(1));
    assert_eq!(lint("--strict=FALSE"), Some(0));
    let o = small()
        .args(["lint", "--strict=maybe", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("maybe"), "{}", stderr(&o));
    // Global flags too.
    let o = small().args(["version", "--quiet=true"]).output().unwrap();
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), String::new()));
    let o = small().args(["version", "--quiet=false"]).output().unwrap();
    assert!(stdout(&o).starts_with("small "));
}

/// A command line clap cannot parse still answers a caller that asked for JSON: the error
/// document on stdout besides clap's own message on stderr, exit 2. Help stays help.
#[test]
fn a_command_line_error_with_json_prints_the_error_document() {
    let d = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| small().args(args).current_dir(d.path()).output().unwrap();
    let missing_flag: [&[&str]; 3] = [
        &["mode", "set", "solo", "--expect-state", "X", "--json"],
        &["reconcile", "--json=true"],
        &[
            "evidence",
            "declare-unavailable",
            "--task",
            "task-1",
            "--json",
        ],
    ];
    for args in missing_flag {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["error"]["code"], "invalid_request", "{args:?}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("the following required arguments were not provided: --"),
            "{message}"
        );
        assert!(stderr(&o).contains("Usage: small"), "{}", stderr(&o));
    }
    for args in [&["reconcile", "--json=false"][..], &["reconcile"]] {
        let o = run(args);
        assert_eq!((o.status.code(), stdout(&o)), (Some(2), String::new()));
    }
    let o = run(&["status", "--json", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Usage: small status"), "{}", stdout(&o));
}

#[test]
fn every_boolean_flag_of_every_command_takes_a_value() {
    // In help, a flag that takes no value shows as `--name` alone; every boolean flag must
    // show `--name[=<BOOL>]`. Only --help and --version take no value.
    for path in command_paths() {
        let o = small().args(&path).arg("--help").output().unwrap();
        let help = stdout(&o);
        let options = help.split("\nOptions:\n").nth(1).unwrap_or("");
        for line in options.lines() {
            // Argument lines are indented by 2 (`  -f, --force`) or 6 (`      --strict`).
            let t = line.trim_start();
            let indent = line.len() - t.len();
            if !(indent == 2 || indent == 6) || !t.starts_with('-') {
                continue;
            }
            let flag = t
                .split([' ', ','])
                .find(|w| w.starts_with("--"))
                .unwrap_or("");
            if flag.is_empty() || flag == "--help" || flag == "--version" {
                continue;
            }
            let takes_value = t.contains('<');
            assert!(
                takes_value,
                "small {} {flag}: a boolean flag that does not accept =true|false",
                path.join(" ")
            );
        }
    }
}

#[test]
fn quiet_prints_nothing_but_errors() {
    let d = tempfile::tempdir().unwrap();
    workspace_with_a_warning(d.path());
    // Without --quiet: the warning (stderr) and the summary (stdout).
    let o = small()
        .args(["lint", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(stderr(&o).contains("warning[LINK]"), "{}", stderr(&o));
    assert!(!stdout(&o).is_empty());
    // With --quiet: nothing at all.
    for cmd in [
        &["lint"][..],
        &["check"],
        &["verify"],
        &["validate"],
        &["status"],
    ] {
        let o = small()
            .args(cmd)
            .args(["--quiet", "--dir"])
            .arg(d.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{cmd:?}");
        assert_eq!(
            (stdout(&o), stderr(&o)),
            (String::new(), String::new()),
            "{cmd:?}"
        );
    }
    // Errors still show, without the warnings beside them.
    let o = small()
        .args(["lint", "--strict", "--quiet", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("error[LINK]"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning["), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
}

fn lint_stderr(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = small();
    c.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env_remove("CI");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c
        .args(["lint", "--strict", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    stderr(&o)
}

#[test]
fn color_flag_and_environment() {
    let d = tempfile::tempdir().unwrap();
    workspace_with_a_warning(d.path());
    let esc = |s: &str| s.contains('\x1b');
    // Into a pipe: no colour unless forced.
    assert!(!esc(&lint_stderr(d.path(), &[], &[])));
    assert!(esc(&lint_stderr(d.path(), &["--color", "always"], &[])));
    assert!(esc(&lint_stderr(
        d.path(),
        &["--color=always"],
        &[("CI", "true")]
    )));
    assert!(!esc(&lint_stderr(
        d.path(),
        &["--color", "never"],
        &[("CLICOLOR_FORCE", "1")]
    )));
    assert!(esc(&lint_stderr(d.path(), &[], &[("CLICOLOR_FORCE", "1")])));
    assert!(!esc(&lint_stderr(
        d.path(),
        &[],
        &[("CLICOLOR_FORCE", "0")]
    )));
    assert!(!esc(&lint_stderr(
        d.path(),
        &[],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    )));
    assert!(!esc(&lint_stderr(
        d.path(),
        &["--no-color", "--color", "always"],
        &[]
    )));
    let o = small()
        .args(["lint", "--color", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Runs `small lint --strict` in a pseudo-terminal (util-linux `script`) and returns what it
/// printed there.
fn in_terminal(dir: &Path, env: &[(&str, &str)], extra: &str) -> String {
    let bin = assert_cmd::cargo::cargo_bin("small");
    let mut c = StdCommand::new("script");
    c.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env_remove("CI")
        .env_remove("SMALL_PROGRESS_MODE");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c
        .args(["-qec"])
        .arg(format!(
            "'{}' lint --strict {extra} --dir '{}'",
            bin.display(),
            dir.display()
        ))
        .arg("/dev/null")
        .output()
        .expect("`script` (util-linux) runs the command in a pseudo-terminal");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn in_a_terminal_colour_is_on_unless_ci_or_no_color() {
    let d = tempfile::tempdir().unwrap();
    workspace_with_a_warning(d.path());
    let esc = |s: &str| s.contains('\x1b');
    let plain = in_terminal(d.path(), &[], "");
    assert!(plain.contains("error[LINK]"), "{plain}");
    assert!(esc(&plain), "a terminal gets colour: {plain:?}");
    assert!(!esc(&in_terminal(d.path(), &[("CI", "true")], "")));
    assert!(!esc(&in_terminal(d.path(), &[("CI", "1")], "")));
    assert!(esc(&in_terminal(d.path(), &[("CI", "")], "")));
    assert!(!esc(&in_terminal(d.path(), &[("NO_COLOR", "1")], "")));
    assert!(!esc(&in_terminal(d.path(), &[], "--no-color")));
    assert!(!esc(&in_terminal(d.path(), &[], "--color never")));
}

#[test]
fn completion_without_descriptions() {
    for shell in ["zsh", "fish"] {
        let with = stdout(&small().args(["completion", shell]).output().unwrap());
        let without = stdout(
            &small()
                .args(["completion", shell, "--no-descriptions"])
                .output()
                .unwrap(),
        );
        assert!(with.contains("Print nothing but errors"), "{shell}");
        assert!(with.contains("Print help"), "{shell}");
        assert!(!without.contains("Print nothing but errors"), "{shell}");
        assert!(!without.contains("Print help"), "{shell}");
        assert!(!without.contains("Validate"), "{shell}");
        // The commands and flags are all still there.
        let flag = |f: &str| {
            if shell == "fish" {
                format!("-l {f}")
            } else {
                format!("--{f}")
            }
        };
        for word in [
            "validate".to_string(),
            flag("strict"),
            flag("quiet"),
            "snapshot".into(),
        ] {
            assert!(without.contains(&word), "{shell}: {word}");
        }
    }
}

#[test]
fn man_pages_for_every_command() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("man/man1");
    let o = small().arg("man").arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pages: BTreeSet<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.contains("small.1"));
    let mut expected = BTreeSet::from(["small.1".to_string()]);
    for path in command_paths() {
        let name = format!("small-{}.1", path.join("-"));
        let text = std::fs::read_to_string(out.join(&name))
            .unwrap_or_else(|e| panic!("no page {name}: {e}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{name}");
        assert!(
            text.contains(&format!(".TH small-{} 1", path.join("-"))),
            "{name}"
        );
        expected.insert(name);
    }
    assert_eq!(pages, expected);
    // One page on stdout.
    let o = small().args(["man", "run", "list"]).output().unwrap();
    assert!(stdout(&o).contains(".TH small-run-list 1"));
    let o = small().args(["man", "no-such-command"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn reset_with_no_answer_exits_1_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let plan = std::fs::read(d.path().join(".small/plan.small.yml")).unwrap();
    let o = small()
        .args(["reset", "--dir"])
        .arg(d.path())
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--yes"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(d.path().join(".small/plan.small.yml")).unwrap(),
        plan
    );
    // A "no" is still a clean cancel.
    let o = small()
        .args(["reset", "--dir"])
        .arg(d.path())
        .write_stdin("n\n")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("cancelled"));
}

#[test]
fn doctor_prints_problems_on_stderr() {
    // No workspace: the error goes to stderr; still advice, so exit 0.
    let d = tempfile::tempdir().unwrap();
    let o = small()
        .args(["doctor", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("SMALL doctor"));
    assert!(!stdout(&o).contains("[error]"), "{}", stdout(&o));
    assert!(stderr(&o).contains("[error] workspace"), "{}", stderr(&o));
    assert!(stderr(&o).contains("Summary: 1 error"), "{}", stderr(&o));
    // A healthy workspace: everything on stdout.
    init(d.path());
    let o = small()
        .args(["doctor", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(stdout(&o).contains("[ok]"));
    assert!(stdout(&o).contains("Summary: all checks passed"));
    assert_eq!(stderr(&o), "");
    // A warning goes to stderr, and --quiet hides it.
    std::fs::create_dir_all(d.path().join(".small/runs")).unwrap();
    let o = small()
        .args(["doctor", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(stderr(&o).contains("[warn]"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("[warn]"));
    let o = small()
        .args(["doctor", "--quiet", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!((stdout(&o), stderr(&o)), (String::new(), String::new()));
}

#[test]
fn emit_uses_the_reference_keys() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let root = d.path().canonicalize().unwrap();
    let o = small()
        .args(["emit", "--check", "--dir"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let root_s = root.display().to_string();
    assert_eq!(v["paths"]["workspace"], root_s.as_str());
    assert_eq!(v["paths"]["root"], root_s.as_str());
    assert_eq!(
        v["paths"]["smallDir"],
        root.join(".small").display().to_string().as_str()
    );
    assert_eq!(v["enforcement"]["exitCode"], 0);
    assert_eq!(v["enforcement"]["exit_code"], 0);
    assert!(v["enforcement"].get("failures").is_none());
    // Failing: `failures` lists one string per error.
    let intent = root.join(".small/intent.small.yml");
    let text = std::fs::read_to_string(&intent).unwrap();
    std::fs::write(
        &intent,
        text.replace("owner: \"human\"", "owner: \"nobody\""),
    )
    .unwrap();
    let o = small()
        .args(["emit", "--check", "--dir"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["enforcement"]["exitCode"], 1);
    let failures = v["enforcement"]["failures"].as_array().expect("failures");
    assert!(!failures.is_empty());
    assert!(failures.iter().all(|f| f.is_string()));
    assert!(
        failures[0].as_str().unwrap().contains("intent.small.yml"),
        "{failures:?}"
    );
}

#[test]
fn agents_check_json_always_has_block_span() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), "# Notes\n").unwrap();
    let o = small()
        .args(["agents", "check", "--format", "json", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hasBlock"], false);
    assert_eq!(v["blockSpan"], serde_json::json!([0, 0]));
    for key in ["hasFile", "blockValid", "hasDrift", "filePath"] {
        assert!(v.get(key).is_some(), "{key}");
    }
}

#[test]
fn a_bad_progress_mode_is_refused_with_the_valid_values() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    for args in [&["status"][..], &["apply", "--cmd", "true"]] {
        let o = small()
            .args(args)
            .arg("--dir")
            .arg(d.path())
            .env("SMALL_PROGRESS_MODE", "audti")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("audti") && err.contains("signal") && err.contains("audit"),
            "{err}"
        );
    }
    for ok in ["audit", "AUDIT", "signal", ""] {
        let o = small()
            .args(["status", "--json", "--dir"])
            .arg(d.path())
            .env("SMALL_PROGRESS_MODE", ok)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{ok:?}: {}", stderr(&o));
    }
}

#[test]
fn apply_auto_progress_help_says_the_output_is_hidden() {
    let help = stdout(&small().args(["apply", "--help"]).output().unwrap());
    let at = help.find("--auto-progress").unwrap();
    let text: String = help[at..].chars().take(400).collect();
    assert!(text.contains("not shown"), "{text}");
}

/// Starts `small serve ARGS` and returns its first stdout line (or the failure).
fn serve_first_line(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Result<String, String> {
    use std::io::{BufRead, BufReader};
    let bin = assert_cmd::cargo::cargo_bin("small");
    let mut c = StdCommand::new(bin);
    c.arg("serve")
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .current_dir(cwd)
        .env_remove("SMALL_STORE")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    if line.is_empty() {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    } else {
        Ok(line)
    }
}

#[test]
fn serve_takes_durations_and_sizes_in_the_usual_spellings() {
    let d = tempfile::tempdir().unwrap();
    for (flag, value) in [
        ("--request-timeout", "1m"),
        ("--request-timeout", "1h 30m"),
        ("--request-timeout", "500ms"),
        ("--request-timeout", "45"),
        ("--body-limit", "2MiB"),
        ("--body-limit", "512KiB"),
        ("--body-limit", "1MB"),
    ] {
        let line = serve_first_line(&[flag, value, "--store", "memory"], &[], d.path())
            .unwrap_or_else(|e| panic!("{flag} {value}: {e}"));
        assert!(line.starts_with("listening on http://"), "{line}");
    }
    for (flag, value) in [
        ("--request-timeout", "soon"),
        ("--request-timeout", "0s"),
        ("--body-limit", "lots"),
        ("--body-limit", "0"),
    ] {
        let o = small()
            .args(["serve", "--store", "memory", flag, value])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&o).contains(value), "{}", stderr(&o));
    }
}

#[test]
fn serve_honours_small_store() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("from-env/store.db");
    let line = serve_first_line(&[], &[("SMALL_STORE", db.to_str().unwrap())], d.path()).unwrap();
    assert!(line.starts_with("listening on"), "{line}");
    assert!(db.is_file(), "the store named by SMALL_STORE is used");
    assert!(!d.path().join(".small-cache/store.db").exists());
    let help = stdout(&small().args(["serve", "--help"]).output().unwrap());
    assert!(
        help.contains("postgres://") && help.contains("SMALL_STORE"),
        "{help}"
    );
}

/// `small serve` raises its soft open-file limit to the hard one (each connection is a file;
/// the usual soft default of 1024 is below what --max-connections needs), and says so when
/// even the hard limit is too low.
#[cfg(target_os = "linux")]
#[test]
fn serve_raises_its_open_file_limit() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let mut hard = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct on this stack.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut hard) },
        0
    );
    let hard = hard.rlim_max.min(1 << 20);
    assert!(hard > 256, "this test needs a hard limit above 256");
    let soft_of = |pid: u32| -> u64 {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap()
            .to_string();
        line.split_whitespace().nth(3).unwrap().parse().unwrap()
    };
    let d = tempfile::tempdir().unwrap();
    for (max, warned) in [("100", false), ("1000000", true)] {
        let mut c = StdCommand::new(assert_cmd::cargo::cargo_bin("small"));
        c.args(["serve", "--addr", "127.0.0.1:0", "--store", "memory"])
            .args(["--max-connections", max])
            .current_dir(d.path())
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
        unsafe {
            c.pre_exec(|| {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
                lim.rlim_cur = 256;
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                Ok(())
            });
        }
        let mut child = c.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("listening on"), "{line}");
        assert_eq!(soft_of(child.id()), hard, "--max-connections {max}");
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.contains("open-file limit"), warned, "{err}");
    }
}

#[test]
fn health_is_a_report_and_a_gate_with_gate() {
    let d = tempfile::tempdir().unwrap();
    // No workspace: reported as missing; the report exits 0, the gate 1.
    let o = small()
        .args(["health", "--json"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"missing\""), "{}", stdout(&o));
    let o = small()
        .args(["health", "--gate"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}
