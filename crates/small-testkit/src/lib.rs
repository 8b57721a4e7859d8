//! Test support shared by the crates of the workspace.
//!
//! Some suites need something a machine may not have: a PostgreSQL server
//! (`SMALL_TEST_POSTGRES_URL`), the conformance corpus beside the checkout, an MCP client, the
//! schemathesis tool. Without it such a test cannot run, and must not pass silently. It calls
//! [`skip`], which
//!
//! - fails the test (panics) when the suite is listed in `SMALL_TEST_REQUIRE`
//!   (comma-separated suite names, or `all`): CI lists every suite it is meant to run, so a
//!   suite that did not run fails CI;
//! - otherwise writes one line `SKIPPED (<suite>): <test>: <reason>` straight to the process's
//!   standard error, past the test harness's output capture, so `cargo test` always shows it;
//! - and, when `SMALL_TEST_SKIP_LOG` names a file, appends the same line to it, so a script can
//!   count the skips at the end of a run.
//!
//! ```no_run
//! let Some(url) = std::env::var("SMALL_TEST_POSTGRES_URL").ok() else {
//!     small_testkit::skip(small_testkit::POSTGRES, "SMALL_TEST_POSTGRES_URL is not set");
//!     return;
//! };
//! ```

use std::io::Write;

/// The PostgreSQL suites (store, CLI and server against a real server).
pub const POSTGRES: &str = "postgres";
/// The suites that read the conformance corpus (`../shared/conformance`).
pub const CONFORMANCE: &str = "conformance";
/// The MCP client suite.
pub const MCP: &str = "mcp";
/// The schemathesis run of `ci/schemathesis.sh`.
pub const SCHEMATHESIS: &str = "schemathesis";

/// The variable listing the suites that must run.
pub const REQUIRE_ENV: &str = "SMALL_TEST_REQUIRE";
/// The variable naming a file that collects the skip lines.
pub const SKIP_LOG_ENV: &str = "SMALL_TEST_SKIP_LOG";

/// Whether `SMALL_TEST_REQUIRE` lists `suite` (or `all`).
pub fn required(suite: &str) -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| listed(&v, suite))
}

fn listed(list: &str, suite: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|s| s.eq_ignore_ascii_case(suite) || s.eq_ignore_ascii_case("all"))
}

/// Report that the current test cannot run its `suite` for `reason`: a failure when the suite
/// is required, otherwise a visible skip line. The caller returns right after.
#[track_caller]
pub fn skip(suite: &str, reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string();
    if required(suite) {
        panic!("{REQUIRE_ENV} lists `{suite}`, but {test} cannot run it: {reason}");
    }
    let line = format!("SKIPPED ({suite}): {test}: {reason}\n");
    // Straight to the file descriptor: `eprintln!` would be captured by the harness and shown
    // only for failing tests.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// The PostgreSQL URL for tests, or `None` after a [`skip`] when `SMALL_TEST_POSTGRES_URL` is
/// unset or empty.
#[track_caller]
pub fn postgres_url() -> Option<String> {
    match std::env::var("SMALL_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            skip(
                POSTGRES,
                "SMALL_TEST_POSTGRES_URL is not set (`source ci/postgres.sh` starts a server)",
            );
            None
        }
    }
}

/// `path` if it exists, or `None` after a [`skip`] of the conformance suite.
#[track_caller]
pub fn conformance_path(path: impl AsRef<std::path::Path>) -> Option<std::path::PathBuf> {
    let p = path.as_ref();
    if p.exists() {
        Some(p.to_path_buf())
    } else {
        skip(
            CONFORMANCE,
            &format!("the conformance corpus is not at {}", p.display()),
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_are_listed_by_name_or_all() {
        assert!(listed("postgres,conformance", "conformance"));
        assert!(listed(" postgres , MCP ", "mcp"));
        assert!(listed("all", "schemathesis"));
        assert!(!listed("postgres", "conformance"));
        assert!(!listed("", "postgres"));
    }

    // The only test of this crate that touches the environment.
    #[test]
    fn a_required_suite_fails_and_other_skips_are_logged() {
        let log = std::env::temp_dir().join(format!("small-testkit-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        std::env::set_var(REQUIRE_ENV, "postgres");
        std::env::set_var(SKIP_LOG_ENV, &log);
        let required = std::panic::catch_unwind(|| skip(POSTGRES, "no server"));
        assert!(required.is_err(), "a required suite must fail");
        let other = std::panic::catch_unwind(|| skip(CONFORMANCE, "no corpus"));
        assert!(other.is_ok(), "a suite not required only skips");
        std::env::remove_var(REQUIRE_ENV);
        std::env::remove_var(SKIP_LOG_ENV);
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.starts_with("SKIPPED (conformance): "), "{text}");
        assert!(text.trim_end().ends_with(": no corpus"), "{text}");
    }
}
