//! INV1: no secrets in the artifacts (an error in strict mode, a warning otherwise). The
//! detectors themselves are in [`crate::secrets`].

use super::{diag, display, severity};
use crate::diag::Diagnostic;
use crate::spec::consts::ArtifactKind;
use crate::yaml::Node;

/// INV1: secrets in one artifact.
pub fn check_secrets(kind: ArtifactKind, root: &Node, strict: bool, out: &mut Vec<Diagnostic>) {
    check_secrets_at(kind, root, &String::new, strict, out);
}

/// INV1 on a node found at the JSON pointer `prefix` gives (a progress entry while
/// streaming); it is asked for only when something is found.
pub fn check_secrets_at(
    kind: ArtifactKind,
    node: &Node,
    prefix: &dyn Fn() -> String,
    strict: bool,
    out: &mut Vec<Diagnostic>,
) {
    let hits = crate::secrets::scan_node(node, "");
    if hits.is_empty() {
        return;
    }
    let prefix = prefix();
    for mut hit in hits {
        hit.path.insert_str(0, &prefix);
        let mut d = diag(
            "INV1",
            kind,
            Some(hit.span),
            &hit.path,
            format!("possible secret at {}: {}", display(&hit.path), hit.what),
        )
        .with_help("remove it and rotate the credential; keep secrets outside .small/")
        .with_secret(hit.kind, hit.masked);
        d.severity = severity(strict);
        out.push(d);
    }
}
