//! LINK: no insecure `http://` links (an error in strict mode, a warning otherwise).
//!
//! A link is local (allowed in progress) when it parses as a URL whose host is exactly
//! `localhost`, `127.0.0.1`, `0.0.0.0` or `[::1]`, with no user part and a port of digits
//! only: `http://localhost.evil`, `http://localhost@evil.example` and `http://127.0.0.12` are
//! external (as v1.1.2 judges them; a prefix match took them for local).

use super::{diag, display, severity};
use crate::diag::Diagnostic;
use crate::json::pointer::escape as escape_pointer;
use crate::spec::consts::ArtifactKind;
use crate::spec::url::has_http;
pub use crate::spec::url::{has_external_http, insecure_urls, is_local_http, quote_local_literals};
use crate::yaml::{Node, Value};

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
            .find(|u| !(allow_local && is_local_http(u)))
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

    #[test]
    fn local_hosts_are_matched_exactly_with_a_port_of_digits() {
        for url in [
            "http://localhost",
            "http://localhost:3000/x?y#z",
            "http://127.0.0.1:8787/relay/v1/hooks/flush?wait=true",
            "http://0.0.0.0:80",
            "http://[::1]:3000/a",
            "http://[::1]",
            "http://localhost:/",
            "HTTP://localhost",
            "http://localhost/a%20b#c%2F",
            "http://localhost?q=%zz",
        ] {
            assert!(is_local_http(url), "{url}");
        }
        for url in [
            "http://localhost.evil",
            "http://127.0.0.1.evil",
            "http://0.0.0.0.evil",
            "http://localhost@evil.example",
            "http://evil@localhost",
            "http://[::1].evil",
            "http://127.0.0.12",
            "http://127.0.0.1:bad",
            "http://localhost%2eevil",
            "http://[::1%25zone]",
            "http://localhost:3000)",
            "http://localhost:8080:9090",
            "http://LOCALHOST",
            "http://localhost/%zz",
            "http://localhost#%4",
            "http://localhost/\u{1}",
            "http://127....",
            "https://localhost",
        ] {
            assert!(!is_local_http(url), "{url}");
        }
    }

    #[test]
    fn the_link_rule_uses_the_exact_hosts() {
        assert!(!has_external_http(
            "see http://localhost:3000/x and http://[::1]"
        ));
        assert!(has_external_http("curl http://localhost.evil.example/x"));
        assert!(has_external_http("curl http://127.0.0.1@evil.example/x"));
        let mut out = Vec::new();
        let doc = crate::yaml::parse_str(
            "a: http://localhost:1/x\nb: http://localhost.evil/x\n",
            &crate::yaml::Limits::default(),
        )
        .unwrap();
        check_links(ArtifactKind::Progress, &doc.root, true, &mut out);
        let paths: Vec<_> = out.iter().map(|d| d.path.clone().unwrap()).collect();
        assert_eq!(paths, ["/b"]);
    }

    #[test]
    fn backtick_local_literals_are_quoted_and_others_kept() {
        let q = |s: &str| quote_local_literals(s).into_owned();
        assert_eq!(
            q("curl `http://127.0.0.1:8080/x`"),
            "curl 'http://127.0.0.1:8080/x'"
        );
        assert_eq!(
            q("fetch(`http://127.0.0.1:${port}/health`)"),
            "fetch('http://127.0.0.1:0/health')"
        );
        for expr in ["port", "cfg.port", "srv.address().port", "$p_1", "a.b.port"] {
            let s = format!("`http://localhost:${{{expr}}}`");
            assert_eq!(q(&s), "'http://localhost:0'", "{expr}");
        }
        for kept in [
            "`http://localhost:${a.b}`",
            "`http://localhost:${address().port}`",
            "`http://localhost:${1port}`",
            "`http://localhost:${port}x`",
            "`http://localhost.evil:${port}`",
            "`http://example.com/`",
            "`http://localhost\n`",
            "`https://localhost`",
            "no literal http://localhost:1",
        ] {
            assert_eq!(q(kept), kept, "{kept:?}");
        }
        // Two literals, and an unclosed one before a closed one.
        assert_eq!(
            q("`http://localhost` `http://[::1]:${p}/a`"),
            "'http://localhost' 'http://[::1]:0/a'"
        );
        assert_eq!(q("` `http://0.0.0.0:1`"), "` 'http://0.0.0.0:1'");
        // A literal ends the link; an external one after it is still seen.
        assert!(!has_external_http(&q("x `http://127.0.0.1:${port}/a` y")));
        assert!(has_external_http(&q(
            "`http://localhost/a http://evil.example`"
        )));
        assert!(has_external_http("x `http://127.0.0.1:${port}/a` y"));
    }

    proptest::proptest! {
        #[test]
        fn has_http_is_contains(s in "([htp:/ a]{0,12}(http://)?){0,4}|\\PC{0,40}") {
            proptest::prop_assert_eq!(has_http(&s), s.contains("http://"));
        }
    }
}
