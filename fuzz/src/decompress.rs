//! Bounded decompression of a compressed batch's records (`offsetlab_records::compression`): the
//! first byte picks the codec (gzip, snappy, lz4, zstd), the rest is the compressed data. Every
//! input returns — records or an error — and nothing grows past the bound.

use offsetlab_records::compression::{decompress_bounded, Compression};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Some((&pick, rest)) = data.split_first() else {
            return;
        };
        let codec = match pick % 4 {
            0 => Compression::Gzip,
            1 => Compression::Snappy,
            2 => Compression::Lz4,
            _ => Compression::Zstd,
        };
        if let Ok(out) = decompress_bounded(rest, codec, 1 << 20) {
            assert!(out.len() <= 1 << 20);
        }
    });
}
