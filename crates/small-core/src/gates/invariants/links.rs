//! LINK: no insecure `http://` links (an error in strict mode, a warning otherwise).

use super::{diag, display, escape_pointer, severity};
use crate::diag::Diagnostic;
use crate::spec::consts::ArtifactKind;
use crate::yaml::{Node, Value};

const LOCAL_HTTP: [&str; 4] = [
    "http://localhost",
    "http://127.0.0.1",
    "http://0.0.0.0",
    "http://[::1]",
];

/// The first `http://` URL with a host in a string (IPv6 brackets kept together).
pub fn insecure_urls(s: &str) -> Vec<&str> {
    let mut urls = Vec::new();
    let mut from = 0;
    while let Some(rel) = s[from..].find("http://") {
        let start = from + rel;
        let rest = &s[start..];
        let mut end = rest.len();
        let mut bracket = false;
        for (i, c) in rest.char_indices() {
            match c {
                '[' => bracket = true,
                ']' => bracket = false,
                ' ' | '\t' | '\n' | '\r' | '"' | '\'' | '>' if !bracket => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let url = &rest[..end];
        let host = &url["http://".len()..];
        if !host.is_empty() && !host.starts_with('/') {
            urls.push(url);
        }
        from = start + "http://".len();
    }
    urls
}

/// Whether `s` holds an `http://` link that is not local (the rule for progress, where
/// localhost and loopback addresses are allowed).
pub fn has_external_http(s: &str) -> bool {
    has_http(s)
        && insecure_urls(s)
            .into_iter()
            .any(|u| !LOCAL_HTTP.iter().any(|l| u.starts_with(l)))
}

/// LINK: non-local `http://` links (localhost allowed in progress only, as the reference).
pub fn check_links(kind: ArtifactKind, root: &Node, strict: bool, out: &mut Vec<Diagnostic>) {
    check_links_at(kind, root, &String::new, strict, out);
}

/// LINK on a node found at the JSON pointer `prefix` gives (asked for only when the node
/// holds an `http://` link).
pub fn check_links_at(
    kind: ArtifactKind,
    node: &Node,
    prefix: &dyn Fn() -> String,
    strict: bool,
    out: &mut Vec<Diagnostic>,
) {
    if !any_string(node, &has_http) {
        return;
    }
    let allow_local = kind == ArtifactKind::Progress;
    let mut path = prefix();
    walk_strings(node, &mut path, &mut |p, node, s| {
        if !has_http(s) {
            return;
        }
        if let Some(url) = insecure_urls(s)
            .into_iter()
            .find(|u| !(allow_local && LOCAL_HTTP.iter().any(|l| u.starts_with(l))))
        {
            let mut d = diag(
                "LINK",
                kind,
                Some(node.span),
                p,
                format!("insecure link {url} at {}", display(p)),
            )
            .with_help(if allow_local {
                "use https:// (http://localhost and loopback addresses are fine in progress)"
            } else {
                "use https://"
            });
            d.severity = severity(strict);
            out.push(d);
        }
    });
}

/// Whether `s` holds `http://`. This runs on every string of every entry, most of them short
/// and without a slash (timestamps and notes have colons, few values have slashes), so it
/// looks for the slashes first (one search) and checks the bytes around each one found.
fn has_http(s: &str) -> bool {
    let b = s.as_bytes();
    crate::yaml::find::each(b, b'/')
        .any(|i| i >= 5 && &b[i - 5..i] == b"http:" && b.get(i + 1) == Some(&b'/'))
}

/// Whether some string in `node` satisfies `f` (no pointers built: most nodes have no link).
fn any_string(node: &Node, f: &dyn Fn(&str) -> bool) -> bool {
    match &node.value {
        Value::Str(s) => f(s),
        Value::Seq(items) => items.iter().any(|it| any_string(it, f)),
        Value::Map(entries) => entries.iter().any(|e| any_string(&e.value, f)),
        _ => false,
    }
}

fn walk_strings(node: &Node, path: &mut String, f: &mut dyn FnMut(&str, &Node, &str)) {
    match &node.value {
        Value::Str(s) => f(path, node, s),
        Value::Seq(items) => {
            for (i, it) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk_strings(it, path, f);
                path.truncate(len);
            }
        }
        Value::Map(entries) => {
            for e in entries {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(&e.key));
                walk_strings(&e.value, path, f);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_http_finds_the_scheme_anywhere() {
        for (s, want) in [
            ("http://x", true),
            ("see http://example.com/a", true),
            ("a: b, then http://", true),
            ("https://example.com", false),
            ("http:/x", false),
            ("HTTP://x", false),
            ("ttp://x", false),
            ("http:", false),
            (":http://", true),
            ("", false),
        ] {
            assert_eq!(has_http(s), want, "{s:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn has_http_is_contains(s in "([htp:/ a]{0,12}(http://)?){0,4}|\\PC{0,40}") {
            proptest::prop_assert_eq!(has_http(&s), s.contains("http://"));
        }
    }
}
