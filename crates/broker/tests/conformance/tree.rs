//! A response as a tree of fields, read from its `Debug` form (every `kafka-protocol` message
//! derives it), normalised, and flattened into `path → value` so two brokers' answers compare
//! field by field. Lists of structs are keyed by their name-like field (`topics[orders]`,
//! `partitions[0]`), so order does not matter where Kafka does not promise one.

use std::collections::BTreeMap;

/// A parsed `Debug` value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `Name { field: value, … }`
    Struct(Vec<(String, Node)>),
    /// `Name(value, …)`: a newtype (`BrokerId(1)`) or an enum variant (`Some(…)`).
    Tuple(String, Vec<Node>),
    List(Vec<Node>),
    Map(Vec<(Node, Node)>),
    Atom(String),
}

#[derive(Debug)]
pub struct ParseError(pub String);

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err<T>(&self, what: &str) -> Result<T, ParseError> {
        let from = self.at.saturating_sub(40);
        let to = (self.at + 40).min(self.s.len());
        Err(ParseError(format!(
            "{what} at byte {}: …{}…",
            self.at,
            String::from_utf8_lossy(&self.s[from..to])
        )))
    }

    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), ParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            self.err(&format!("expected '{}'", c as char))
        }
    }

    /// A quoted string (with its escapes kept as written), after an optional `b`.
    fn quoted(&mut self) -> Result<String, ParseError> {
        let start = self.at;
        if self.s.get(self.at) == Some(&b'b') {
            self.at += 1;
        }
        if self.s.get(self.at) != Some(&b'"') {
            return self.err("expected a string");
        }
        self.at += 1;
        while self.at < self.s.len() {
            match self.s[self.at] {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Ok(String::from_utf8_lossy(&self.s[start..self.at]).into_owned());
                }
                _ => self.at += 1,
            }
        }
        self.err("unterminated string")
    }

    fn bare(&mut self) -> String {
        let start = self.at;
        while self.at < self.s.len() && !b"{}()[],: \n\"".contains(&self.s[self.at]) {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.at]).into_owned()
    }

    fn value(&mut self) -> Result<Node, ParseError> {
        match self.peek() {
            None => self.err("unexpected end"),
            Some(b'"') => Ok(Node::Atom(self.quoted()?)),
            Some(b'b') if self.s.get(self.at + 1) == Some(&b'"') => Ok(Node::Atom(self.quoted()?)),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                while !self.eat(b']') {
                    items.push(self.value()?);
                    if !self.eat(b',') {
                        self.expect(b']')?;
                        break;
                    }
                }
                Ok(Node::List(items))
            }
            Some(b'{') => {
                self.at += 1;
                let mut items = Vec::new();
                while !self.eat(b'}') {
                    let k = self.value()?;
                    self.expect(b':')?;
                    let v = self.value()?;
                    items.push((k, v));
                    if !self.eat(b',') {
                        self.expect(b'}')?;
                        break;
                    }
                }
                Ok(Node::Map(items))
            }
            Some(_) => {
                let word = self.bare();
                if word.is_empty() {
                    return self.err("unexpected character");
                }
                match self.peek() {
                    Some(b'{') if word.chars().next().is_some_and(char::is_alphabetic) => {
                        self.at += 1;
                        let mut fields = Vec::new();
                        while !self.eat(b'}') {
                            self.ws();
                            let name = self.bare();
                            self.expect(b':')?;
                            fields.push((name, self.value()?));
                            if !self.eat(b',') {
                                self.expect(b'}')?;
                                break;
                            }
                        }
                        Ok(Node::Struct(fields))
                    }
                    Some(b'(') => {
                        self.at += 1;
                        let mut items = Vec::new();
                        while !self.eat(b')') {
                            items.push(self.value()?);
                            if !self.eat(b',') {
                                self.expect(b')')?;
                                break;
                            }
                        }
                        Ok(Node::Tuple(word, items))
                    }
                    _ => Ok(Node::Atom(word)),
                }
            }
        }
    }
}

/// Parses the `{:?}` of a value.
pub fn parse(debug: &str) -> Result<Node, ParseError> {
    let mut p = Parser {
        s: debug.as_bytes(),
        at: 0,
    };
    let v = p.value()?;
    if p.peek().is_some() {
        return p.err("trailing text");
    }
    Ok(v)
}

/// The bytes of a `b"…"` literal as `Bytes`'s `Debug` writes it.
pub fn unescape_bytes(lit: &str) -> Option<Vec<u8>> {
    let inner = lit.strip_prefix("b\"")?.strip_suffix('"')?;
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = *b.get(i + 1)?;
        match c {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'0' => out.push(0),
            b'\\' | b'"' | b'\'' => out.push(c),
            b'x' => {
                let hex = std::str::from_utf8(b.get(i + 2..i + 4)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            _ => return None,
        }
        i += 2;
    }
    Some(out)
}

/// A value as shown in a report: strings without their quotes, `Some(x)` as `x`.
pub fn show(n: &Node) -> String {
    match n {
        Node::Atom(a) => a.clone(),
        Node::Tuple(name, items) if name == "Some" && items.len() == 1 => show(&items[0]),
        Node::Tuple(name, items) => format!(
            "{name}({})",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        other => format!("{other:?}"),
    }
}

/// Fields that name an item of a list, in the order they are tried: the first present one
/// whose values are distinct across the list keys it.
const KEY_FIELDS: &[&str] = &[
    "name",
    "topic_name",
    "topic",
    "resource_name",
    "partition_index",
    "partition",
    "index",
    "group_id",
    "transactional_id",
    "member_id",
    "api_key",
    "offset",
    "key",
    "config_name",
    "entity_type",
    "node_id",
    "broker_id",
    "replica_id",
    "base_offset",
    "producer_id",
];

/// `path → value` of a normalised tree.
pub type Flat = BTreeMap<String, String>;

pub fn flatten(n: &Node) -> Flat {
    let mut out = Flat::new();
    walk(n, String::new(), &mut out);
    out
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn key_of(item: &Node, field: &str) -> Option<String> {
    let Node::Struct(fields) = item else {
        return None;
    };
    let value = fields
        .iter()
        .find(|(f, _)| f == field)
        .map(|(_, v)| show(v).trim_matches('"').to_string())?;
    // An API by its name: `api_keys[Metadata]`.
    if field == "api_key" {
        if let Ok(k) = value.parse::<i16>() {
            return Some(crate::target::api_name(k));
        }
    }
    Some(value)
}

fn list_keys(items: &[Node]) -> Option<Vec<String>> {
    for field in KEY_FIELDS {
        let keys: Option<Vec<String>> = items.iter().map(|i| key_of(i, field)).collect();
        if let Some(keys) = keys {
            let mut distinct = keys.clone();
            distinct.sort();
            distinct.dedup();
            if distinct.len() == keys.len() {
                return Some(keys);
            }
        }
    }
    None
}

fn walk(n: &Node, path: String, out: &mut Flat) {
    match n {
        Node::Struct(fields) => {
            for (f, v) in fields {
                walk(v, join(&path, f), out);
            }
        }
        Node::Tuple(name, items) if name == "Some" && items.len() == 1 => walk(&items[0], path, out),
        Node::Tuple(..) | Node::Atom(_) => {
            out.insert(path, show(n));
        }
        Node::List(items) => {
            if items.is_empty() {
                out.insert(path, "[]".into());
                return;
            }
            let keys = if items.len() > 1 || matches!(items[0], Node::Struct(_)) {
                list_keys(items)
            } else {
                None
            };
            for (i, item) in items.iter().enumerate() {
                let k = keys.as_ref().map_or_else(|| i.to_string(), |k| k[i].clone());
                walk(item, format!("{path}[{k}]"), out);
            }
        }
        Node::Map(items) => {
            if items.is_empty() {
                out.insert(path, "{}".into());
                return;
            }
            for (k, v) in items {
                walk(v, format!("{path}{{{}}}", show(k).trim_matches('"')), out);
            }
        }
    }
}
