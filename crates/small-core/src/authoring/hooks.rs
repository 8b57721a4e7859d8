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
}
