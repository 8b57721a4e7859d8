//! Searches for one or two bytes in the short stretches the fast walk and the rules look at
//! (the rest of a line, a quoted value, a string of an entry), done inline 16 bytes at a time.
//! A library search is as fast per byte but pays a dispatch and a set-up on every call; the
//! walk makes several calls per line of a few dozen bytes, where that overhead is most of the
//! cost. Past [`INLINE_BYTES`] the search is handed to `memchr`, so a long line costs what it
//! always did.

/// How far the inline search goes before handing the rest to `memchr`.
const INLINE_BYTES: usize = 64;

/// The offset of the first `a` or `b` in `hay`.
#[inline(always)]
pub(crate) fn two(hay: &[u8], a: u8, b: u8) -> Option<usize> {
    let mut i = 0;
    while i + 16 <= hay.len() {
        if i >= INLINE_BYTES {
            return memchr::memchr2(a, b, &hay[i..]).map(|k| i + k);
        }
        let m = block::mask(&hay[i..i + 16], a, b);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    let rest = hay.len() - i;
    if rest == 0 {
        return None;
    }
    // The last bytes: a block ending with the text, its bytes already searched masked off
    // (or, in a text shorter than a block, the text copied into one).
    let m = if hay.len() >= 16 {
        block::mask(&hay[hay.len() - 16..], a, b) >> (16 - rest)
    } else {
        let mut tail = [0u8; 16];
        tail[..rest].copy_from_slice(hay);
        block::mask(&tail, a, b) & ((1 << rest) - 1)
    };
    (m != 0).then(|| i + m.trailing_zeros() as usize)
}

/// The offset of the first `a` in `hay`.
#[inline(always)]
pub(crate) fn one(hay: &[u8], a: u8) -> Option<usize> {
    two(hay, a, a)
}

/// The offsets of every `a` in `hay`, in order.
pub(crate) fn each(hay: &[u8], a: u8) -> impl Iterator<Item = usize> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        let i = from + one(hay.get(from..)?, a)?;
        from = i + 1;
        Some(i)
    })
}

/// What a line is made of, for the fast walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineBytes {
    /// Printable ASCII only.
    Ascii,
    /// Bytes past ASCII too, and no ASCII control byte.
    Wide,
    /// An ASCII control byte (a tab, NUL, ESC, DEL, ...): the walk leaves the text to the
    /// general parser, which knows where YAML allows which of them.
    Control,
}

/// Classify `line` (without its line break) a word at a time: as fast as a test for ASCII,
/// which the walk makes on every line anyway.
#[inline]
pub(crate) fn line_bytes(line: &[u8]) -> LineBytes {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Whether any byte of a word of ASCII bytes is below 0x20 or is 0x7f. Borrows between
    // bytes can only add flags after a flagged byte, never hide one, so the answer is exact.
    let control_in = |w: u64| {
        let below = w.wrapping_sub(ONES * 0x20) & !w;
        let d = w ^ (ONES * 0x7f);
        let del = d.wrapping_sub(ONES) & !d;
        (below | del) & HIGH != 0
    };
    let control = |b: u8| b < 0x20 || b == 0x7f;
    let mut wide = false;
    let mut chunks = line.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        if w & HIGH != 0 {
            wide = true;
            if c.iter().any(|&b| control(b)) {
                return LineBytes::Control;
            }
        } else if control_in(w) {
            return LineBytes::Control;
        }
    }
    for &b in chunks.remainder() {
        if control(b) {
            return LineBytes::Control;
        }
        wide |= b >= 0x80;
    }
    if wide {
        LineBytes::Wide
    } else {
        LineBytes::Ascii
    }
}

/// Bit `i` set when byte `i` of a 16-byte block is `a` or `b`.
#[cfg(target_arch = "x86_64")]
mod block {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };

    #[inline(always)]
    #[allow(unused_unsafe)]
    pub(super) fn mask(block: &[u8], a: u8, b: u8) -> u32 {
        assert!(block.len() >= 16);
        // SAFETY: the load reads 16 bytes of `block` (checked above) and needs no alignment;
        // SSE2 is part of every x86-64 target, so its intrinsics are always available.
        unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            let hit = _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(a as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)),
            );
            _mm_movemask_epi8(hit) as u32 & 0xffff
        }
    }
}

/// The portable block: byte by byte.
#[cfg(not(target_arch = "x86_64"))]
mod block {
    #[inline(always)]
    pub(super) fn mask(block: &[u8], a: u8, b: u8) -> u32 {
        block[..16]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &c)| m | (u32::from(c == a || c == b) << i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn line_bytes_agrees_with_a_byte_by_byte_look(line in proptest::collection::vec(prop_oneof![0x20u8..0x7f, any::<u8>()], 0..40)) {
            let control = line.iter().any(|&b| b < 0x20 || b == 0x7f);
            let wide = line.iter().any(|&b| b >= 0x80);
            let want = if control { LineBytes::Control } else if wide { LineBytes::Wide } else { LineBytes::Ascii };
            prop_assert_eq!(line_bytes(&line), want);
        }
    }

    #[test]
    fn finds_what_memchr_finds_at_every_length_and_place() {
        // Every length around the block size and the inline limit, the byte at every place
        // (and nowhere), with the other byte after it.
        for len in 0..=INLINE_BYTES + 40 {
            for at in 0..=len {
                let mut hay = vec![b'x'; len];
                if at < len {
                    hay[at] = b'"';
                }
                if at + 3 < len {
                    hay[at + 3] = b'\\';
                }
                assert_eq!(one(&hay, b'"'), memchr::memchr(b'"', &hay), "{len} {at}");
                assert_eq!(
                    two(&hay, b'\\', b'"'),
                    memchr::memchr2(b'\\', b'"', &hay),
                    "{len} {at}"
                );
                assert_eq!(one(&hay, b'\n'), None);
            }
        }
    }

    proptest! {
        #[test]
        fn agrees_with_memchr(hay in proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(b'\n'), Just(b'"'), Just(0u8), Just(0xffu8)], 0..200)
        ) {
            prop_assert_eq!(one(&hay, b'\n'), memchr::memchr(b'\n', &hay));
            prop_assert_eq!(one(&hay, 0), memchr::memchr(0, &hay));
            prop_assert_eq!(two(&hay, b'"', 0xff), memchr::memchr2(b'"', 0xff, &hay));
            prop_assert_eq!(
                each(&hay, b'"').collect::<Vec<_>>(),
                memchr::memchr_iter(b'"', &hay).collect::<Vec<_>>()
            );
        }
    }
}
