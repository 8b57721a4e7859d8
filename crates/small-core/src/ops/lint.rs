//! `lint`: the protocol invariants, without the schemas.

use crate::diag::{self};
use crate::gates::check::{self};
use crate::ops::gate::*;

/// `lint`: the protocol invariants (no schemas).
pub fn lint(req: &GateRequest) -> GateOutcome {
    let loc = match locate(req.dir.as_deref()) {
        Ok(l) => l,
        Err(d) => return GateOutcome::stopped(*d, Vec::new(), None),
    };
    loc.backend().lint(loc, req)
}

/// [`lint`] of a v1 workspace.
pub(super) fn lint_v1(loc: crate::workspace::Location, req: &GateRequest) -> GateOutcome {
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

/// The verdict line after lint's findings (`None` when a fatal problem stopped it).
pub fn summary(out: &GateOutcome) -> Option<crate::ops::report::Said> {
    use crate::ops::report::{count, Said};
    if out.fatal.is_some() {
        return None;
    }
    Some(match out.counts() {
        (0, 0) => Said::Info("All invariants satisfied".into()),
        (0, w) => Said::Info(format!(
            "All invariants satisfied ({})",
            count(w, "warning")
        )),
        (e, 0) => Said::Error(format!("lint failed: {}", count(e, "error"))),
        (e, w) => Said::Error(format!(
            "lint failed: {}, {}",
            count(e, "error"),
            count(w, "warning")
        )),
    })
}
