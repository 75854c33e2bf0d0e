//! Splitting a scenario line into words and `key=value` options, and writing values back so
//! that they read back as what was written.
//!
//! Words are separated by whitespace. A value may hold spaces when they are inside `{…}` or
//! `[…]` (JSON) or inside quotes. `#` outside JSON and quotes starts a comment.
//!
//! Two quotings, both around a whole value:
//!
//! - `"…"` is a quoted string with escapes: JSON's (`\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`
//!   `\uXXXX`, surrogate pairs included) and `\xNN`, one byte — so any bytes at all can be
//!   written on one line of printable text. This is what the lab writes whenever a value is not
//!   a plain word ([`Quoted`]).
//! - `'…'` is taken literally, with no escapes: handy by hand (`value='{"a": 1}'`), and what
//!   older versions of the lab wrote.
//!
//! Everything else is a bare word, taken as it is: names (`orders`, `c1`), numbers, durations,
//! and JSON written inline (`value={"a":1}`, `members=[…]`).

use crate::error::ParseError;
use std::collections::VecDeque;
use std::fmt;

/// Splits `line` into raw tokens, dropping a trailing comment. Quotes are kept: [`Args::new`]
/// decodes them.
pub fn tokenize(line: &str) -> Result<Vec<String>, ParseError> {
    let mut tokens = Vec::new();
    let mut cur = String::new();
    let mut depth: i32 = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in line.chars() {
        if let Some(q) = quote {
            cur.push(ch);
            if escaped {
                escaped = false;
            } else if ch == '\\' && q == '"' {
                escaped = true;
            } else if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '#' if depth == 0 => break,
            '"' | '\'' => {
                quote = Some(ch);
                cur.push(ch);
            }
            '{' | '[' => {
                depth += 1;
                cur.push(ch);
            }
            '}' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err(ParseError::new(format!("unbalanced '{ch}'")));
                }
                cur.push(ch);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    tokens.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if quote.is_some() {
        return Err(ParseError::new("unterminated quote"));
    }
    if depth != 0 {
        return Err(ParseError::new("unbalanced braces or brackets"));
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    Ok(tokens)
}

/// The bytes a raw value stands for: a `"…"` string decoded, a `'…'` one taken literally, a
/// bare word as it is.
pub fn decode(raw: &str) -> Result<Vec<u8>, ParseError> {
    if let Some(body) = raw.strip_prefix('\'') {
        return match body.find('\'') {
            Some(end) if end + 1 == body.len() => Ok(body.as_bytes()[..end].to_vec()),
            _ => Err(ParseError::new(format!(
                "{}: a quoted value must end at its closing quote",
                shorten(raw)
            ))),
        };
    }
    let Some(body) = raw.strip_prefix('"') else {
        return Ok(raw.as_bytes().to_vec());
    };
    let bad = |what: &str| ParseError::new(format!("{}: {what}", shorten(raw)));
    let mut out = Vec::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                if i + 1 != body.len() {
                    return Err(bad("a quoted value must end at its closing quote"));
                }
                return Ok(out);
            }
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    break;
                };
                match e {
                    '"' => out.push(b'"'),
                    '\\' => out.push(b'\\'),
                    '/' => out.push(b'/'),
                    'b' => out.push(0x08),
                    'f' => out.push(0x0c),
                    'n' => out.push(b'\n'),
                    'r' => out.push(b'\r'),
                    't' => out.push(b'\t'),
                    'x' => {
                        let hex: String = chars.by_ref().take(2).map(|(_, c)| c).collect();
                        let b = (hex.len() == 2)
                            .then(|| u8::from_str_radix(&hex, 16).ok())
                            .flatten()
                            .ok_or_else(|| bad("\\x takes two hex digits"))?;
                        out.push(b);
                    }
                    'u' => {
                        fn unit(chars: &mut std::str::CharIndices<'_>) -> Option<u16> {
                            let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                            (hex.len() == 4)
                                .then(|| u16::from_str_radix(&hex, 16).ok())
                                .flatten()
                        }
                        let four = || bad("\\u takes four hex digits");
                        let first = unit(&mut chars).ok_or_else(four)?;
                        let code = if (0xD800..0xDC00).contains(&first) {
                            // A surrogate pair, as JSON writes a character beyond the BMP.
                            let (Some((_, '\\')), Some((_, 'u'))) = (chars.next(), chars.next()) else {
                                return Err(bad("a high surrogate must be followed by \\u and a low one"));
                            };
                            let second = unit(&mut chars).ok_or_else(four)?;
                            if !(0xDC00..0xE000).contains(&second) {
                                return Err(bad("a high surrogate must be followed by a low one"));
                            }
                            0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
                        } else {
                            u32::from(first)
                        };
                        let ch = char::from_u32(code).ok_or_else(|| bad("\\u names no character"))?;
                        let mut utf8 = [0; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());
                    }
                    other => return Err(bad(&format!("unknown escape '\\{other}'"))),
                }
            }
            c => {
                let mut utf8 = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
    Err(bad("unterminated quote"))
}

/// A value as it stands in an error message: long ones cut.
fn shorten(s: &str) -> String {
    crate::error::truncated(s, 80)
}

/// Characters a value may hold and still be written bare.
fn bare(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-:/@+,".contains(c)
}

/// A value written so that it reads back as itself: bare when it is a plain word, else a
/// `"…"` string with escapes. Every string a command holds is written through this.
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.is_empty() && self.0.chars().all(bare) {
            f.write_str(self.0)
        } else {
            write_quoted(f, self.0.as_bytes())
        }
    }
}

/// JSON text as an option's value: written inline when it is an object or an array that reads
/// back as one token (the readable form), else quoted.
pub struct QuotedJson<'a>(pub &'a str);

impl fmt::Display for QuotedJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let inline = v.starts_with(['{', '['])
            && !v.chars().any(|c| c.is_control() || needs_unicode_escape(c))
            && tokenize(v).is_ok_and(|t| t.len() == 1 && t[0] == v);
        if inline {
            f.write_str(v)
        } else {
            write_quoted(f, v.as_bytes())
        }
    }
}

/// Any bytes as a `"…"` string: text as it is (but `"`, `\` and control characters escaped),
/// anything that is not UTF-8 as `\xNN`.
pub struct QuotedBytes<'a>(pub &'a [u8]);

impl fmt::Display for QuotedBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(self.0) {
            Ok(s) => Quoted(s).fmt(f),
            Err(_) => write_quoted(f, self.0),
        }
    }
}

/// Characters written as `\uXXXX` although they are not control characters: line and paragraph
/// separators and the byte-order mark, which editors and terminals treat specially.
fn needs_unicode_escape(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn write_quoted(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    use fmt::Write;
    f.write_char('"')?;
    for chunk in bytes.utf8_chunks() {
        let text = chunk.valid();
        let mut from = 0;
        for (i, c) in text.char_indices() {
            let escape = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                c if c.is_control() || needs_unicode_escape(c) => None,
                _ => continue,
            };
            f.write_str(&text[from..i])?;
            match escape {
                Some(e) => f.write_str(e)?,
                None => write!(f, "\\u{:04x}", u32::from(c))?,
            }
            from = i + c.len_utf8();
        }
        f.write_str(&text[from..])?;
        for b in chunk.invalid() {
            write!(f, "\\x{b:02x}")?;
        }
    }
    f.write_char('"')
}

/// Whether `c` may start an option's key: `key=value` options have keys of letters, digits and
/// `._-` (`retention.ms`, `max-poll`); a word with anything else before its first `=` is a
/// positional word.
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-".contains(c)
}

/// The arguments of one command: positional words and `key=value` options, consumed by the
/// command's parser. Anything left over is an error, so a typo never goes unnoticed.
#[derive(Debug, Clone)]
pub struct Args {
    command: String,
    positional: VecDeque<String>,
    options: Vec<(String, String)>,
}

impl Args {
    pub fn new(command: &str, tokens: impl IntoIterator<Item = String>) -> Result<Self, ParseError> {
        let mut positional = VecDeque::new();
        let mut options: Vec<(String, String)> = Vec::new();
        let text = |raw: &str| -> Result<String, ParseError> {
            String::from_utf8(decode(raw)?).map_err(|_| {
                ParseError::new(format!(
                    "{command}: {}: not UTF-8 text (bytes are not accepted here)",
                    shorten(raw)
                ))
            })
        };
        for t in tokens {
            let key_len = t.find(|c: char| !key_char(c)).unwrap_or(t.len());
            match t[key_len..].strip_prefix('=') {
                Some(raw) if key_len > 0 => {
                    let k = &t[..key_len];
                    if options.iter().any(|(seen, _)| seen == k) {
                        return Err(ParseError::new(format!("{command}: option '{k}' given twice")));
                    }
                    options.push((k.to_string(), text(raw)?));
                }
                _ => positional.push_back(text(&t)?),
            }
        }
        Ok(Self {
            command: command.to_string(),
            positional,
            options,
        })
    }

    pub fn command(&self) -> &str {
        &self.command
    }

    /// The next positional word, required.
    pub fn word(&mut self, what: &str) -> Result<String, ParseError> {
        self.positional
            .pop_front()
            .ok_or_else(|| ParseError::new(format!("{}: missing {what}", self.command)))
    }

    /// The next positional word, if any.
    pub fn maybe_word(&mut self) -> Option<String> {
        self.positional.pop_front()
    }

    /// A positional flag such as `execute`, anywhere among the words.
    pub fn flag(&mut self, name: &str) -> bool {
        match self.positional.iter().position(|w| w == name) {
            Some(i) => {
                self.positional.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn option(&mut self, key: &str) -> Option<String> {
        let i = self.options.iter().position(|(k, _)| k == key)?;
        Some(self.options.remove(i).1)
    }

    pub fn required(&mut self, key: &str) -> Result<String, ParseError> {
        self.option(key)
            .ok_or_else(|| ParseError::new(format!("{}: missing {key}=…", self.command)))
    }

    /// Parses an option with `parse`, naming the option in the error.
    pub fn parsed<T>(
        &mut self,
        key: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ParseError> {
        match self.option(key) {
            None => Ok(None),
            Some(v) => parse(&v)
                .map(Some)
                .map_err(|e| ParseError::new(format!("{}: {key}={}: {e}", self.command, shorten(&v)))),
        }
    }

    /// Remaining options in order (for `expect`, whose keys are open-ended).
    pub fn take_options(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.options)
    }

    /// Fails if anything was not consumed.
    pub fn finish(self) -> Result<(), ParseError> {
        if let Some(w) = self.positional.front() {
            return Err(ParseError::new(format!(
                "{}: unexpected '{}'",
                self.command,
                shorten(w)
            )));
        }
        if let Some((k, _)) = self.options.first() {
            return Err(ParseError::new(format!("{}: unknown option '{k}'", self.command)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn json_values_keep_their_spaces_and_comments_are_dropped() {
        let t = tokenize(r#"produce orders key=o-1 value={"a": 1, "b": "x y"}  # note"#).expect("tokens");
        assert_eq!(
            t,
            ["produce", "orders", "key=o-1", r#"value={"a": 1, "b": "x y"}"#]
        );
        assert_eq!(
            tokenize("  # only a comment").expect("tokens"),
            Vec::<String>::new()
        );
        assert_eq!(
            tokenize("produce orders value='#not a comment'")
                .expect("tokens")
                .len(),
            3
        );
    }

    #[test]
    fn unbalanced_input_is_an_error() {
        assert!(tokenize("produce orders value={").is_err());
        assert!(tokenize("produce orders value=}").is_err());
        assert!(tokenize("produce orders value='abc").is_err());
        assert!(tokenize(r#"produce orders key="abc\""#).is_err());
    }

    #[test]
    fn leftovers_are_reported() {
        let mut a = Args::new("poll", ["c1".to_string(), "fast=yes".to_string()]).expect("args");
        assert_eq!(a.word("consumer").expect("word"), "c1");
        assert_eq!(
            a.finish().map_err(|e| e.message),
            Err("poll: unknown option 'fast'".to_string())
        );
        assert!(Args::new("x", ["a=1".to_string(), "a=2".to_string()]).is_err());
    }

    fn args(line: &str) -> Args {
        Args::new("x", tokenize(line).expect("tokens").into_iter().skip(1)).expect("args")
    }

    #[test]
    fn quoted_values_are_decoded() {
        let mut a = args(r#"x "a b" key="it's \"x\"\n\u00e9\ud83d\ude00" v='"hello"' w=plain"#);
        assert_eq!(a.word("w").expect("word"), "a b");
        assert_eq!(a.option("key").as_deref(), Some("it's \"x\"\né😀"));
        assert_eq!(a.option("v").as_deref(), Some("\"hello\""));
        assert_eq!(a.option("w").as_deref(), Some("plain"));
    }

    #[test]
    fn a_quoted_word_with_an_equals_sign_is_positional() {
        let mut a = args(r#"x "a=b" k="=""#);
        assert_eq!(a.word("w").expect("word"), "a=b");
        assert_eq!(a.option("k").as_deref(), Some("="));
        a.finish().expect("nothing left");
    }

    #[test]
    fn malformed_quotes_are_errors() {
        for bad in [
            r#"k="a"b"#,
            r#"k='a'b"#,
            r#"k="\q""#,
            r#"k="\x4""#,
            r#"k="\ud800""#,
            r#"k="\xff""#,
        ] {
            let err = Args::new("x", tokenize(bad).expect("tokens")).expect_err(bad);
            assert!(!err.message.is_empty());
        }
    }

    /// What a line may be asked to carry: every character class that has meaning to the
    /// tokenizer, and anything else.
    fn adversarial() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ \t#=\"'{}\\[\\]\\\\a-z0-9._:,@/+\n\r\u{0}\u{7f}\u{85}\u{2028}é€😀-]{0,16}",
            any::<String>(),
        ]
    }

    proptest! {
        /// Any text written through `Quoted` reads back as itself, as a word and as a value.
        #[test]
        fn quoted_text_reads_back(s in adversarial()) {
            let line = format!("x {} k={}", Quoted(&s), Quoted(&s));
            prop_assert!(!line.contains('\n') && !line.contains('\r'), "{line}");
            let mut a = args(&line);
            prop_assert_eq!(a.word("w").expect("word"), s.clone());
            prop_assert_eq!(a.option("k"), Some(s));
            a.finish().expect("nothing left");
        }

        /// Any bytes at all are one quoted token that decodes to them.
        #[test]
        fn quoted_bytes_read_back(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let line = format!("x k={}", QuotedBytes(&b));
            let tokens = tokenize(&line).expect("tokens");
            prop_assert_eq!(tokens.len(), 2);
            let raw = tokens[1].strip_prefix("k=").expect("option");
            prop_assert_eq!(decode(raw).expect("decodes"), b);
        }

        /// JSON text written through `QuotedJson` reads back as itself.
        #[test]
        fn json_text_reads_back(s in adversarial()) {
            for v in [format!("{{\"k\":{}}}", serde_json::json!(s)), format!("[{}]", serde_json::json!(s)), s.clone()] {
                let line = format!("x k={}", QuotedJson(&v));
                let mut a = args(&line);
                prop_assert_eq!(a.option("k"), Some(v));
            }
        }
    }
}
