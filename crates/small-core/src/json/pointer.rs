//! JSON pointers (RFC 6901): escaping one reference token.

use std::borrow::Cow;

/// Escape a key for use as one JSON-pointer token: `~` as `~0`, `/` as `~1`. Borrows when
/// there is nothing to escape.
pub fn escape(key: &str) -> Cow<'_, str> {
    if key.contains(['~', '/']) {
        Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(key)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tilde_first_then_slash() {
        assert_eq!(super::escape("a/b~c"), "a~1b~0c");
        assert_eq!(super::escape("~1"), "~01");
        assert!(matches!(
            super::escape("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
