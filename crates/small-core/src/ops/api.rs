//! The seed-001 API: manifest requests, their validation and replay (built in `api`).

pub use crate::api::manifest::{
    replay_id, validate_request, write_errors, ManifestRequest, RequestError, BODY_NOT_OBJECT,
};
pub use crate::api::replay;
