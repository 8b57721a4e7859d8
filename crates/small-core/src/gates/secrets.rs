//! Secret detection (spec invariant 1: secrets are never stored in canonical artifacts).
//!
//! Three kinds of evidence, in order of confidence:
//! 1. a well-known credential format anywhere in a string: PEM private-key blocks, AWS access
//!    key ids, Stripe / GitHub / Slack / GitLab / npm / Google / OpenAI-style keys, JWTs,
//!    passwords embedded in URLs;
//! 2. a key whose name says it holds a secret (`password`, `api_key`, `client_secret`,
//!    `auth_token`, ...) with a non-placeholder string value; the key name is read word by
//!    word, so `max_tokens` or `private_key_path` are not secrets;
//! 3. a long, random-looking token (32+ characters of the base64 / URL-safe alphabet, mixed
//!    character classes, not hexadecimal, not made of words), inside a sentence or alone.
//!    Hex strings are never flagged by this rule: they are commit hashes, replay IDs and
//!    checksums, which the protocol stores on purpose.
//!
//! Findings never repeat the secret: [`Finding::describe`] shows at most its first characters.

use regex::{Regex, RegexSet};
use std::sync::OnceLock;

use crate::diag::Span;
use crate::yaml::{Node, Value};

/// Why a value looks like a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind of credential it resembles (`AWS access key id`, `password field`, ...).
    pub kind: &'static str,
    /// Byte range of the suspicious text inside the value.
    pub range: std::ops::Range<usize>,
}

impl Finding {
    /// A description that does not disclose the secret: the kind and a short prefix.
    pub fn describe(&self, value: &str) -> String {
        let text = value.get(self.range.clone()).unwrap_or("");
        let prefix: String = text.chars().take(4).collect();
        if prefix.is_empty() || text.chars().count() <= 8 {
            self.kind.to_string()
        } else {
            format!("{} (`{prefix}…`)", self.kind)
        }
    }
}

/// A finding located in a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// JSON pointer of the value (`/tasks/2/password`).
    pub path: String,
    pub span: Span,
    /// Human description (never the secret itself).
    pub what: String,
}

const URL_PASSWORD: &str = "password inside a URL";

struct Pattern {
    kind: &'static str,
    re: Regex,
}

/// All patterns, and a set matching any of them in one pass (most strings match none).
struct Patterns {
    set: RegexSet,
    list: Vec<Pattern>,
}

fn compiled() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let list = patterns();
        // The URL rule has no literal prefix; it is kept out of the set (which can then skip
        // most text quickly on literal prefixes) and run only on strings with `://` and `@`.
        let set = RegexSet::new(
            list.iter()
                .filter(|p| p.kind != URL_PASSWORD)
                .map(|p| p.re.as_str()),
        )
        .unwrap_or_else(|_| RegexSet::empty());
        Patterns { set, list }
    })
}

fn patterns() -> Vec<Pattern> {
    {
        let table: [(&str, &str); 13] = [
            (
                "PEM private key",
                r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
            ),
            (
                "AWS access key id",
                r"(?-u:\b)(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}(?-u:\b)",
            ),
            (
                "Stripe secret key",
                r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            ),
            ("GitHub token", r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{30,}"),
            ("GitHub token", r"(?-u:\b)github_pat_[A-Za-z0-9_]{22,}"),
            ("Slack token", r"(?-u:\b)xox[abposre]-[A-Za-z0-9-]{10,}"),
            (
                "Slack webhook URL",
                r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
            ),
            ("GitLab token", r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}"),
            ("npm token", r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)"),
            ("Google API key", r"(?-u:\b)AIza[0-9A-Za-z_-]{35}"),
            (
                "API secret key",
                r"(?-u:\b)sk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{32,}",
            ),
            (
                "JSON Web Token",
                r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            ),
            (
                URL_PASSWORD,
                r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:[^\s/@]+@[^\s/]+",
            ),
        ];
        table
            .iter()
            .filter_map(|(kind, re)| Regex::new(re).ok().map(|re| Pattern { kind, re }))
            .collect()
    }
}

/// Words that, as the last word of a key name, mean the value is a secret.
const SECRET_LAST_WORDS: [&str; 8] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credential",
    "credentials",
];
/// Two-word endings that mean the same (`api_key`, `privateKey`, `access-key`, ...).
const SECRET_LAST_PAIRS: [(&str, &str); 5] = [
    ("api", "key"),
    ("private", "key"),
    ("access", "key"),
    ("secret", "key"),
    ("signing", "key"),
];

/// Split a key name into lower-case words: `client_secret`, `clientSecret`, `client-secret`
/// all give `["client", "secret"]`.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// True if a key name says its value is a secret.
pub fn is_secret_key_name(key: &str) -> bool {
    // The protocol's own field names are never secrets.
    if matches!(
        key,
        "task_id"
            | "timestamp"
            | "status"
            | "evidence"
            | "command"
            | "commit"
            | "notes"
            | "replayId"
            | "test"
            | "link"
            | "id"
            | "title"
    ) {
        return false;
    }
    // Fast path: every secret word contains one of these (checked without allocating).
    let lower_has = |needle: &str| {
        key.as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    };
    if !["pass", "secret", "token", "key", "cred"]
        .iter()
        .any(|n| lower_has(n))
    {
        return false;
    }
    let words = key_words(key);
    let Some(last) = words.last() else {
        return false;
    };
    if SECRET_LAST_WORDS.contains(&last.as_str()) {
        return true;
    }
    if words.len() >= 2 {
        let prev = &words[words.len() - 2];
        return SECRET_LAST_PAIRS
            .iter()
            .any(|(a, b)| prev == a && last == b);
    }
    false
}

/// Values that stand in for a secret rather than being one.
fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.starts_with('$') || v.starts_with('<') || v.starts_with("{{") {
        return true;
    }
    if v.chars()
        .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.' || c == '-')
    {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "redacted" | "[redacted]" | "none" | "null" | "n/a" | "tbd" | "todo"
    ) || lower.starts_with("env:")
        || lower.starts_with("vault:")
        || lower.starts_with("secret://")
}

fn token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Share of a token's letters and digits that belong to dictionary-like words (3+ letters
/// with a vowel, in lower case or Capitalised form). Identifiers and paths score high, random
/// tokens low.
fn wordiness(token: &str) -> f64 {
    let b = token.as_bytes();
    let mut i = 0;
    let mut alnum = 0usize;
    let mut wordy = 0usize;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            alnum += i - start;
            continue;
        }
        if c.is_ascii_uppercase() {
            i += 1;
            if i < b.len() && b[i].is_ascii_uppercase() {
                // An upper-case run: an acronym or random letters; not counted as words.
                while i < b.len() && b[i].is_ascii_uppercase() {
                    i += 1;
                }
                alnum += i - start;
                continue;
            }
        }
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        let word = &token[start..i];
        alnum += word.len();
        let has_vowel = word.bytes().any(|c| b"aeiouyAEIOUY".contains(&c));
        if word.len() >= 3 && has_vowel {
            wordy += word.len();
        }
    }
    if alnum == 0 {
        1.0
    } else {
        wordy as f64 / alnum as f64
    }
}

fn entropy(token: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in token.bytes() {
        counts[b as usize] += 1;
    }
    let n = token.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// True if a token looks like a random credential rather than a word, path or hash.
fn is_random_token(token: &str) -> bool {
    let t = token.trim_end_matches('=');
    if t.len() < 32 {
        return false;
    }
    // Hashes and UUIDs (hex digits, maybe with dashes) are stored on purpose.
    if t.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-') {
        return false;
    }
    // So are paths with a hash among their segments (`.small-cache/logs/<replayId>/...`):
    // judge the path without them. A base64 secret that happens to contain `/` has no
    // all-hex segment of hash length and is judged whole.
    let is_hash = |seg: &str| seg.len() >= 32 && seg.bytes().all(|c| c.is_ascii_hexdigit());
    if t.contains('/') {
        // A path whose segments are mostly words (`logs`, `commands`) is a path, whatever
        // its hash and timestamp segments look like.
        let segs: Vec<&str> = t
            .split('/')
            .filter(|seg| !seg.is_empty() && !is_hash(seg))
            .collect();
        let wordy = segs.iter().filter(|seg| wordiness(seg) >= 0.6).count();
        if segs.len() >= 3 && wordy * 2 > segs.len() {
            return false;
        }
        if t.split('/').any(is_hash) {
            return is_random_token(&segs.join("/"));
        }
    }
    let upper = t.bytes().any(|c| c.is_ascii_uppercase());
    let lower = t.bytes().any(|c| c.is_ascii_lowercase());
    let digit = t.bytes().any(|c| c.is_ascii_digit());
    if (upper as u8 + lower as u8 + digit as u8) < 2 {
        return false;
    }
    entropy(t) >= 3.5 && wordiness(t) < 0.6
}

/// Look for a secret inside one string value. `key` is the mapping key holding it, if any.
pub fn scan_str(key: Option<&str>, value: &str) -> Option<Finding> {
    let pats = compiled();
    let url_candidate = value.contains("://") && value.contains('@');
    if url_candidate || pats.set.is_match(value) {
        for p in &pats.list {
            if p.kind == URL_PASSWORD && !url_candidate {
                continue;
            }
            if let Some(m) = p.re.find(value) {
                return Some(Finding {
                    kind: p.kind,
                    range: m.range(),
                });
            }
        }
    }
    if let Some(k) = key {
        if is_secret_key_name(k) && !is_placeholder(value) {
            return Some(Finding {
                kind: "value of a secret-named key",
                range: 0..value.len(),
            });
        }
    }
    if value.len() < 32 {
        return None;
    }
    let b = value.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !token_char(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && token_char(b[i]) {
            i += 1;
        }
        if i - start >= 32 && is_random_token(&value[start..i]) {
            return Some(Finding {
                kind: "random-looking token",
                range: start..i,
            });
        }
    }
    None
}

/// Walk a document and report every string that looks like a secret (one finding per value).
pub fn scan_document(root: &Node) -> Vec<Hit> {
    scan_node(root, "")
}

/// Walk a node found at JSON pointer `prefix` (paths in the hits start with it).
pub fn scan_node(node: &Node, prefix: &str) -> Vec<Hit> {
    let mut hits = Vec::new();
    walk(node, None, &mut prefix.to_string(), &mut hits);
    hits
}

fn walk(node: &Node, key: Option<&str>, path: &mut String, hits: &mut Vec<Hit>) {
    match &node.value {
        Value::Str(s) => {
            if let Some(f) = scan_str(key, s) {
                hits.push(Hit {
                    path: path.clone(),
                    span: node.span,
                    what: f.describe(s),
                });
            }
        }
        Value::Int(i) => {
            // A number under a secret-named key (`pin: 123456`) is still a secret.
            if let Some(k) = key {
                if is_secret_key_name(k) && i.unsigned_abs() >= 1000 {
                    hits.push(Hit {
                        path: path.clone(),
                        span: node.span,
                        what: "value of a secret-named key".to_string(),
                    });
                }
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(item, None, path, hits);
                path.truncate(len);
            }
        }
        Value::Map(entries) => {
            for e in entries {
                let len = path.len();
                path.push('/');
                if e.key.contains(['~', '/']) {
                    path.push_str(&e.key.replace('~', "~0").replace('/', "~1"));
                } else {
                    path.push_str(&e.key);
                }
                walk(&e.value, Some(&e.key), path, hits);
                path.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Float(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flagged(key: Option<&str>, v: &str) -> bool {
        scan_str(key, v).is_some()
    }

    #[test]
    fn finds_what_the_reference_misses() {
        assert!(flagged(
            Some("evidence"),
            "Smoke test used key sk_live_51HqLyjWDarjtT1zdp7dc9xQ4 against the sandbox"
        ));
        assert!(flagged(Some("notes"), "creds AKIAIOSFODNN7EXAMPLE in env"));
        assert!(flagged(
            Some("notes"),
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
        ));
        assert!(flagged(
            Some("notes"),
            "-----BEGIN OPENSSH PRIVATE KEY-----"
        ));
        assert!(flagged(
            None,
            "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"
        ));
        assert!(flagged(None, "token xoxb-123456789012-abcdefghijkl"));
        assert!(flagged(None, "postgres://app:s3cr3t@db.internal:5432/app"));
    }

    #[test]
    fn keeps_what_the_reference_finds() {
        assert!(flagged(
            Some("aws"),
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        ));
        assert!(flagged(
            Some("webhook"),
            "Zm9yZ2V0LW1lLW5vdC1hLXJlYWwta2V5LTIwMjYtMDQx"
        ));
        assert!(flagged(Some("password"), "hunter2"));
        assert!(flagged(Some("api_key"), "abc"));
        assert!(flagged(Some("clientSecret"), "abc"));
    }

    #[test]
    fn no_false_positives() {
        assert!(!flagged(
            Some("commit"),
            "3f9c2ab8e0d1c4b7a9e6f5d4c3b2a1908f7e6d5c"
        ));
        assert!(!flagged(
            Some("value"),
            "bf8b010e70920f9ad9ff55a4cc73249c34eb408d9cdb613e9e6345a02720d701"
        ));
        assert!(!flagged(
            Some("private_key_path"),
            "~/.ssh/loadtest_ed25519"
        ));
        assert!(!flagged(Some("max_tokens"), "4096"));
        assert!(!flagged(Some("token_count"), "12"));
        assert!(!flagged(Some("password"), ""));
        assert!(!flagged(Some("password"), "${DB_PASSWORD}"));
        assert!(!flagged(
            Some("test"),
            "TestTokenBucketRefillWithInjectableClock2"
        ));
        assert!(!flagged(
            Some("evidence"),
            "src/Components/UserProfile2Widget/index.tsx"
        ));
        assert!(!flagged(Some("id"), "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!flagged(
            Some("link"),
            "https://ci.example.com/gateway/builds/4412"
        ));
        assert!(!flagged(
            Some("evidence"),
            "Rotated the password policy; tokens expire in 1h"
        ));
    }

    #[test]
    fn key_words_split() {
        assert_eq!(key_words("clientSecret"), vec!["client", "secret"]);
        assert_eq!(key_words("API_KEY"), vec!["api", "key"]);
        assert!(is_secret_key_name("db-password"));
        assert!(is_secret_key_name("privateKey"));
        assert!(!is_secret_key_name("private_key_path"));
        assert!(!is_secret_key_name("max_tokens"));
        assert!(!is_secret_key_name("tokenizer"));
    }

    #[test]
    fn describe_does_not_leak() {
        let v = "key sk_live_51HqLyjWDarjtT1zdp7dc9xQ4";
        let f = scan_str(None, v).unwrap();
        let d = f.describe(v);
        assert!(!d.contains("51HqLyj"), "{d}");
    }

    #[test]
    fn log_paths_with_a_replay_id_are_not_secrets() {
        let path = ".small-cache/logs/5a4775972ef32d43e98e5dff04cb229dfa9d0de5138ae337ab6bfcb3e0755469/commands/20261122T131333.837229773Z.txt";
        assert_eq!(scan_str(Some("command_ref"), path), None);
        let notes = format!("apply: exit code 0; output in {path}");
        assert_eq!(scan_str(Some("notes"), &notes), None);
        // A base64 secret with `/` inside is still found.
        let aws = "aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYq9Zt";
        assert!(scan_str(Some("notes"), aws).is_some());
    }
}
