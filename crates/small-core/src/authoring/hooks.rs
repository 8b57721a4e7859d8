//! Session hooks for agent hosts: the resume context injected when a session starts, resumes,
//! is cleared or has been compacted.
//!
//! Each host reads hooks from a JSON settings file in the project; all three run a command on
//! their `SessionStart` event and read `hookSpecificOutput.additionalContext` from its JSON
//! output (`small resume --hook` prints exactly that):
//!
//! | host | file | event and matcher |
//! |------|------|-------------------|
//! | Claude Code | `.claude/settings.json` | `SessionStart`, `startup\|resume\|clear\|compact` (`compact` re-injects after compaction) |
//! | Codex | `.codex/hooks.json` | `SessionStart`, `startup\|resume\|clear\|compact` |
//! | Gemini CLI | `.gemini/settings.json` | `SessionStart` (no matcher: lifecycle matchers are exact strings); its `PreCompress` hook cannot add context, so nothing is re-injected after compression |
//!
//! The settings are merged, never replaced: other keys, other events and other hooks stay as
//! they were; a group whose command runs `resume --hook` is ours and is updated in place, so
//! running the install twice changes nothing.

use serde_json::{json, Map, Value};

/// An agent host whose settings we can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    Claude,
    Gemini,
    Codex,
}

impl Host {
    pub const ALL: [Host; 3] = [Host::Claude, Host::Gemini, Host::Codex];

    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Gemini => "gemini",
            Host::Codex => "codex",
        }
    }

    pub fn parse(s: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|h| h.name() == s)
    }

    /// The settings file, relative to the project root.
    pub fn settings_rel(self) -> &'static str {
        match self {
            Host::Claude => ".claude/settings.json",
            Host::Gemini => ".gemini/settings.json",
            Host::Codex => ".codex/hooks.json",
        }
    }

    fn group(self, command: &str) -> Value {
        match self {
            Host::Claude => json!({
                "matcher": "startup|resume|clear|compact",
                "hooks": [{"type": "command", "command": command, "timeout": 30}]
            }),
            Host::Codex => json!({
                "matcher": "startup|resume|clear|compact",
                "hooks": [{"type": "command", "command": command, "timeout": 30}]
            }),
            Host::Gemini => json!({
                "hooks": [{
                    "type": "command",
                    "name": "small-resume",
                    "command": command,
                    "description": "SMALL resume context: handoff, next task, constraints, recent progress, gates",
                    "timeout": 30000
                }]
            }),
        }
    }
}

/// The command a hook runs: `small resume` as SessionStart hook output.
pub fn hook_command(small: &str) -> String {
    format!("{small} resume --hook --max-chars 8000")
}

/// Whether a hook group is the one we install.
fn is_ours(group: &Value) -> bool {
    group
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hs| {
            hs.iter().any(|h| {
                h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains(" resume --hook"))
            })
        })
}

/// The settings text with our SessionStart hook merged in. `existing` must be a JSON object
/// (an unreadable file is an error: we never overwrite what we cannot read).
pub fn merge_settings(existing: Option<&str>, host: Host, command: &str) -> Result<String, String> {
    let mut root: Value = match existing.map(str::trim) {
        None | Some("") => Value::Object(Map::new()),
        Some(text) => serde_json::from_str(text).map_err(|e| {
            format!(
                "{} is not plain JSON ({e}); fix it or add the hook by hand (docs/agents.md)",
                host.settings_rel()
            )
        })?,
    };
    let Some(obj) = root.as_object_mut() else {
        return Err(format!("{} is not a JSON object", host.settings_rel()));
    };
    let hooks = obj
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(format!("{}: `hooks` is not an object", host.settings_rel()));
    };
    let events = hooks
        .entry("SessionStart")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(events) = events.as_array_mut() else {
        return Err(format!(
            "{}: `hooks.SessionStart` is not a list",
            host.settings_rel()
        ));
    };
    let ours = host.group(command);
    match events.iter().position(is_ours) {
        Some(i) => events[i] = ours,
        None => events.push(ours),
    }
    let mut text = serde_json::to_string_pretty(&root).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok(text)
}

/// The JSON a SessionStart hook prints to add `context` to the session.
pub fn session_start_output(context: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context
        }
    })
    .to_string()
}

/// Installing the SessionStart hook in a project.
#[derive(Debug, Clone)]
pub struct InstallRequest<'a> {
    /// The project directory (see [`crate::authoring::agents::target_path`]).
    pub dir: Option<&'a std::path::Path>,
    pub host: Host,
    /// How the host runs small (the hook runs `<small> resume --hook`).
    pub small: &'a str,
    /// Work out the change and write nothing.
    pub dry_run: bool,
}

/// What installing the hook did (or, for a dry run, would do).
#[derive(Debug, Clone)]
pub struct Installed {
    /// The settings file, relative to the project.
    pub rel: &'static str,
    /// Its text before (`None`: there was no file).
    pub old: Option<String>,
    /// Its text with the hook.
    pub new: String,
    /// The command the hook runs.
    pub command: String,
    /// Whether the file was written.
    pub written: bool,
}

impl Installed {
    /// Whether the hook was already installed as it is now.
    pub fn unchanged(&self) -> bool {
        self.old.as_deref() == Some(self.new.as_str())
    }
}

/// Merge the SessionStart hook into the host's project settings (created when missing).
pub fn install(req: &InstallRequest) -> Result<Installed, crate::workspace::error::Error> {
    use crate::fsio;
    use crate::workspace::error::{code, Error};
    let dir = crate::authoring::agents::target_path(req.dir, Some("."))?;
    let rel = req.host.settings_rel();
    let path = dir.join(rel);
    let old = match fsio::read_bounded(&path, fsio::MAX_READ_BYTES) {
        Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(Error::usage(
                code::IO,
                format!("cannot read {}: {e}", path.display()),
            ))
        }
    };
    let command = hook_command(req.small);
    let new = merge_settings(old.as_deref(), req.host, &command)
        .map_err(|m| Error::invalid(code::REFUSED, m))?;
    let mut out = Installed {
        rel,
        old,
        new,
        command,
        written: false,
    };
    if out.unchanged() || req.dry_run {
        return Ok(out);
    }
    let fail = |what: &str, p: &std::path::Path, e: &dyn std::fmt::Display| {
        Error::usage(code::IO, format!("cannot {what} {}: {e}", p.display()))
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| fail("create", parent, &e))?;
    }
    crate::workspace::txn::atomic_write(&path, out.new.as_bytes())
        .map_err(|e| fail("write", &path, &e))?;
    out.written = true;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_without_clobbering_and_is_idempotent() {
        let existing = r#"{"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}], "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}"#;
        let once = merge_settings(Some(existing), Host::Claude, "small resume --hook").unwrap();
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "x");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint");
        assert_eq!(v["hooks"]["SessionStart"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "echo hi"
        );
        let twice = merge_settings(Some(&once), Host::Claude, "small resume --hook").unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(merge_settings(Some("{ // comment\n}"), Host::Gemini, "c").is_err());
        assert!(merge_settings(Some("[]"), Host::Gemini, "c").is_err());
        assert!(merge_settings(Some(r#"{"hooks": []}"#), Host::Codex, "c").is_err());
    }

    #[test]
    fn output_is_the_documented_shape() {
        let v: Value = serde_json::from_str(&session_start_output("ctx")).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "ctx");
    }

    #[test]
    fn install_merges_once_and_a_dry_run_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let req = |dry_run| InstallRequest {
            dir: Some(tmp.path()),
            host: Host::Claude,
            small: "small",
            dry_run,
        };
        let dry = install(&req(true)).unwrap();
        assert!(!dry.written && dry.old.is_none());
        assert!(!tmp.path().join(".claude/settings.json").exists());
        let done = install(&req(false)).unwrap();
        assert!(done.written && !done.unchanged());
        assert!(install(&req(false)).unwrap().unchanged());
        std::fs::write(tmp.path().join(".claude/settings.json"), "[1]").unwrap();
        assert!(install(&req(false)).is_err());
    }
}
