//! `small completion <shell>`.

use crate::tools_support;
use tools_support::small;

#[test]
fn every_supported_shell_gets_a_script_naming_the_commands() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish", "BASH"] {
        let out = small().args(["completion", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        for word in ["small", "selftest", "checkpoint", "agents"] {
            assert!(text.contains(word), "{shell} script mentions {word}");
        }
    }
}

#[test]
fn unknown_shell_is_a_usage_error() {
    small().args(["completion", "tcsh"]).assert().code(2);
    small().args(["completion"]).assert().code(2);
}
