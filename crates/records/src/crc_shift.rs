//! Updating a CRC-32C after a few bytes near the front of a long message changed, without reading
//! the rest again.
//!
//! A CRC is linear over GF(2): for two messages of one length, `crc(X) ^ crc(Y)` is the CRC (no
//! initial value, no final xor) of `X ^ Y`. When `X` and `Y` differ only in a short prefix `D`
//! followed by `n` equal bytes, that is the raw CRC of `D` carried through `n` zero bytes — a
//! multiplication by `x^(8n)` modulo the CRC polynomial, which takes a few hundred operations
//! instead of a pass over `n` bytes. Stamping a megabyte record batch with its log append time
//! changes 22 header bytes; its new CRC costs this, not a second pass over the records.
//!
//! Polynomials are in the CRC's reflected bit order: the coefficient of `x^0` is bit 31.

/// CRC-32C's polynomial (Castagnoli), reflected.
const POLY: u32 = 0x82F6_3B78;
/// `x^0`, the polynomial 1.
const ONE: u32 = 1 << 31;

/// `a * b mod POLY`.
const fn mul(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    let mut bit = ONE;
    while bit != 0 {
        if a & bit != 0 {
            product ^= b;
        }
        bit >>= 1;
        // b *= x
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    product
}

/// `x^(2^k) mod POLY` for k = 0..64.
const POWERS: [u32; 64] = {
    let mut table = [0; 64];
    let mut p = ONE >> 1; // x^1
    let mut k = 0;
    while k < 64 {
        table[k] = p;
        p = mul(p, p);
        k += 1;
    }
    table
};

/// `x^(8 * bytes) mod POLY`.
fn x_to_the_bytes(bytes: u64) -> u32 {
    let mut p = ONE;
    let mut k = 3; // 8 = 2^3
    let mut n = bytes;
    while n != 0 {
        if n & 1 != 0 {
            p = mul(POWERS[k % 64], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// The CRC-32C of a message whose bytes `at..at + old.len()` changed from `old` to `new`, from the
/// CRC of the message before (`crc`) and the number of bytes after the change (`after`). The
/// bytes before the change, the same in both, need not be known.
pub fn crc32c_after_change(crc: u32, old: &[u8], new: &[u8], after: u64) -> u32 {
    debug_assert_eq!(old.len(), new.len());
    let delta: Vec<u8> = old.iter().zip(new).map(|(a, b)| a ^ b).collect();
    // The raw CRC of the difference: from state 0, no final xor.
    let raw = !crc32c::crc32c_append(u32::MAX, &delta);
    crc ^ mul(x_to_the_bytes(after), raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_times_anything_is_itself() {
        assert_eq!(mul(ONE, 0xDEAD_BEEF), 0xDEAD_BEEF);
        assert_eq!(x_to_the_bytes(0), ONE);
    }

    proptest! {
        /// The updated CRC is the CRC computed over the changed message, for changes anywhere.
        #[test]
        fn matches_a_full_pass(
            message in proptest::collection::vec(any::<u8>(), 1..3000),
            at in 0usize..3000,
            new in proptest::collection::vec(any::<u8>(), 1..40),
        ) {
            let at = at % message.len();
            let len = new.len().min(message.len() - at);
            let (new, old) = (&new[..len], message[at..at + len].to_vec());
            let mut changed = message.clone();
            changed[at..at + len].copy_from_slice(new);
            let after = (message.len() - at - len) as u64;
            prop_assert_eq!(
                crc32c_after_change(crc32c::crc32c(&message), &old, new, after),
                crc32c::crc32c(&changed)
            );
        }
    }
}
