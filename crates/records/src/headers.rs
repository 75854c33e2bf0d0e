//! Record headers in the form a v2 record carries them: a zig-zag varint count, then for each a
//! varint key length, the key, a varint value length (−1 for null) and the value. The lab keeps
//! them as these bytes — a log stores them as they came, an export spells them out — and treats
//! "no headers" as an empty slice (a count of 0 is written for it).

use crate::varint::{get_varint, put_varint, put_varlong};

/// One header: a string key and a nullable value.
pub type Header<'a> = (&'a [u8], Option<&'a [u8]>);

/// `headers` encoded; empty when there are none.
pub fn encode<'a>(headers: impl ExactSizeIterator<Item = Header<'a>>) -> Vec<u8> {
    let mut out = Vec::new();
    if headers.len() == 0 {
        return out;
    }
    put_varint(&mut out, i32::try_from(headers.len()).unwrap_or(i32::MAX));
    for (k, v) in headers {
        put_varlong(&mut out, k.len() as i64);
        out.extend_from_slice(k);
        match v {
            Some(v) => {
                put_varlong(&mut out, v.len() as i64);
                out.extend_from_slice(v);
            }
            None => put_varlong(&mut out, -1),
        }
    }
    out
}

/// The headers `raw` holds, or `None` when it is not a whole, valid header section.
pub fn decode(raw: &[u8]) -> Option<Vec<Header<'_>>> {
    if raw.is_empty() {
        return Some(Vec::new());
    }
    let (count, mut at) = get_varint(raw)?;
    let count = usize::try_from(count).ok()?;
    // Each header takes two bytes at least: a count can never promise more than that.
    if count > raw.len() / 2 {
        return None;
    }
    let mut out = Vec::with_capacity(count);
    let field = |at: &mut usize, nullable: bool| -> Option<Option<&[u8]>> {
        let (len, n) = get_varint(&raw[*at..])?;
        *at += n;
        if len < 0 {
            return nullable.then_some(None);
        }
        let len = usize::try_from(len).ok()?;
        let bytes = raw.get(*at..at.checked_add(len)?)?;
        *at += len;
        Some(Some(bytes))
    };
    for _ in 0..count {
        let key = field(&mut at, false)??;
        let value = field(&mut at, true)?;
        out.push((key, value));
    }
    (at == raw.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_back() {
        let raw = encode([(&b"k"[..], Some(&b"v"[..])), (&b""[..], None)].into_iter());
        assert_eq!(
            decode(&raw),
            Some(vec![(&b"k"[..], Some(&b"v"[..])), (&b""[..], None)])
        );
        assert_eq!(encode(std::iter::empty()), Vec::<u8>::new());
        assert_eq!(decode(&[]), Some(Vec::new()));
        assert_eq!(decode(&[0x7f]), None, "a count the bytes cannot hold");
        assert_eq!(decode(&[2, 2, b'k']), None, "cut short");
    }
}
