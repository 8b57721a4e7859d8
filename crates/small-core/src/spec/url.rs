//! Which URLs the link rule calls local, and the `http://` links a text holds. A link is
//! local when it parses as a URL whose host is exactly `localhost`, `127.0.0.1`, `0.0.0.0` or
//! `[::1]`, with no user part and a port of digits only (as v1.1.2 judges them).

/// The hosts of local links, exactly as written.
const LOCAL_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "0.0.0.0", "[::1]"];

/// Whether `url` (an `http://` URL) is a local link: it parses (no control character,
/// percent escapes of two hex digits in its path and fragment), has no user part, its host is
/// one of [`LOCAL_HOSTS`] and its port, when there is one, is digits (possibly none).
pub fn is_local_http(url: &str) -> bool {
    if url.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let Some(rest) = strip_scheme(url) else {
        return false;
    };
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    valid_escapes(fragment) && valid_escapes(path) && local_authority(authority)
}

/// `url` after `http://` (the scheme in any case).
fn strip_scheme(url: &str) -> Option<&str> {
    let head = url.get(..7)?;
    head.eq_ignore_ascii_case("http://").then(|| &url[7..])
}

/// A local host and an optional port of digits, without a user part.
fn local_authority(authority: &str) -> bool {
    if authority.contains('@') {
        return false;
    }
    let (host, port) = if authority.starts_with('[') {
        match authority.strip_prefix("[::1]") {
            Some(port) => ("[::1]", port),
            None => return false,
        }
    } else {
        authority.split_at(authority.rfind(':').unwrap_or(authority.len()))
    };
    LOCAL_HOSTS.contains(&host) && valid_port(port)
}

/// Empty, or `:` and digits (none is allowed: `http://localhost:/`).
fn valid_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Every `%` starts an escape of two hex digits.
fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().all(|(i, &c)| {
        c != b'%'
            || (b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// A captured command with its backtick-quoted local URL literals quoted with `'` instead,
/// so that a link ends where its literal does (`` `http://127.0.0.1:8080/x` `` is local, the
/// closing backtick is no part of its port); a literal whose port is a source expression,
/// `` `http://localhost:${port}/x` `` (an identifier, or a member path ending in `.port`, such
/// as `server.address().port`), reads as port 0. Any other literal is left as it is. Only for
/// the link check of an exact command bound to its proof (secrets are checked on the bytes).
pub fn quote_local_literals(command: &str) -> std::borrow::Cow<'_, str> {
    if !command.contains('`') {
        return std::borrow::Cow::Borrowed(command);
    }
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some((before, raw, after)) = next_literal(rest) {
        out.push_str(before);
        match local_literal(raw) {
            Some(url) => {
                out.push('\'');
                out.push_str(&url);
                out.push('\'');
            }
            None => {
                out.push('`');
                out.push_str(raw);
                out.push('`');
            }
        }
        rest = after;
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// The first `` `http://...` `` literal of `s` on one line: the text before it, its content
/// and the text after it.
fn next_literal(s: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(rel) = s[from..].find('`') {
        let open = from + rel;
        let body = &s[open + 1..];
        if strip_scheme(body).is_some() {
            if let Some(len) = body.find(['`', '\r', '\n']) {
                if body.as_bytes()[len] == b'`' {
                    return Some((&s[..open], &body[..len], &body[len + 1..]));
                }
            }
        }
        from = open + 1;
    }
    None
}

/// The local URL a literal's content stands for, if it is one.
fn local_literal(raw: &str) -> Option<String> {
    if is_local_http(raw) {
        return Some(raw.to_string());
    }
    let rest = strip_scheme(raw)?;
    let (host, rest) = LOCAL_HOSTS
        .iter()
        .find_map(|h| Some((*h, rest.strip_prefix(h)?.strip_prefix(":${")?)))?;
    let (expr, tail) = rest.split_once('}')?;
    if !port_expression(expr) || !(tail.is_empty() || tail.starts_with(['/', '?', '#'])) {
        return None;
    }
    let url = format!("http://{host}:0{tail}");
    is_local_http(&url).then_some(url)
}

/// `port`, `cfg.port`, `server.address().port`: an identifier, or identifiers joined by `.`
/// ending in `.port` (`.address()` allowed just before it).
fn port_expression(expr: &str) -> bool {
    if identifier(expr) {
        return true;
    }
    let Some(head) = expr.strip_suffix(".port") else {
        return false;
    };
    let head = head.strip_suffix(".address()").unwrap_or(head);
    head.split('.').all(identifier)
}

/// `[A-Za-z_$][A-Za-z0-9_$]*`.
fn identifier(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
}

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
    has_http(s) && insecure_urls(s).into_iter().any(|u| !is_local_http(u))
}

/// Whether `s` holds `http://`. This runs on every string of every entry, most of them short
/// and without a slash (timestamps and notes have colons, few values have slashes), so it
/// looks for the slashes first (one search) and checks the bytes around each one found.
pub(crate) fn has_http(s: &str) -> bool {
    let b = s.as_bytes();
    crate::yaml::find::each(b, b'/')
        .any(|i| i >= 5 && &b[i - 5..i] == b"http:" && b.get(i + 1) == Some(&b'/'))
}
