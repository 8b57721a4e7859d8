//! `lint`: the protocol invariants, without the schemas.

use crate::diag::{self};
use crate::gates::check::{self};
use crate::ops::gate::*;
use crate::v2;

/// `lint`: the protocol invariants (no schemas).
pub fn lint(req: &GateRequest) -> GateOutcome {
    let loc = match locate(req.dir.as_deref()) {
        Ok(l) => l,
        Err(d) => return GateOutcome::stopped(*d, Vec::new(), None),
    };
    if let Some(c) = v2_checked(&loc) {
        return v2_outcome(c, v2::Stage::Graph);
    }
    let loaded = check::load(loc, None, &req.options);
    let ws = &loaded.ws;
    let mut diags = check::artifact_load_diagnostics(ws);
    match check::lint_stage(&loaded, &req.options) {
        Ok(d) => diags.extend(d),
        Err(e) => diags.push(listing_failed(ws, e)),
    }
    diag::sort(&mut diags);
    GateOutcome::finished(diags, loaded.ws)
}
