//! Our `--json` documents hold every key the reference CLI (v1.1.2) prints, with the same JSON
//! type, and our exit codes are its. The scenarios of `fixtures/reference-json/scenarios.json`
//! run with our binary, step by step in a fresh directory, and each recorded step is compared
//! with the shapes `ci/record-reference-json.py` recorded from the reference
//! (`recorded.json`: key paths, JSON types, exit codes; never values). Our extra keys are
//! fine; an exit code may differ only where the step says why (`differs`, naming the record of
//! docs/decisions/ in force that decided it). Every difference is collected and reported at
//! once, by command.
//! After editing the scenarios, record them again: `python3 ci/record-reference-json.py`
//! (needs the reference binary; this test needs only the two fixture files).
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use regex::Regex;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_small");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reference-json");
/// Commands whose first positional argument names a subcommand.
const GROUPS: &[&str] = &[
    "agents", "evidence", "mode", "policy", "progress", "run", "session",
];

/// The recorded steps of the reference, by (scenario, step index).
type Facts<'a> = HashMap<(String, usize), &'a Value>;

/// Key path -> JSON type(s) (`string`, `number|null`, ...) of one document.
type Shape = BTreeMap<String, BTreeSet<String>>;

/// What one process did.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn load(name: &str) -> Value {
    let path = Path::new(FIXTURES).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// The steps of a scenario with its `include`s replaced by their preludes' steps.
fn expand(steps: &Value, preludes: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for step in steps.as_array().expect("steps") {
        match step["include"].as_str() {
            Some(name) => out.extend(expand(&preludes[name], preludes)),
            None => out.push(step.clone()),
        }
    }
    out
}

/// The JSON objects and arrays stdout holds, one after another; `None` when it holds
/// anything else (or nothing).
fn json_documents(text: &str) -> Option<Vec<Value>> {
    let docs: Vec<Value> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .ok()?;
    let documents = docs.iter().all(|d| d.is_object() || d.is_array());
    (documents && !docs.is_empty()).then_some(docs)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A key that is a generated id (32 or more hex digits in a row) varies between runs: one
/// name for all.
fn key_name(key: &str) -> &str {
    let longest_hex = key
        .split(|c: char| !matches!(c, '0'..='9' | 'a'..='f'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    if longest_hex >= 32 {
        "<id>"
    } else {
        key
    }
}

fn walk(v: &Value, path: &str, out: &mut Shape) {
    out.entry(path.to_string())
        .or_default()
        .insert(type_name(v).to_string());
    let prefix = if path == "$" { "" } else { path };
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let key = key_name(k);
                let p = if prefix.is_empty() {
                    key.to_string()
                } else {
                    format!("{prefix}.{key}")
                };
                walk(child, &p, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                walk(child, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn shape(doc: &Value) -> Shape {
    let mut out = Shape::new();
    walk(doc, "$", &mut out);
    out
}

/// The recorded shape of one document: path -> "type|type".
fn recorded_shape(doc: &Value) -> Shape {
    let map = doc.as_object().expect("recorded document");
    map.iter()
        .map(|(p, t)| {
            let types = t.as_str().expect("type").split('|').map(String::from);
            (p.clone(), types.collect())
        })
        .collect()
}

/// `a.b[0].c` into `doc`, as text.
fn lookup(doc: &Value, path: &str) -> Option<String> {
    let parts = Regex::new(r"[^.\[\]]+|\[\d+\]").expect("regex");
    let mut v = doc;
    for part in parts.find_iter(path).map(|m| m.as_str()) {
        v = match part.strip_prefix('[') {
            Some(index) => v.get(index.trim_end_matches(']').parse::<usize>().ok()?)?,
            None => v.get(part)?,
        };
    }
    Some(v.as_str().map_or_else(|| v.to_string(), String::from))
}

/// One scenario being run: its directory, a home of its own and the captured values.
struct Run {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    vars: HashMap<String, String>,
}

impl Run {
    fn new() -> Run {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical tempdir");
        let vars = HashMap::from([("DIR".to_string(), root.display().to_string())]);
        Run {
            dir,
            home: tempfile::tempdir().expect("home"),
            vars,
        }
    }

    fn subst(&self, text: &str) -> Result<String, String> {
        let re = Regex::new(r"\{([A-Z][A-Z0-9_]*)\}").expect("regex");
        if let Some(m) = re
            .captures_iter(text)
            .find(|c| !self.vars.contains_key(&c[1]))
        {
            return Err(format!("unknown placeholder {}", &m[0]));
        }
        Ok(re
            .replace_all(text, |c: &regex::Captures| self.vars[&c[1]].clone())
            .into_owned())
    }

    fn path(&self, rel: &str) -> Result<PathBuf, String> {
        Ok(self.dir.path().join(self.subst(rel)?))
    }

    fn strings(&self, list: &Value) -> Result<Vec<String>, String> {
        let items = list.as_array().ok_or("not a list")?;
        items
            .iter()
            .map(|a| self.subst(a.as_str().unwrap_or_default()))
            .collect()
    }

    fn command(&self, program: &str, cwd: &Value) -> Result<Command, String> {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.path(cwd.as_str().unwrap_or("."))?)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("LANG", "C.UTF-8")
            .env("SMALL_NO_UPDATE_CHECK", "1")
            .env("SMALL_NO_BANNER", "1")
            .env("NO_COLOR", "1")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Recorder")
            .env("GIT_AUTHOR_EMAIL", "recorder@example.com")
            .env("GIT_COMMITTER_NAME", "Recorder")
            .env("GIT_COMMITTER_EMAIL", "recorder@example.com")
            .stdin(Stdio::null());
        Ok(cmd)
    }

    fn write(&self, spec: &Value) -> Result<(), String> {
        let target = self.path(spec["path"].as_str().unwrap_or_default())?;
        let text = self.subst(spec["text"].as_str().unwrap_or_default())?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&target, text).map_err(|e| format!("write {target:?}: {e}"))
    }

    fn git(&self, step: &Value) -> Result<(), String> {
        let args = self.strings(&step["git"])?;
        let out = self.command("git", &step["cwd"])?.args(&args).output();
        let out = out.map_err(|e| format!("git: {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!("git {args:?} exited {}: {err}", out.status));
        }
        Ok(())
    }

    fn small(&self, step: &Value) -> Result<Outcome, String> {
        let args = self.strings(&step["args"])?;
        let mut cmd = self.command(BIN, &step["cwd"])?;
        let out: Output = cmd.arg0("small").args(&args).output().expect("run small");
        Ok(Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Keep stdout where the step says and the values it captures.
    fn keep(&mut self, step: &Value, out: &Outcome) -> Result<(), String> {
        if let Some(file) = step["stdout_to"].as_str() {
            std::fs::write(self.path(file)?, &out.stdout).map_err(|e| e.to_string())?;
        }
        let Some(captures) = step["capture"].as_object() else {
            return Ok(());
        };
        let doc = json_documents(&out.stdout).and_then(|d| d.into_iter().next());
        for (var, path) in captures {
            let path = path.as_str().unwrap_or_default();
            let value = doc.as_ref().and_then(|d| lookup(d, path));
            let value = value.ok_or_else(|| format!("cannot capture {var} = {path}"))?;
            self.vars.insert(var.clone(), value);
        }
        Ok(())
    }

    /// Run one step: `Some` outcome for a `small` step, `None` for the others.
    fn step(&mut self, step: &Value) -> Result<Option<Outcome>, String> {
        if step.get("write").is_some() {
            return self.write(&step["write"]).map(|()| None);
        }
        if step.get("git").is_some() {
            return self.git(step).map(|()| None);
        }
        self.small(step).map(Some)
    }
}

/// `run show`, `status`: the command a step runs, to group the report by.
fn command_name(args: &[Value]) -> String {
    let words: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
    match words.as_slice() {
        [first, second, ..] if GROUPS.contains(first) && !second.starts_with('-') => {
            format!("{first} {second}")
        }
        [first, ..] => first.to_string(),
        [] => String::new(),
    }
}

fn types(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join("|")
}

/// The reference's paths that ours lacks (only the outermost of a missing subtree) or holds
/// with another type. A reference `null` matches any type.
fn compare_shapes(reference: &Shape, ours: &Shape) -> Vec<String> {
    let mut found = Vec::new();
    let mut missing: Vec<&str> = Vec::new();
    for (path, want) in reference {
        let under_missing = missing.iter().any(|m| {
            path.strip_prefix(m)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        });
        if under_missing {
            continue;
        }
        let Some(have) = ours.get(path) else {
            found.push(missing_path(path, ours));
            missing.push(path);
            continue;
        };
        let want_typed: BTreeSet<_> = want.iter().filter(|t| *t != "null").collect();
        if !want_typed.is_empty() && want_typed.iter().all(|t| !have.contains(*t)) {
            found.push(format!(
                "type of {path}: reference {}, ours {}",
                types(want),
                types(have)
            ));
        }
    }
    found
}

fn missing_path(path: &str, ours: &Shape) -> String {
    match path.strip_suffix("[]") {
        Some(array) if ours.contains_key(array) => {
            format!("{path}: the reference's array had elements, ours none")
        }
        _ => format!("missing {path}"),
    }
}

fn snippet(text: &str) -> String {
    let text = text.trim();
    let cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// The differences between one recorded step of the reference and our run of it.
fn compare(fact: &Value, step: &Value, ours: &Outcome) -> Vec<String> {
    let mut found = Vec::new();
    let want = fact["exit"].as_i64().unwrap_or(-1);
    let excused = step.get("differs").is_some();
    if i64::from(ours.code) != want && !excused {
        found.push(format!("exit {}, reference {want}", ours.code));
    }
    let Some(recorded) = fact["documents"].as_array() else {
        return found;
    };
    // Where one side succeeds and the other refuses on purpose, their documents cannot share
    // keys (a report against an error document).
    if excused && (want == 0) != (ours.code == 0) {
        return found;
    }
    let Some(docs) = json_documents(&ours.stdout) else {
        found.push(format!(
            "stdout is not JSON (the reference's is): {:?}",
            snippet(&ours.stdout)
        ));
        return found;
    };
    if docs.len() != recorded.len() {
        found.push(format!(
            "{} JSON documents on stdout, reference {}",
            docs.len(),
            recorded.len()
        ));
    }
    for (i, (want, have)) in recorded.iter().zip(&docs).enumerate() {
        let prefix = if recorded.len() > 1 {
            format!("document {}: ", i + 1)
        } else {
            String::new()
        };
        let diffs = compare_shapes(&recorded_shape(want), &shape(have));
        found.extend(diffs.into_iter().map(|d| format!("{prefix}{d}")));
    }
    if !found.is_empty() && !ours.stderr.trim().is_empty() {
        found.push(format!("(our stderr: {:?})", snippet(&ours.stderr)));
    }
    found
}

/// Differences found, keyed by command.
#[derive(Default)]
struct Report {
    by_command: BTreeMap<String, Vec<String>>,
    checked: usize,
    /// The top-level keys of our documents, by command (docs/json-output.md names each).
    keys: BTreeMap<String, BTreeSet<String>>,
}

impl Report {
    fn add(&mut self, scenario: &str, index: usize, step: &Value, lines: Vec<String>) {
        let args = step["args"].as_array().cloned().unwrap_or_default();
        let shown: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
        let mut entry = format!("  [{scenario} #{index}] small {}", shown.join(" "));
        for line in lines {
            entry.push_str(&format!("\n      {line}"));
        }
        let key = command_name(&args);
        self.by_command.entry(key).or_default().push(entry);
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (command, entries) in &self.by_command {
            out.push_str(&format!("\n{command} ({}):\n", entries.len()));
            out.push_str(&entries.join("\n"));
            out.push('\n');
        }
        out
    }
}

/// A recorded step's differences from the reference, and the top-level keys of our documents.
type Played = (Vec<String>, BTreeSet<String>);

/// Run one step; a recorded one gives its differences from the reference (`Some`).
fn play(run: &mut Run, step: &Value, fact: Option<&Value>) -> Result<Option<Played>, String> {
    let Some(out) = run.step(step)? else {
        return Ok(None);
    };
    let recorded = step["record"].as_bool() == Some(true);
    if !recorded && out.code != 0 {
        let why = snippet(&out.stderr);
        return Err(format!("set-up step exited {}: {why}", out.code));
    }
    run.keep(step, &out)?;
    if !recorded {
        return Ok(None);
    }
    let diffs = match fact {
        Some(fact) if fact["args"] == step["args"] => compare(fact, step, &out),
        _ => vec!["not in recorded.json: run ci/record-reference-json.py".into()],
    };
    Ok(Some((diffs, top_level_keys(&out.stdout))))
}

/// The top-level keys of the JSON documents a command printed (none for text).
fn top_level_keys(stdout: &str) -> BTreeSet<String> {
    json_documents(stdout)
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()))
        .flatten()
        .collect()
}

/// Run one scenario with our binary and compare its recorded steps; a step that cannot run
/// (or a set-up step that fails) ends the scenario.
fn run_scenario(scenario: &Value, preludes: &Value, facts: &Facts, report: &mut Report) {
    let name = scenario["name"].as_str().expect("scenario name");
    let mut run = Run::new();
    for (index, step) in expand(&scenario["steps"], preludes).iter().enumerate() {
        let fact = facts.get(&(name.to_string(), index)).copied();
        match play(&mut run, step, fact) {
            Ok(None) => {}
            Ok(Some((diffs, keys))) => {
                report.checked += 1;
                let command = command_name(step["args"].as_array().map_or(&[][..], Vec::as_slice));
                report.keys.entry(command).or_default().extend(keys);
                if !diffs.is_empty() {
                    report.add(name, index, step, diffs);
                }
            }
            Err(why) => {
                let what = format!("scenario stopped here: {why}");
                report.add(name, index, step, vec![what]);
                return;
            }
        }
    }
}

fn facts(recorded: &Value) -> Facts<'_> {
    let list = recorded["recorded"].as_array().expect("recorded");
    list.iter()
        .map(|f| {
            let scenario = f["scenario"].as_str().unwrap_or_default().to_string();
            ((scenario, f["step"].as_u64().unwrap_or(0) as usize), f)
        })
        .collect()
}

/// Every `differs` of the scenarios names a decision record in force:
/// `docs/decisions/NNNN-short-title.md: why`.
#[test]
fn every_difference_names_a_recorded_decision() {
    let named = Regex::new(r"^docs/decisions/([0-9a-z-]+)\.md\b").unwrap();
    let scenarios = load("scenarios.json");
    let mut missing = Vec::new();
    let mut checked = 0;
    for scenario in scenarios["scenarios"].as_array().expect("scenarios") {
        for step in scenario["steps"].as_array().into_iter().flatten() {
            let Some(why) = step["differs"].as_str() else {
                continue;
            };
            checked += 1;
            let verdict = match named.captures(why) {
                Some(c) => crate::docs::decision_in_force(&c[1]),
                None => Err("names no docs/decisions/NNNN-....md record".to_string()),
            };
            if let Err(e) = verdict {
                missing.push(format!("{}: {why}: {e}", scenario["name"]));
            }
        }
    }
    assert!(checked > 0, "no step of scenarios.json has a `differs`");
    assert!(
        missing.is_empty(),
        "differs without a decision in force:\n{}",
        missing.join("\n")
    );
}

#[test]
fn our_json_documents_hold_the_reference_keys_types_and_exit_codes() {
    let scenarios = load("scenarios.json");
    let recorded = load("recorded.json");
    let facts = facts(&recorded);
    let mut report = Report::default();
    for scenario in scenarios["scenarios"].as_array().expect("scenarios") {
        run_scenario(scenario, &scenarios["preludes"], &facts, &mut report);
    }
    let differing: usize = report.by_command.values().map(Vec::len).sum();
    eprintln!(
        "reference_json: {} of {} recorded invocations run, {differing} differ",
        report.checked,
        facts.len()
    );
    assert!(
        differing == 0 && report.checked == facts.len(),
        "{differing} steps differ from the reference; {} of {} recorded invocations were run \
         (fewer: a scenario stopped, or recorded.json is stale). By command:\n{}",
        report.checked,
        facts.len(),
        report.render()
    );
    let undocumented = undocumented_keys(&report.keys);
    assert!(
        undocumented.is_empty(),
        "docs/json-output.md does not name these top-level keys of our documents (name each in \
         a code span of the command's section):\n{}",
        undocumented.join("\n")
    );
}

/// The top-level keys of our documents that docs/json-output.md does not name (as `key`).
fn undocumented_keys(keys: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/json-output.md"
    ))
    .expect("docs/json-output.md");
    // Every word of a fenced example or inside a code span (`{a, b, c}` names three keys).
    let fence = Regex::new(r"(?s)```.*?```").unwrap();
    let span = Regex::new(r"`([^`]+)`").unwrap();
    let word = Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").unwrap();
    let examples: Vec<&str> = fence.find_iter(&doc).map(|m| m.as_str()).collect();
    let prose = fence.replace_all(&doc, "");
    let named: BTreeSet<&str> = examples
        .iter()
        .flat_map(|e| word.find_iter(e).map(|m| m.as_str()))
        .collect();
    let named: BTreeSet<String> = span
        .captures_iter(&prose)
        .flat_map(|c| {
            word.find_iter(c.get(1).map_or("", |m| m.as_str()))
                .map(|m| m.as_str().to_string())
                .collect::<Vec<_>>()
        })
        .chain(named.iter().map(|w| w.to_string()))
        .collect();
    keys.iter()
        .flat_map(|(command, ks)| {
            ks.iter()
                .filter(|k| !named.contains(k.as_str()))
                .map(move |k| format!("  {command}: {k}"))
        })
        .collect()
}
