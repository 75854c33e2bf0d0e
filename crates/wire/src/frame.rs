//! Length-prefixed frames.
//!
//! ```text
//! size: int32 (big-endian, bytes that follow)
//! body: `size` bytes (a request header, then the request)
//! ```

use bytes::BytesMut;

/// Kafka's `socket.request.max.bytes` default: 100 MiB.
pub const DEFAULT_MAX_FRAME: usize = 100 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {size} bytes exceeds the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error("negative frame size {0}")]
    Negative(i32),
}

/// Takes one whole frame's body off the front of `buf`, or `None` until it has arrived. The size
/// is checked against `max` first, so a hostile size costs nothing: the caller never reserves
/// more than `min(size, max)` bytes to read the rest.
pub fn split_frame(buf: &mut BytesMut, max: usize) -> Result<Option<BytesMut>, FrameError> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(None);
    };
    let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let size = usize::try_from(size).map_err(|_| FrameError::Negative(size))?;
    if size > max {
        return Err(FrameError::TooLarge { size, max });
    }
    if buf.len() < 4 + size {
        return Ok(None);
    }
    let mut frame = buf.split_to(4 + size);
    let _ = frame.split_to(4);
    Ok(Some(frame))
}

/// How many more bytes the frame at the front of `buf` needs (0 when it is complete or when no
/// size has arrived yet); never more than the limit allows.
pub fn bytes_wanted(buf: &[u8], max: usize) -> usize {
    match buf.get(..4) {
        Some(p) => {
            let size = i32::from_be_bytes([p[0], p[1], p[2], p[3]]).max(0) as usize;
            (4 + size.min(max)).saturating_sub(buf.len())
        }
        None => 4 - buf.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_whole_and_in_order() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&3i32.to_be_bytes());
        buf.extend_from_slice(b"abc");
        buf.extend_from_slice(&2i32.to_be_bytes());
        buf.extend_from_slice(b"d");
        assert_eq!(
            split_frame(&mut buf, 10).expect("ok").as_deref(),
            Some(&b"abc"[..])
        );
        assert_eq!(split_frame(&mut buf, 10).expect("ok"), None, "half a frame waits");
        assert_eq!(bytes_wanted(&buf, 10), 1);
        buf.extend_from_slice(b"e");
        assert_eq!(
            split_frame(&mut buf, 10).expect("ok").as_deref(),
            Some(&b"de"[..])
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn hostile_sizes_are_refused_before_any_allocation() {
        let mut buf = BytesMut::from(&i32::MAX.to_be_bytes()[..]);
        assert_eq!(
            split_frame(&mut buf, DEFAULT_MAX_FRAME),
            Err(FrameError::TooLarge {
                size: i32::MAX as usize,
                max: DEFAULT_MAX_FRAME
            })
        );
        assert_eq!(
            bytes_wanted(&buf, 1024),
            1024,
            "a reader never reserves past the limit"
        );
        let mut buf = BytesMut::from(&(-1i32).to_be_bytes()[..]);
        assert_eq!(split_frame(&mut buf, 10), Err(FrameError::Negative(-1)));
    }
}
