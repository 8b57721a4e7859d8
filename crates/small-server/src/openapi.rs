//! The OpenAPI document served at `/openapi/small.v1.yaml`, embedded at build time from
//! `openapi/small.v1.yaml` (primitive store routes live between its marked sections).

/// The OpenAPI 3 document (YAML text).
pub fn document() -> &'static str {
    include_str!("../openapi/small.v1.yaml")
}
