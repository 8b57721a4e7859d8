//! Stamps the binary with the commit it was built from and the build date, for `small version`.
//!
//! Both can be set from outside (`SMALL_BUILD_COMMIT`, `SOURCE_DATE_EPOCH`) so that a release
//! built from a source archive without `.git`, or rebuilt for reproducibility, says the same.

use std::process::Command;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

fn main() {
    println!("cargo:rerun-if-env-changed=SMALL_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        // A new commit or checkout moves HEAD or the branch it names.
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{branch}");
        }
    }
    let commit = std::env::var("SMALL_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SMALL_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=SMALL_BUILD_DATE={}", build_date());
}

/// `SOURCE_DATE_EPOCH` when set (reproducible builds), else now; RFC 3339 in UTC.
fn build_date() -> String {
    let when = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or_else(OffsetDateTime::now_utc);
    when.replace_nanosecond(0)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| "unknown".to_string())
}

/// One line of `git` output, or None where git or the repository is missing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !line.is_empty()).then_some(line)
}
