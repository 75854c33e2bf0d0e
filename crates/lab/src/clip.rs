//! Cutting what a client controls down to a size a response can carry: a key, a value, a group
//! id or an error text may be mebibytes long, and the page shows a window of them.

use offsetlab_engine::record::{RecordBytes, Shown};
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

/// A sink row as the page shows it: its key and value as text ([`Shown`]: bytes that are not
/// text as hex, a Schema Registry payload with its schema id), clipped to [`MAX_FIELD_BYTES`].
pub fn clip_row(mut row: SinkRow) -> SinkRow {
    let shown = |b: &RecordBytes| -> RecordBytes {
        match b.shown() {
            Shown::Text(_) if b.len() <= MAX_FIELD_BYTES => b.clone(),
            shown => clip(&shown_clipped(shown, MAX_FIELD_BYTES), MAX_FIELD_BYTES)
                .into_owned()
                .into(),
        }
    };
    row.key = shown(&row.key);
    row.value = shown(&row.value);
    row
}

/// [`Shown`]'s text for at most about `max` bytes of output (hex takes two digits a byte).
fn shown_clipped(shown: Shown<'_>, max: usize) -> String {
    match shown {
        Shown::Text(s) => s.to_string(),
        Shown::Framed { schema_id, payload } => Shown::Framed {
            schema_id,
            payload: &payload[..payload.len().min(max / 2)],
        }
        .to_string(),
        Shown::Binary(b) => Shown::Binary(&b[..b.len().min(max / 2)]).to_string(),
    }
}

/// A key or a value as the page's record window carries it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShownField {
    /// The text; for other bytes, their hex digits (of the payload behind a Schema Registry
    /// framing); cut to [`MAX_FIELD_BYTES`].
    pub text: String,
    /// `hex` for bytes that are not text, `schema-registry` for the registry's framing; absent
    /// for text.
    pub form: Option<&'static str>,
    /// The schema id of a Schema-Registry-framed key or value.
    pub schema_id: Option<u32>,
    /// Whether `text` is cut.
    pub cut: bool,
}

/// `b` as the page shows it, at most about `max` bytes of text.
pub fn shown_field(b: &[u8], max: usize) -> ShownField {
    let hex = |b: &[u8]| offsetlab_engine::record::record_bytes::hex(&b[..b.len().min(max / 2)]);
    match offsetlab_engine::record::record_bytes::shown(b) {
        Shown::Text(_) => {
            let (text, cut) = clipped(b, max);
            ShownField {
                text,
                form: None,
                schema_id: None,
                cut,
            }
        }
        Shown::Framed { schema_id, payload } => ShownField {
            text: hex(payload),
            form: Some("schema-registry"),
            schema_id: Some(schema_id),
            cut: payload.len() > max / 2,
        },
        Shown::Binary(b) => ShownField {
            text: hex(b),
            form: Some("hex"),
            schema_id: None,
            cut: b.len() > max / 2,
        },
    }
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
