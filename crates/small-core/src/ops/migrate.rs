//! `migrate`: a v1 workspace to the 2.0.0 session profile (built in `migrate`).

pub use crate::migrate::{apply, preview_with_mode, recover, MigrateError, Plan, PROFILE_VERSION};
