//! Settings read from the environment, checked the same way by every command.

use crate::error::CliError;

/// The environment variable that selects the progress mode (seed 000, invariant 7).
pub const PROGRESS_MODE_ENV: &str = "SMALL_PROGRESS_MODE";

/// Whether `SMALL_PROGRESS_MODE` selects audit mode. Unset or empty means signal (the
/// default); `signal` and `audit` are accepted in any case; anything else is refused (exit 2)
/// rather than silently read as signal.
pub fn progress_mode_is_audit() -> Result<bool, CliError> {
    let Some(raw) = std::env::var_os(PROGRESS_MODE_ENV) else {
        return Ok(false);
    };
    let value = raw.to_string_lossy();
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "signal" => Ok(false),
        "audit" => Ok(true),
        _ => Err(CliError::usage(format!(
            "{PROGRESS_MODE_ENV}={value:?} is not a progress mode; use `signal` (the default) or `audit`"
        ))),
    }
}
