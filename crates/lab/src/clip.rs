//! Cutting what a client controls down to a size a response can carry: a key, a value, a group
//! id or an error text may be mebibytes long, and the page shows a window of them.

use offsetlab_engine::sink::SinkRow;

/// The most of a key or a value `GET /api/records` carries: a window of a thousand records of
/// a mebibyte each would be a gigabyte of JSON. `GET /api/record` hands out one record whole.
pub const MAX_FIELD_BYTES: usize = 4096;

/// The first `max` bytes of `b` as text (cut at a character boundary), and whether it was cut.
pub fn clipped(b: &[u8], max: usize) -> (String, bool) {
    if b.len() <= max {
        return (String::from_utf8_lossy(b).into_owned(), false);
    }
    let head = &b[..max];
    let end = match std::str::from_utf8(head) {
        Ok(_) => max,
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => max,
    };
    (String::from_utf8_lossy(&head[..end]).into_owned(), true)
}

/// A sink row with its key and value clipped to [`MAX_FIELD_BYTES`].
pub fn clip_row(mut row: SinkRow) -> SinkRow {
    if row.value.len() > MAX_FIELD_BYTES {
        row.value = clip(&row.value, MAX_FIELD_BYTES).into_owned();
    }
    if row.key.len() > MAX_FIELD_BYTES {
        row.key = clip(&row.key, MAX_FIELD_BYTES).into_owned();
    }
    row
}

/// `s` clipped to `max` bytes at a character boundary, with `…` when cut.
pub fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}…", &s[..end]))
}
