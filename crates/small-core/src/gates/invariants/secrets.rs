//! INV1: no secrets in the artifacts (an error in strict mode, a warning otherwise). The
//! detectors themselves are in [`crate::gates::secrets`].

use super::{diag, display, severity};
use crate::diag::Diagnostic;
use crate::spec::consts::ArtifactKind;
use crate::yaml::Node;

/// INV1: secrets in one artifact.
pub fn check_secrets(kind: ArtifactKind, root: &Node, strict: bool, out: &mut Vec<Diagnostic>) {
    check_secrets_at(kind, root, "", strict, out);
}

/// INV1 on a node found at JSON pointer `prefix` (a progress entry while streaming).
pub fn check_secrets_at(
    kind: ArtifactKind,
    node: &Node,
    prefix: &str,
    strict: bool,
    out: &mut Vec<Diagnostic>,
) {
    for hit in crate::gates::secrets::scan_node(node, prefix) {
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
