//! What must differ between two brokers, made equal before comparing (docs/CONFORMANCE.md,
//! "Normalisations", says why each one is there). Everything else is compared as it came.

use crate::tree::{unescape_bytes, Node};
use std::collections::HashMap;

/// One broker's identity, and the placeholders given to what it generated: the name a
/// conversation registered for it (`<member g3/1>`: the first member to join group g3; `<id
/// <run>-orders>`: that topic's id), or else a number in the order of appearance within the
/// one answer (`<uuid-1>`), so that one broker's extra answer never shifts the next ones.
pub struct Ctx {
    /// Its node id (the lab is node 0, the Kafka this test starts node 1).
    pub node: i32,
    pub host: String,
    pub port: u16,
    /// The tag in every name this run creates (topics, groups, transactional ids).
    pub run: String,
    /// (kind, value) → the name a conversation gave it.
    registered: HashMap<(&'static str, String), String>,
    /// (kind, value) → its number within the answer being normalised.
    seen: HashMap<(&'static str, String), usize>,
}

impl Ctx {
    pub fn new(node: i32, host: &str, port: u16, run: &str) -> Self {
        Self {
            node,
            host: host.to_string(),
            port,
            run: run.to_string(),
            registered: HashMap::new(),
            seen: HashMap::new(),
        }
    }

    /// From now on `value` (a generated id of `kind`: member, pid, uuid) shows as `<name>`.
    pub fn register(&mut self, kind: &'static str, value: &str, name: &str) {
        let name = format!("<{}>", self.text(name));
        self.registered.insert((kind, value.to_string()), name);
    }

    fn numbered(&mut self, kind: &'static str, value: &str) -> String {
        if let Some(name) = self.registered.get(&(kind, value.to_string())) {
            return name.clone();
        }
        let next = self.seen.keys().filter(|(k, _)| *k == kind).count() + 1;
        let n = *self.seen.entry((kind, value.to_string())).or_insert(next);
        format!("<{kind}-{n}>")
    }

    /// Strings: this run's tag and this broker's address made neutral.
    pub fn text(&self, s: &str) -> String {
        let addr = format!("{}:{}", self.host, self.port);
        s.replace(&addr, "<host>:<port>").replace(&self.run, "<run>")
    }
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

const NIL_UUID: &str = "00000000-0000-0000-0000-000000000000";

/// Fields holding a node id as a plain integer.
const NODE_FIELDS: &[&str] = &[
    "node_id",
    "leader_id",
    "controller_id",
    "broker_id",
    "replica_id",
    "coordinator_id",
    "voter_id",
    "replica_nodes",
    "isr_nodes",
    "offline_replicas",
    "broker_ids",
    "replicas",
    "eligible_leader_replicas",
    "last_known_elr",
    "adding_replicas",
    "removing_replicas",
];

/// Fields holding a member id a coordinator generated (KIP-394).
const MEMBER_FIELDS: &[&str] = &["member_id", "leader"];

/// Fields holding a time the broker's clock chose.
const TIME_FIELDS: &[&str] = &[
    "log_append_time_ms",
    "transaction_start_time_ms",
    "last_fetch_timestamp",
    "last_caught_up_timestamp",
    // DescribeProducers: after a transaction marker, the marker's (broker) time.
    "last_timestamp",
];

fn atom(s: impl Into<String>) -> Node {
    Node::Atom(s.into())
}

fn quoted_inner(s: &str) -> Option<&str> {
    s.strip_prefix('"').and_then(|s| s.strip_suffix('"'))
}

impl Ctx {
    /// The normalised tree of one response.
    pub fn normalize(&mut self, n: Node) -> Node {
        self.seen.clear();
        self.node_value("", n)
    }

    fn node_value(&mut self, field: &str, n: Node) -> Node {
        match n {
            Node::Struct(fields) => {
                self.learn_topic_id(&fields);
                Node::Struct(
                    fields
                        .into_iter()
                        .filter(|(f, v)| !(f == "unknown_tagged_fields" && *v == Node::Map(Vec::new())))
                        .map(|(f, v)| {
                            let v = self.field(&f, v);
                            (f, v)
                        })
                        .collect(),
                )
            }
            Node::List(items) => Node::List(items.into_iter().map(|i| self.node_value(field, i)).collect()),
            Node::Map(items) => Node::Map(
                items
                    .into_iter()
                    .map(|(k, v)| (self.node_value("", k), self.node_value(field, v)))
                    .collect(),
            ),
            Node::Tuple(name, items) => self.tuple(field, name, items),
            Node::Atom(a) => self.leaf(field, a),
        }
    }

    /// A struct that pairs a topic's id with its name teaches the id's placeholder, `<id NAME>`,
    /// for this answer and every later one.
    fn learn_topic_id(&mut self, fields: &[(String, Node)]) {
        let atom_of = |n: &Node| -> Option<String> {
            match n {
                Node::Atom(a) => Some(a.clone()),
                Node::Tuple(_, items) => match items.as_slice() {
                    [Node::Atom(a)] => Some(a.clone()),
                    [Node::Tuple(_, inner)] => match inner.as_slice() {
                        [Node::Atom(a)] => Some(a.clone()),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            }
        };
        let get = |name: &str| {
            fields
                .iter()
                .find(|(f, _)| f == name)
                .and_then(|(_, v)| atom_of(v))
        };
        let Some(id) = get("topic_id").filter(|id| is_uuid(id) && id != NIL_UUID) else {
            return;
        };
        let Some(name) = get("name").or_else(|| get("topic")) else {
            return;
        };
        let name = name.trim_matches('"');
        if !name.is_empty() && !self.registered.contains_key(&("uuid", id.clone())) {
            self.register("uuid", &id, &format!("id {name}"));
        }
    }

    fn tuple(&mut self, field: &str, name: String, items: Vec<Node>) -> Node {
        let single = match items.as_slice() {
            [Node::Atom(a)] => Some(a.clone()),
            _ => None,
        };
        match (name.as_str(), single) {
            ("BrokerId", Some(a)) if a.parse::<i32>().is_ok_and(|n| n == self.node) => atom("<node>"),
            ("BrokerId", Some(a)) => atom(a),
            ("ProducerId", Some(a)) => self.leaf("producer_id", a),
            // Names: the newtype is the protocol's, the value is what counts.
            ("TopicName" | "GroupId" | "TransactionalId", Some(a)) => self.leaf(field, a),
            _ => Node::Tuple(
                name,
                items.into_iter().map(|i| self.node_value(field, i)).collect(),
            ),
        }
    }

    fn field(&mut self, f: &str, v: Node) -> Node {
        match (f, &v) {
            ("throttle_time_ms", _) => atom("<throttle>"),
            ("error_message", _) => atom("<message>"),
            ("cluster_id", Node::Tuple(..)) => atom("<cluster>"),
            ("cluster_id", Node::Atom(a)) if a.len() > 2 => atom("<cluster>"),
            ("records", _) => self.records(v),
            _ => self.node_value(f, v),
        }
    }

    fn leaf(&mut self, field: &str, a: String) -> Node {
        if let Some(s) = quoted_inner(&a) {
            return self.string_leaf(field, s);
        }
        let int = a.parse::<i64>().ok();
        if NODE_FIELDS.contains(&field) && int == Some(i64::from(self.node)) {
            return atom("<node>");
        }
        match field {
            "port" if int == Some(i64::from(self.port)) => return atom("<port>"),
            "producer_id" if int.is_some_and(|p| p >= 0) => return atom(self.numbered("pid", &a)),
            "session_id" if int.is_some_and(|s| s != 0) => return atom(self.numbered("session", &a)),
            f if TIME_FIELDS.contains(&f) && int.is_some_and(|t| t >= 0) => return atom("<time>"),
            // A disk's size and free space.
            "total_bytes" | "usable_bytes" if int.is_some_and(|b| b >= 0) => return atom("<bytes>"),
            _ => {}
        }
        if is_uuid(&a) && a != NIL_UUID {
            return atom(self.numbered("uuid", &a));
        }
        atom(a)
    }

    fn string_leaf(&mut self, field: &str, s: &str) -> Node {
        if MEMBER_FIELDS.contains(&field) && !s.is_empty() {
            return atom(self.numbered("member", s));
        }
        match field {
            "host" if s == self.host => return atom("<host>"),
            "log_dir" => return atom("<log-dir>"),
            "resource_name" if s == self.node.to_string() => return atom("<node>"),
            _ => {}
        }
        atom(format!("\"{}\"", self.text(s)))
    }

    /// A Fetch response's record batches, decoded: every header field and record, the CRC left
    /// out (it covers what is compared), a producer id numbered as elsewhere, and the time a
    /// broker stamps a control batch (a transaction marker) with made neutral.
    fn records(&mut self, v: Node) -> Node {
        let lit = match &v {
            Node::Tuple(name, items) if name == "Some" => match items.as_slice() {
                [Node::Atom(a)] => a.clone(),
                _ => return self.node_value("records", v),
            },
            Node::Atom(a) => a.clone(),
            _ => return self.node_value("records", v),
        };
        let Some(bytes) = unescape_bytes(&lit) else {
            return self.node_value("records", v);
        };
        let mut batches = Vec::new();
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            let header = match offsetlab_records::BatchHeader::parse(rest) {
                Ok(h) => h,
                Err(e) => {
                    batches.push(atom(format!("<undecodable: {e}; {} bytes>", rest.len())));
                    break;
                }
            };
            if header.total_len > rest.len() {
                batches.push(atom(format!("<partial batch of {} bytes>", rest.len())));
                break;
            }
            let mut scratch = Vec::new();
            let batch =
                match offsetlab_records::Batch::parse_any(header, rest, &mut scratch, |_, _, _| Ok(())) {
                    Ok(b) => b,
                    Err(e) => {
                        batches.push(atom(format!("<bad batch: {e}>")));
                        break;
                    }
                };
            let control = header.is_control();
            let time = |t: i64| {
                if control {
                    atom("<time>")
                } else {
                    atom(t.to_string())
                }
            };
            let records: Vec<Node> = batch
                .records()
                .map(|r| {
                    let bytes = |b: Option<&[u8]>| {
                        b.map_or_else(
                            || atom("null"),
                            |b| atom(format!("{:?}", String::from_utf8_lossy(b))),
                        )
                    };
                    Node::Struct(vec![
                        ("offset".into(), atom(r.offset.to_string())),
                        ("timestamp".into(), time(r.timestamp)),
                        ("key".into(), bytes(r.key)),
                        ("value".into(), bytes(r.value)),
                        ("headers".into(), atom(format!("{:?}", r.headers))),
                    ])
                })
                .collect();
            let pid = if header.producer_id >= 0 {
                atom(self.numbered("pid", &header.producer_id.to_string()))
            } else {
                atom(header.producer_id.to_string())
            };
            batches.push(Node::Struct(vec![
                ("base_offset".into(), atom(header.base_offset.to_string())),
                ("batch_length".into(), atom(header.total_len.to_string())),
                (
                    "partition_leader_epoch".into(),
                    atom(i32::from_be_bytes([rest[12], rest[13], rest[14], rest[15]]).to_string()),
                ),
                ("attributes".into(), atom(header.attributes.to_string())),
                (
                    "last_offset_delta".into(),
                    atom(header.last_offset_delta.to_string()),
                ),
                ("base_timestamp".into(), time(header.base_timestamp)),
                ("max_timestamp".into(), time(header.max_timestamp)),
                ("producer_id".into(), pid),
                ("producer_epoch".into(), atom(header.producer_epoch.to_string())),
                ("base_sequence".into(), atom(header.base_sequence.to_string())),
                ("records".into(), Node::List(records)),
            ]));
            rest = &rest[header.total_len..];
        }
        Node::List(batches)
    }
}
