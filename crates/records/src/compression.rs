//! Decompressing a record batch's records — gzip, snappy, lz4 and zstd, as producers send them —
//! with a bound on what comes out.
//!
//! A compressed batch is a few bytes on the wire that may claim to hold gigabytes: gzip and zstd
//! reach ratios of a thousand and more on repetitive input, and snappy-java's CVEs were
//! unbounded decompression. Every codec here stops at [`MAX_DECOMPRESSED`] and reports the batch
//! as too large instead of growing a buffer without limit. Pure functions over byte slices.
//!
//! Kafka's framing per codec (attributes bits 0–2): 1 gzip (RFC 1952), 2 snappy (snappy-java's
//! "xerial" stream: an 8-byte magic, two int32 versions, then int32-length-prefixed raw snappy
//! blocks; Kafka also accepts one raw snappy block), 3 lz4 (the LZ4 frame format), 4 zstd (a
//! zstd frame).

use std::io::Read;

/// A batch's compression codec: bits 0–2 of its attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    /// The codec `attributes` name, or `None` for a codec Kafka does not define (5–7).
    pub fn from_attributes(attributes: i16) -> Option<Self> {
        Some(match attributes & 0b111 {
            0 => Self::None,
            1 => Self::Gzip,
            2 => Self::Snappy,
            3 => Self::Lz4,
            4 => Self::Zstd,
            _ => return None,
        })
    }
}

/// The most a batch's records may decompress to: 64 MiB, well above a producer's default
/// `batch.size` (16 KiB for Java, 1 MB for librdkafka) and Kafka's `message.max.bytes` (1 MiB).
pub const MAX_DECOMPRESSED: usize = 64 << 20;

const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompressError {
    #[error("the records decompress to more than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("corrupt {codec} data: {reason}")]
    Corrupt { codec: &'static str, reason: String },
}

fn corrupt(codec: &'static str, e: impl std::fmt::Display) -> DecompressError {
    DecompressError::Corrupt {
        codec,
        reason: e.to_string(),
    }
}

/// Reads a decoder to its end, or fails once it passes `limit` bytes.
fn bounded(codec: &'static str, reader: impl Read, limit: usize) -> Result<Vec<u8>, DecompressError> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(codec, e))?;
    if out.len() > limit {
        return Err(DecompressError::TooLarge { limit });
    }
    Ok(out)
}

/// One raw snappy block, its announced length checked first.
fn snappy_block(block: &[u8], room: usize, limit: usize) -> Result<Vec<u8>, DecompressError> {
    let len = snap::raw::decompress_len(block).map_err(|e| corrupt("snappy", e))?;
    if len > room {
        return Err(DecompressError::TooLarge { limit });
    }
    snap::raw::Decoder::new()
        .decompress_vec(block)
        .map_err(|e| corrupt("snappy", e))
}

fn snappy(data: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
    let Some(mut rest) = data.strip_prefix(XERIAL_MAGIC) else {
        return snappy_block(data, limit, limit);
    };
    // Two int32s (version, compatible version), then blocks.
    rest = rest
        .get(8..)
        .ok_or_else(|| corrupt("snappy", "truncated xerial header"))?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt("snappy", "truncated block length"))?;
        let len = usize::try_from(i32::from_be_bytes(*len))
            .map_err(|_| corrupt("snappy", "negative block length"))?;
        let block = tail
            .get(..len)
            .ok_or_else(|| corrupt("snappy", "truncated block"))?;
        out.extend(snappy_block(block, limit - out.len(), limit)?);
        rest = &tail[len..];
    }
    Ok(out)
}

/// Decompresses a batch's records (everything after its 61-byte header) with at most `limit`
/// bytes of output.
pub fn decompress_bounded(data: &[u8], codec: Compression, limit: usize) -> Result<Vec<u8>, DecompressError> {
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => bounded("gzip", flate2::read::GzDecoder::new(data), limit),
        Compression::Snappy => snappy(data, limit),
        Compression::Lz4 => bounded("lz4", lz4_flex::frame::FrameDecoder::new(data), limit),
        Compression::Zstd => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(data).map_err(|e| corrupt("zstd", e))?;
            bounded("zstd", decoder, limit)
        }
    }
}

/// Compresses a batch's records (everything that follows its header) with `codec`, framed as
/// Kafka's Java client frames it: gzip, snappy-java's xerial stream (32 KiB blocks), an LZ4
/// frame, a zstd frame. What the log writes when a topic's `compression.type` names a codec
/// other than the one a batch came in, and when a replayed `send` line names one.
pub fn compress(data: &[u8], codec: Compression) -> Vec<u8> {
    use std::io::Write;
    match codec {
        Compression::None => data.to_vec(),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            // Writing to a Vec cannot fail.
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        Compression::Snappy => {
            let mut out = XERIAL_MAGIC.to_vec();
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut encoder = snap::raw::Encoder::new();
            for chunk in data.chunks(32 << 10) {
                let block = encoder.compress_vec(chunk).unwrap_or_default();
                out.extend_from_slice(&(block.len() as i32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            out
        }
        Compression::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        Compression::Zstd => {
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
        }
    }
}

impl Compression {
    /// The codec's name in Kafka's configs (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "uncompressed",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// Bits 0–2 of a batch's attributes for this codec.
    pub fn attribute(self) -> i16 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }

    pub const ALL: [Self; 5] = [Self::None, Self::Gzip, Self::Snappy, Self::Lz4, Self::Zstd];
}

impl std::str::FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("'{s}' is not a codec (uncompressed, gzip, snappy, lz4, zstd)"))
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn every_codec_decompresses_what_it_compressed() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for codec in Compression::ALL {
            let packed = compress(&data, codec);
            assert_eq!(
                decompress_bounded(&packed, codec, MAX_DECOMPRESSED).as_deref(),
                Ok(&data[..]),
                "{codec}"
            );
            assert_eq!(codec.name().parse::<Compression>(), Ok(codec));
            assert_eq!(Compression::from_attributes(codec.attribute()), Some(codec));
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).expect("gzip");
        e.finish().expect("gzip")
    }

    fn lz4(data: &[u8]) -> Vec<u8> {
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(data).expect("lz4");
        e.finish().expect("lz4")
    }

    fn xerial(data: &[u8]) -> Vec<u8> {
        let mut out = XERIAL_MAGIC.to_vec();
        out.extend_from_slice(&1i32.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
        for chunk in data.chunks(32 << 10) {
            let block = snap::raw::Encoder::new().compress_vec(chunk).expect("snappy");
            out.extend_from_slice(&(block.len() as i32).to_be_bytes());
            out.extend_from_slice(&block);
        }
        out
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_be_bytes()).collect();
        for (codec, packed) in [
            (Compression::Gzip, gzip(&data)),
            (Compression::Snappy, xerial(&data)),
            (
                Compression::Snappy,
                snap::raw::Encoder::new().compress_vec(&data).expect("raw"),
            ),
            (Compression::Lz4, lz4(&data)),
            (Compression::Zstd, zstd(&data)),
        ] {
            assert_eq!(
                decompress_bounded(&packed, codec, MAX_DECOMPRESSED).as_deref(),
                Ok(&data[..]),
                "{codec:?}"
            );
        }
    }

    /// A few kilobytes that would inflate to 64 MiB + 1 byte: refused by every codec, without
    /// producing the whole output first.
    #[test]
    fn bombs_are_refused_at_the_bound() {
        let limit = 1 << 20;
        let zeros = vec![0u8; limit + 1];
        for (codec, packed) in [
            (Compression::Gzip, gzip(&zeros)),
            (Compression::Snappy, xerial(&zeros)),
            (
                Compression::Snappy,
                snap::raw::Encoder::new().compress_vec(&zeros).expect("raw"),
            ),
            (Compression::Lz4, lz4(&zeros)),
            (Compression::Zstd, zstd(&zeros)),
        ] {
            assert!(
                packed.len() < limit / 10,
                "{codec:?} packs {} bytes",
                packed.len()
            );
            assert_eq!(
                decompress_bounded(&packed, codec, limit),
                Err(DecompressError::TooLarge { limit }),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            for junk in [
                &b"\x82SNAPPY\x00"[..],
                b"\x82SNAPPY\x00\0\0\0\x01\0\0\0\x01\x7f\xff\xff\xff",
                b"not compressed at all",
            ] {
                assert!(
                    decompress_bounded(junk, codec, MAX_DECOMPRESSED).is_err(),
                    "{codec:?} {junk:?}"
                );
            }
        }
    }
}
