//! What the specification fixes: file names, artifact kinds, versions, timestamp and
//! replay-ID formats.

pub mod bookkeeping;
pub mod command;
pub mod consts;
pub mod facts;
pub mod model;
pub mod next;
pub mod plan;
pub mod queue;
pub mod replayid;
pub mod timestamp;
pub mod url;

/// `str::trim`, without looking at characters when the text starts and ends with a visible
/// ASCII byte (none of those is white space), as nearly every value in a log does: the rules
/// trim several values of every entry, and `str::trim` decodes the characters at both ends.
#[inline]
pub fn trim(s: &str) -> &str {
    let visible = |b: Option<&u8>| b.is_some_and(|&b| (0x21..0x7f).contains(&b));
    if visible(s.as_bytes().first()) && visible(s.as_bytes().last()) {
        s
    } else {
        s.trim()
    }
}

#[cfg(test)]
mod tests {
    /// The same as `str::trim` on every ASCII byte and on Unicode white space at either end.
    #[test]
    fn trim_is_str_trim() {
        let mut ends: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        ends.extend(["\u{85}", "\u{a0}", "\u{2028}", "\u{3000}", "é", ""].map(String::from));
        for a in &ends {
            for z in &ends {
                for mid in ["", "x", " y ", "\u{a0}"] {
                    let s = format!("{a}{mid}{z}");
                    assert_eq!(super::trim(&s), s.trim(), "{s:?}");
                }
            }
        }
    }
}
