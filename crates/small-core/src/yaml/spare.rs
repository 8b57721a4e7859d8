//! Items already checked, handed back for the next ones. A long log is read as one small
//! mapping per entry, each with a handful of strings; building them anew for every entry
//! costs an allocation and a free per string, about a tenth of a gate's time. Whoever is done
//! with an item gives it back with [`recycle`]; the walk takes the list back with its fields
//! and writes the next item over them, each string into the buffer of the one before it.
//! Each thread keeps its own few spares (bounded in number and size), so nothing is shared.

use std::cell::RefCell;

use super::{Entry, Node, Value};

/// Spare item lists kept per thread, at most.
const KEEP: usize = 32;
/// A string value longer than this is freed, not kept.
const KEEP_BYTES: usize = 256;

thread_local! {
    static ITEMS: RefCell<Vec<Vec<Entry>>> = const { RefCell::new(Vec::new()) };
}

/// A list for an item's fields, with room for `n`: an earlier item's list when there is one,
/// still holding its fields (the walk writes over them, reusing their strings, and cuts off
/// what it did not write).
pub(super) fn item(n: usize) -> Vec<Entry> {
    match ITEMS.with_borrow_mut(Vec::pop) {
        Some(v) if v.capacity() >= n => v,
        _ => Vec::with_capacity(n),
    }
}

/// Give back a checked item: a mapping's list is kept whole for the next items, its short
/// string values in place; anything else in it (a long string, a list) is freed now, so
/// that what is kept stays small.
pub fn recycle(node: Node) {
    let Value::Map(mut entries) = node.value else {
        return;
    };
    for e in &mut entries {
        let keep = matches!(&e.value.value, Value::Str(s) if s.capacity() <= KEEP_BYTES);
        if !keep {
            e.value.value = Value::Null;
        }
    }
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
    fn recycled_items_keep_short_strings_and_are_bounded() {
        let text = format!(
            "a: \"one\"\nb: 3\nc: \"{}\"\nd:\n  - x\n",
            "y".repeat(KEEP_BYTES + 1)
        );
        let doc = parse_str(&text, &Limits::default()).unwrap();
        ITEMS.with_borrow_mut(Vec::clear);
        recycle(doc.root);
        let kept = item(0);
        // The list comes back whole; a short string stays, anything else is dropped.
        let values: Vec<&Value> = kept.iter().map(|e| &e.value.value).collect();
        assert_eq!(
            values,
            [
                &Value::Str("one".into()),
                &Value::Null,
                &Value::Null,
                &Value::Null
            ]
        );
        // Without spares, a new list with room for what is asked.
        let v = item(4);
        assert!(v.is_empty() && v.capacity() >= 4);
        for _ in 0..KEEP + 5 {
            recycle(parse_str("a: \"s\"\n", &Limits::default()).unwrap().root);
        }
        assert_eq!(ITEMS.with_borrow(Vec::len), KEEP);
        // Not a mapping: nothing is kept.
        ITEMS.with_borrow_mut(Vec::clear);
        recycle(parse_str("- 1\n", &Limits::default()).unwrap().root);
        assert_eq!(ITEMS.with_borrow(Vec::len), 0);
    }
}
