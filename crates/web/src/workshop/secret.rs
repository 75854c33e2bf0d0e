//! The two secrets of a workshop: a learner's id (the cookie that is their lab) and the
//! instructor's token. Both are 128 random bits from the operating system, written as 32
//! lowercase hex digits; neither can be guessed, and neither is ever shown to anyone else.

use std::fmt;

/// 128 random bits, as 32 lowercase hex digits.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(String);

/// How many hex digits a secret has: 128 bits.
pub const SECRET_HEX_DIGITS: usize = 32;

impl Secret {
    /// A new secret from the operating system's random source.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; SECRET_HEX_DIGITS / 2];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A secret as a cookie or a file carries it: exactly 32 lowercase hex digits, else `None`
    /// (a forged or truncated id is no id at all).
    pub fn parse(text: &str) -> Option<Self> {
        let ok = text.len() == SECRET_HEX_DIGITS
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Self(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `offered` is this secret, in time that does not depend on where they differ
    /// (a client timing the answer learns nothing about the secret's digits).
    pub fn matches(&self, offered: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), offered.as_bytes())
    }
}

/// Never printed by accident: a secret in a log or a panic message shows as `Secret(…)`.
impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// `a == b`, looking at every byte whatever the first difference (the length is not secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// An instructor's token as `--instructor-token-file` holds it: any printable text of 16 to
/// 256 bytes (surrounding white space ignored), so a team can choose its own.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn random() -> Result<Self, getrandom::Error> {
        Secret::random().map(|s| Self(s.0))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if !(16..=256).contains(&t.len()) {
            return Err(format!(
                "an instructor token must be 16 to 256 bytes long (this one is {})",
                t.len()
            ));
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("an instructor token must be printable ASCII without spaces".into());
        }
        Ok(Self(t.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, offered: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), offered.as_bytes())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_128_bits_of_hex_and_reads_back() {
        let s = Secret::random().expect("ok");
        assert_eq!(s.as_str().len(), 32);
        assert_eq!(Secret::parse(s.as_str()), Some(s.clone()));
        assert_ne!(Secret::random().expect("ok"), s);
        assert_eq!(format!("{s:?}"), "Secret(…)");
    }

    #[test]
    fn a_forged_or_malformed_id_is_no_id() {
        for bad in [
            "",
            "abc",
            &"g".repeat(32),
            &"A".repeat(32),
            &"0".repeat(33),
            "../../etc/passwd",
        ] {
            assert_eq!(Secret::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        let t = Token::parse("  correct-horse-battery-staple \n").expect("ok");
        assert!(t.matches("correct-horse-battery-staple"));
        assert!(!t.matches("correct-horse-battery-stapl"));
        assert!(!t.matches("correct-horse-battery-staplf"));
        assert!(!t.matches(""));
        assert!(Token::parse("short").is_err());
        assert!(Token::parse("has a space in it ok").is_err());
    }
}
