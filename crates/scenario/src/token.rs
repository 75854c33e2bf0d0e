//! Splitting a scenario line into words and `key=value` options.
//!
//! Words are separated by whitespace. A value may hold spaces when they are inside `{…}` or
//! `[…]` (JSON) or inside quotes; single quotes around a whole value are removed. `#` outside
//! JSON and quotes starts a comment.

use crate::error::ParseError;
use std::collections::VecDeque;

/// Splits `line` into raw tokens, dropping a trailing comment.
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
        for t in tokens {
            match t.split_once('=') {
                Some((k, v)) if !k.is_empty() && !k.starts_with('{') => {
                    if options.iter().any(|(seen, _)| seen == k) {
                        return Err(ParseError::new(format!("{command}: option '{k}' given twice")));
                    }
                    options.push((k.to_string(), unquote(v).to_string()));
                }
                _ => positional.push_back(unquote(&t).to_string()),
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
                .map_err(|e| ParseError::new(format!("{}: {key}={v}: {e}", self.command))),
        }
    }

    /// Remaining options in order (for `expect`, whose keys are open-ended).
    pub fn take_options(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.options)
    }

    /// Fails if anything was not consumed.
    pub fn finish(self) -> Result<(), ParseError> {
        if let Some(w) = self.positional.front() {
            return Err(ParseError::new(format!("{}: unexpected '{w}'", self.command)));
        }
        if let Some((k, _)) = self.options.first() {
            return Err(ParseError::new(format!("{}: unknown option '{k}'", self.command)));
        }
        Ok(())
    }
}

fn unquote(v: &str) -> &str {
    for q in ['\'', '"'] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
