//! Kafka's variable-length integers: zig-zag encoded, then base-128 with a continuation bit
//! (protobuf's `sint32` / `sint64`). Record fields inside a v2 batch use them.

/// Appends `v` as a zig-zag varint.
pub fn put_varint(buf: &mut Vec<u8>, v: i32) {
    put_varlong(buf, i64::from(v));
}

/// Appends `v` as a zig-zag varlong.
pub fn put_varlong(buf: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.push((z as u8) | 0x80);
        z >>= 7;
    }
    buf.push(z as u8);
}

/// Bytes `v` takes as a zig-zag varlong.
pub fn varlong_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Reads a zig-zag varlong from the front of `buf`, returning it and the bytes it took; `None`
/// when `buf` ends first or the encoding is longer than ten bytes.
///
/// Inside a batch almost every varint is one or two bytes (deltas, lengths under 8 KiB), and a
/// fetch or a produce decodes several per record: those two take a branch each, not a loop.
#[inline]
pub fn get_varlong(buf: &[u8]) -> Option<(i64, usize)> {
    let b0 = *buf.first()?;
    if b0 < 0x80 {
        return Some((unzigzag(u64::from(b0)), 1));
    }
    match buf.get(1) {
        Some(&b1) if b1 < 0x80 => Some((unzigzag(u64::from(b0 & 0x7f) | u64::from(b1) << 7), 2)),
        _ => get_varlong_long(buf),
    }
}

fn get_varlong_long(buf: &[u8]) -> Option<(i64, usize)> {
    let mut z: u64 = 0;
    for (i, &b) in buf.iter().enumerate().take(10) {
        z |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((unzigzag(z), i + 1));
        }
    }
    None
}

/// Reads a zig-zag varint; `None` also when the value does not fit in 32 bits.
#[inline]
pub fn get_varint(buf: &[u8]) -> Option<(i32, usize)> {
    let (v, n) = get_varlong(buf)?;
    i32::try_from(v).ok().map(|v| (v, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        // From Kafka's ByteUtilsTest: zig-zag maps 0, -1, 1, -2 to 0, 1, 2, 3.
        for (v, bytes) in [
            (0i64, vec![0u8]),
            (-1, vec![1]),
            (1, vec![2]),
            (-2, vec![3]),
            (63, vec![0x7e]),
            (64, vec![0x80, 0x01]),
            (-65, vec![0x81, 0x01]),
        ] {
            let mut buf = Vec::new();
            put_varlong(&mut buf, v);
            assert_eq!(buf, bytes, "{v}");
            assert_eq!(get_varlong(&buf), Some((v, bytes.len())));
            assert_eq!(varlong_len(v), bytes.len());
        }
    }

    #[test]
    fn truncated_and_overlong_inputs_are_refused() {
        assert_eq!(get_varlong(&[0x80]), None);
        assert_eq!(get_varlong(&[0xff; 11]), None);
        assert_eq!(
            get_varint(&[0x80, 0x80, 0x80, 0x80, 0x10]),
            None,
            "2^31 does not fit"
        );
    }

    proptest! {
        #[test]
        fn round_trip(v in any::<i64>()) {
            let mut buf = Vec::new();
            put_varlong(&mut buf, v);
            prop_assert_eq!(get_varlong(&buf), Some((v, buf.len())));
            prop_assert_eq!(varlong_len(v), buf.len());
        }

        #[test]
        fn the_short_paths_agree_with_the_loop(bytes in prop::collection::vec(any::<u8>(), 0..12)) {
            prop_assert_eq!(get_varlong(&bytes), get_varlong_long(&bytes));
        }
    }
}
