//! `verify`: schemas, invariants and the verify-only rules, reported together.

use crate::diag::{self, Diagnostic};
use crate::gates::check::{self};
use crate::ops::gate::*;

/// `verify`: schemas, invariants and the verify-only rules, all reported together.
pub fn verify(req: &GateRequest) -> GateOutcome {
    let loc = match locate(req.dir.as_deref()) {
        Ok(l) => l,
        Err(d) => return GateOutcome::stopped(*d, Vec::new(), None),
    };
    loc.backend().verify(loc, req)
}

/// [`verify`] of a v1 workspace.
pub(super) fn verify_v1(loc: crate::workspace::Location, req: &GateRequest) -> GateOutcome {
    let schemas = match schemas(req.spec_dir.as_deref()) {
        Ok(s) => s,
        Err(d) => return GateOutcome::stopped(*d, Vec::new(), None),
    };
    let opts = &req.options;
    let loaded = check::load(loc, Some(&schemas), opts);
    let mut diags = check::validate_stage(&loaded, &schemas);
    match check::lint_stage(&loaded, opts) {
        Ok(d) => diags.extend(d),
        Err(e) => diags.push(listing_failed(&loaded.ws, e)),
    }
    match check::verify_stage(&loaded, &schemas, opts) {
        Ok(d) => diags.extend(d),
        Err(e) => {
            diag::sort(&mut diags);
            let d = Diagnostic::error("since", e.to_string()).with_help(
                "pass a commit, tag or branch of the repository that holds the workspace",
            );
            return GateOutcome::stopped(d, diags, Some(loaded.ws));
        }
    }
    diag::sort(&mut diags);
    diags.dedup();
    GateOutcome::finished(diags, loaded.ws)
}

/// The verdict line after verify's findings (`None` when a fatal problem stopped it).
pub fn summary(out: &GateOutcome) -> Option<crate::ops::report::Said> {
    use crate::ops::report::{count, Said};
    if out.fatal.is_some() {
        return None;
    }
    Some(match out.counts() {
        (0, 0) => Said::Info("Verification passed".into()),
        (0, w) => Said::Info(format!("Verification passed ({})", count(w, "warning"))),
        (e, _) => Said::Error(format!("Verification failed: {}", count(e, "error"))),
    })
}
