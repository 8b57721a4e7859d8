//! Reading request bodies: media type (415), size limit (413), then the raw bytes.

use crate::error::ApiError;
use axum::body::{Body, HttpBody};
use axum::http::{header, HeaderMap, StatusCode};
use std::pin::Pin;

/// True when the `Content-Type` is `application/json` or a `+json` type (parameters allowed).
pub fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Check the media type and read the whole body, at most `limit` bytes.
pub async fn read_json_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    if !is_json_content_type(headers) {
        let got = headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_else(|| "none".into());
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("request body must be sent as Content-Type: application/json (got {got})"),
        ));
    }
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("request body is larger than the limit of {limit} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(declared.map_or(256, |n| n as usize));
    let mut body = body;
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("could not read the request body: {e}"),
            )
        })?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf)
}
