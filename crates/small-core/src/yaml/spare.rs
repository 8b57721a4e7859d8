//! Buffers of items already checked, handed back for the next ones. A long log is read as
//! one small mapping per entry, each with a handful of strings; building them anew for every
//! entry costs an allocation and a free per string, about a tenth of a gate's time. The walk
//! takes its buffers from here; whoever is done with an item gives it back with [`recycle`].
//! Each thread keeps its own few spares (bounded in number and size), so nothing is shared.

use std::cell::RefCell;

use super::{Entry, Node, Value};

/// Spare strings and item lists kept per thread, at most.
const KEEP: usize = 32;
/// A string longer than this is freed, not kept.
const KEEP_BYTES: usize = 256;

thread_local! {
    static STRINGS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static ITEMS: RefCell<Vec<Vec<Entry>>> = const { RefCell::new(Vec::new()) };
}

/// A string holding `s`, in a spare buffer when there is one.
pub(super) fn string(s: &str) -> String {
    match STRINGS.with_borrow_mut(Vec::pop) {
        Some(mut t) => {
            t.clear();
            t.push_str(s);
            t
        }
        None => s.to_string(),
    }
}

/// An empty list for an item's fields, with room for `n`.
pub(super) fn item(n: usize) -> Vec<Entry> {
    match ITEMS.with_borrow_mut(Vec::pop) {
        Some(v) if v.capacity() >= n => v,
        _ => Vec::with_capacity(n),
    }
}

/// Give back a checked item: a mapping's list and its string values are kept for the next
/// items; anything else is simply dropped.
pub fn recycle(node: Node) {
    let Value::Map(mut entries) = node.value else {
        return;
    };
    STRINGS.with_borrow_mut(|spare| {
        for e in entries.drain(..) {
            if let Value::Str(s) = e.value.value {
                if spare.len() < KEEP && s.capacity() <= KEEP_BYTES {
                    spare.push(s);
                }
            }
        }
    });
    ITEMS.with_borrow_mut(|spare| {
        if spare.len() < KEEP {
            spare.push(entries);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse_str, Limits};

    #[test]
    fn recycled_buffers_come_back_empty_and_bounded() {
        let doc = parse_str("a: \"one\"\nb: \"two\"\nc: 3\n", &Limits::default()).unwrap();
        let before = STRINGS.with_borrow(Vec::len);
        recycle(doc.root);
        assert_eq!(STRINGS.with_borrow(Vec::len), (before + 2).min(KEEP));
        let s = string("fresh");
        assert_eq!(s, "fresh");
        let v = item(4);
        assert!(v.is_empty() && v.capacity() >= 4);
        // Long strings are not kept, and the spares never exceed the bound.
        let long = format!("x: \"{}\"\n", "y".repeat(KEEP_BYTES + 1));
        let n = STRINGS.with_borrow(Vec::len);
        recycle(parse_str(&long, &Limits::default()).unwrap().root);
        assert_eq!(STRINGS.with_borrow(Vec::len), n);
        for _ in 0..KEEP + 5 {
            recycle(parse_str("a: \"s\"\n", &Limits::default()).unwrap().root);
        }
        assert!(STRINGS.with_borrow(Vec::len) <= KEEP);
        assert!(ITEMS.with_borrow(Vec::len) <= KEEP);
    }
}
