//! The one JSON error shape every error response uses:
//! `{"error": "<code>", "message": "<text>", "status": <http status>, "position"?: {line, column, offset}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use small_core::ops::formats::canonical::{self, JsString};

/// An API error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    /// A stable machine-readable code (`invalid_json`, `unsupported_media_type`, ...).
    pub code: &'static str,
    pub message: String,
    /// Where in the request body the problem is (malformed JSON).
    pub position: Option<(usize, usize, usize)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            position: None,
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// The error for a request body that is not JSON.
    pub fn from_parse(e: &canonical::ParseError) -> Self {
        let (code, what) = match e.kind {
            canonical::ParseErrorKind::Encoding => {
                ("invalid_encoding", "request body is not UTF-8")
            }
            canonical::ParseErrorKind::Syntax => ("invalid_json", "request body is not valid JSON"),
            canonical::ParseErrorKind::TooDeep => ("too_deep", "request body is nested too deeply"),
        };
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code,
            message: format!(
                "{what}: {} at line {}, column {} (byte {})",
                e.message, e.line, e.column, e.offset
            ),
            position: Some((e.line, e.column, e.offset)),
        }
    }

    /// The JSON body text.
    pub fn body(&self) -> String {
        error_body(self.status, self.code, &self.message, self.position)
    }
}

/// Build the JSON error body.
pub fn error_body(
    status: StatusCode,
    code: &str,
    message: &str,
    position: Option<(usize, usize, usize)>,
) -> String {
    // An error that quotes the request (a path, a field value) could quote a credential:
    // masked as every front end masks quoted text.
    let message = small_core::ops::secrets::redact(message);
    let mut out = Vec::with_capacity(96 + message.len());
    out.extend_from_slice(b"{\"error\":");
    canonical::write_json_string_bytes(&mut out, &JsString::from(code));
    out.extend_from_slice(b",\"message\":");
    canonical::write_json_string_bytes(&mut out, &JsString::from(&*message));
    out.extend_from_slice(format!(",\"status\":{}", status.as_u16()).as_bytes());
    if let Some((line, column, offset)) = position {
        out.extend_from_slice(
            format!(",\"position\":{{\"line\":{line},\"column\":{column},\"offset\":{offset}}}")
                .as_bytes(),
        );
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, self.body()).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        resp
    }
}

/// Stable code for a status produced outside our handlers (framework or middleware).
pub fn code_for_status(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        404 => "not_found",
        405 => "method_not_allowed",
        408 => "request_timeout",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        422 => "unprocessable",
        503 => "unavailable",
        s if s >= 500 => "internal_error",
        _ => "error",
    }
}
