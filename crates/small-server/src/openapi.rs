//! The OpenAPI document served at `/openapi/small.v1.yaml`, embedded at build time from
//! `openapi/small.v1.yaml`. The file's notes for contributors (its leading comment block and
//! the marker lines around the primitive store routes) are left out of the served document.

use std::sync::OnceLock;

const SOURCE: &str = include_str!("../openapi/small.v1.yaml");

/// The OpenAPI 3 document (YAML text) as served. Its `servers` entry is relative (`/`), so
/// clients resolve it against wherever the document was fetched from.
pub fn document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut out = String::with_capacity(SOURCE.len());
        let mut preamble = true;
        for line in SOURCE.lines() {
            let t = line.trim_start();
            if preamble && (t.starts_with('#') || t.is_empty()) {
                continue;
            }
            preamble = false;
            if t.starts_with("# --- BEGIN primitives") || t.starts_with("# --- END primitives") {
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_document_has_no_contributor_notes_and_a_relative_server() {
        let doc = document();
        assert!(doc.starts_with("openapi: 3."), "{}", &doc[..80]);
        assert!(!doc.contains("ONLY between"));
        assert!(!doc.contains("BEGIN primitives") && !doc.contains("END primitives"));
        assert!(!doc.contains("127.0.0.1"));
        assert!(doc.contains("servers:\n  - url: /\n"));
        // Everything else is kept: the routes on both sides of the markers.
        assert!(doc.contains("/protocol/small/v1:") && doc.contains("/small/v1/schemas"));
    }
}
