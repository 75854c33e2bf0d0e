//! The connection of offsetlab's own admin commands (`groups`, `topics`, `offsets`) to a broker:
//! a blocking socket speaking the Kafka protocol through `offsetlab_wire`'s pure client codec,
//! PLAINTEXT or SASL_PLAINTEXT with PLAIN.
//!
//! The client settings come as every Kafka tool takes them: `-X key=value` (kcat) and
//! `--command-config FILE` (`kafka-consumer-groups.sh`), the same librdkafka property names
//! `offsetlab run --bootstrap-server` reads, so one file serves both. Of those, the keys that
//! decide how to reach the broker (`security.protocol`, `sasl.mechanism(s)`, `sasl.username`,
//! `sasl.password`) are honoured; one asking for what this client does not speak (TLS, a
//! mechanism other than PLAIN) is refused in one line rather than ignored, since ignoring it
//! would send the password in the clear or fail later with a closed connection; the rest
//! (producer and consumer tuning) mean nothing to an admin command and are left alone.
//!
//! On connecting: ApiVersions, then for SASL_PLAINTEXT the handshake Kafka's
//! `SaslClientAuthenticator` runs — SaslHandshake naming PLAIN, SaslAuthenticate carrying
//! `NUL username NUL password` (RFC 4616) — before any other request.

use crate::exit;
use offsetlab_wire::client::{decode_response, encode_request};
use offsetlab_wire::frame::DEFAULT_MAX_FRAME;
use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, MetadataRequest, MetadataResponse, RequestKind, ResponseKind,
    SaslAuthenticateRequest, SaslHandshakeRequest, TopicName,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// How long a broker may take to answer one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Kafka's error codes the handshake explains in words.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const ILLEGAL_SASL_STATE: i16 = 34;

/// How an admin command reaches a broker: `--bootstrap-server`, `-X`, `--command-config`.
#[derive(clap::Args, Clone)]
pub struct ConnectArgs {
    /// The broker to ask, e.g. 127.0.0.1:9092
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap_server: String,
    /// A client property, as kcat takes it; repeatable. Honoured: security.protocol
    /// (PLAINTEXT, SASL_PLAINTEXT), sasl.mechanism (PLAIN), sasl.username, sasl.password
    #[arg(short = 'X', value_name = "KEY=VALUE")]
    pub property: Vec<String>,
    /// A file of client properties, one `key=value` per line (`#` comments), as Kafka's tools
    /// take --command-config (the librdkafka names `offsetlab run` reads); -X is applied after it
    #[arg(long, value_name = "FILE")]
    pub command_config: Option<PathBuf>,
}

impl fmt::Debug for ConnectArgs {
    /// Every `-X` property, a secret's value masked.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectArgs")
            .field("bootstrap_server", &self.bootstrap_server)
            .field("property", &crate::cluster_cmd::masked(&self.property))
            .field("command_config", &self.command_config)
            .finish()
    }
}

impl ConnectArgs {
    /// The broker and how to authenticate to it; an error is one line and its exit code (2 for
    /// a property that cannot be taken, 3 for a file that cannot be read).
    pub fn endpoint(&self) -> Result<Endpoint, (String, u8)> {
        let properties = crate::cluster_cmd::read_properties(self.command_config.as_deref(), &self.property)?;
        let security = Security::from_properties(&properties).map_err(|e| (e, exit::INVALID_SCENARIO))?;
        Ok(Endpoint {
            bootstrap: self.bootstrap_server.clone(),
            security,
        })
    }
}

/// How a connection proves who it is.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Security {
    /// `security.protocol=PLAINTEXT` (the default): no authentication.
    Plaintext,
    /// `security.protocol=SASL_PLAINTEXT` with `sasl.mechanism=PLAIN`.
    SaslPlain { username: String, password: String },
}

impl fmt::Debug for Security {
    /// The user name, never the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Plaintext => f.write_str("Plaintext"),
            Self::SaslPlain { username, .. } => {
                f.debug_struct("SaslPlain").field("username", username).finish()
            }
        }
    }
}

impl Security {
    /// Reads the properties that decide how to connect; a later property overrides an earlier
    /// one, as in librdkafka.
    pub(crate) fn from_properties(properties: &[(String, String)]) -> Result<Self, String> {
        let last = |keys: &[&str]| {
            properties
                .iter()
                .rev()
                .find(|(k, _)| keys.contains(&k.as_str()))
                .map(|(_, v)| v.as_str())
        };
        let protocol = last(&["security.protocol"]).unwrap_or("plaintext");
        let sasl = match protocol.to_ascii_lowercase().as_str() {
            "plaintext" => false,
            "sasl_plaintext" => true,
            "ssl" | "sasl_ssl" => {
                return Err(format!(
                    "security.protocol={protocol}: offsetlab's admin commands do not speak TLS; \
                     `offsetlab run/explore/serve --bootstrap-server` (librdkafka) and kcat do"
                ))
            }
            _ => {
                return Err(format!(
                    "security.protocol={protocol}: expected PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL"
                ))
            }
        };
        if !sasl {
            return Ok(Self::Plaintext);
        }
        let mechanism = last(&["sasl.mechanism", "sasl.mechanisms"]).unwrap_or("GSSAPI");
        if mechanism != "PLAIN" {
            return Err(format!(
                "sasl.mechanism={mechanism}: offsetlab's admin commands authenticate with PLAIN only \
                 (librdkafka's default, GSSAPI, when none is given)"
            ));
        }
        let need = |key: &str| {
            last(&[key])
                .map(str::to_string)
                .ok_or_else(|| format!("SASL_PLAINTEXT with PLAIN needs {key}"))
        };
        Ok(Self::SaslPlain {
            username: need("sasl.username")?,
            password: need("sasl.password")?,
        })
    }
}

/// A broker to connect to, and how.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) bootstrap: String,
    pub(crate) security: Security,
}

impl Endpoint {
    /// A connection to the bootstrap server.
    pub(crate) fn connect(&self) -> anyhow::Result<Conn> {
        Conn::open(&self.bootstrap, &self.security)
    }
}

/// A socket to `addr`, trying each address its name resolves to for at most
/// [`REQUEST_TIMEOUT`] (a host that drops packets would otherwise hold the command for the
/// system's own connect timeout, minutes).
fn connect(addr: &str) -> anyhow::Result<TcpStream> {
    let candidates = addr
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("cannot connect to {addr}: {e}"))?;
    let mut last = None;
    for candidate in candidates {
        match TcpStream::connect_timeout(&candidate, REQUEST_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => anyhow::anyhow!("cannot connect to {addr}: {e}"),
        None => anyhow::anyhow!("cannot connect to {addr}: the name resolves to no address"),
    })
}

/// One connection to a broker, with the versions it serves — and, opened as they are needed,
/// connections to the cluster's other brokers: a partition's leader alone answers ListOffsets
/// and Fetch for it (any other broker says NOT_LEADER_OR_FOLLOWER), so on a cluster of several
/// brokers those requests go where [`Conn::leaders`] says.
pub(crate) struct Conn {
    stream: TcpStream,
    addr: String,
    security: Security,
    correlation: i32,
    versions: BTreeMap<i16, (i16, i16)>,
    others: BTreeMap<String, Conn>,
}

/// Where each partition's leader listens (`host:port`), as the cluster's metadata says; a
/// partition without a leader (or whose leader is not among the brokers listed) is absent.
pub(crate) type Leaders = BTreeMap<(String, i32), String>;

/// The leaders of `metadata`'s partitions, by address.
pub(crate) fn leaders_of(metadata: &MetadataResponse) -> Leaders {
    let brokers: BTreeMap<i32, String> = metadata
        .brokers
        .iter()
        .map(|b| (b.node_id.0, host_port(b.host.as_str(), b.port)))
        .collect();
    metadata
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| Some((t.name.as_ref()?.0.to_string(), t)))
        .flat_map(|(name, t)| {
            let brokers = &brokers;
            t.partitions.iter().filter_map(move |p| {
                let addr = brokers.get(&p.leader_id.0)?;
                Some(((name.clone(), p.partition_index), addr.clone()))
            })
        })
        .collect()
}

/// A broker's address as a socket address is written: an IPv6 host (which brokers advertise
/// without brackets) in brackets.
pub(crate) fn host_port(host: &str, port: i32) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `tps` grouped by the address of their leader; partitions without one are left out.
pub(crate) fn by_leader(
    leaders: &Leaders,
    tps: &BTreeMap<String, Vec<i32>>,
) -> BTreeMap<String, BTreeMap<String, Vec<i32>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for (topic, partitions) in tps {
        for &p in partitions {
            if let Some(addr) = leaders.get(&(topic.clone(), p)) {
                out.entry(addr.clone())
                    .or_default()
                    .entry(topic.clone())
                    .or_default()
                    .push(p);
            }
        }
    }
    out
}

impl Conn {
    fn open(addr: &str, security: &Security) -> anyhow::Result<Self> {
        let stream = connect(addr)?;
        stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
        stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
        let mut c = Self {
            stream,
            addr: addr.to_string(),
            security: security.clone(),
            correlation: 0,
            versions: BTreeMap::new(),
            others: BTreeMap::new(),
        };
        // ApiVersions v3 first; a broker that does not speak it answers in v0 with the error.
        let body = RequestKind::ApiVersions(
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("offsetlab"))
                .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION"))),
        );
        let mut response = c.call(ApiKey::ApiVersions, 3, &body)?;
        if matches!(&response, ResponseKind::ApiVersions(v) if v.error_code == 35) {
            response = c.call(ApiKey::ApiVersions, 0, &body)?;
        }
        let ResponseKind::ApiVersions(v) = response else {
            anyhow::bail!("the broker answered ApiVersions with something else");
        };
        c.versions = v
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        if let Security::SaslPlain { username, password } = security {
            c.authenticate_plain(username, password)?;
        }
        Ok(c)
    }

    /// A connection to another broker of the same cluster (a group's coordinator, a
    /// partition's leader), authenticated as this one is.
    pub(crate) fn open_another(&self, addr: &str) -> anyhow::Result<Self> {
        Self::open(addr, &self.security)
    }

    /// The leader of each partition of `topics`, from a Metadata request (that never creates a
    /// topic, as an admin client asks).
    pub(crate) fn leaders(&mut self, topics: &[String]) -> anyhow::Result<Leaders> {
        let version = self.version(ApiKey::Metadata, 12)?;
        let request = MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                    })
                    .collect(),
            ));
        let m = call!(self, Metadata, version, request);
        Ok(leaders_of(&m))
    }

    /// Every broker of the cluster (`host:port`), from a Metadata request for no topic.
    pub(crate) fn brokers(&mut self) -> anyhow::Result<Vec<String>> {
        let version = self.version(ApiKey::Metadata, 12)?;
        let request = MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(Some(Vec::new()));
        let m = call!(self, Metadata, version, request);
        let mut brokers: Vec<String> = m
            .brokers
            .iter()
            .map(|b| host_port(b.host.as_str(), b.port))
            .collect();
        brokers.sort();
        brokers.dedup();
        Ok(brokers)
    }

    /// The connection to the broker at `addr`: this one, or one opened (and kept) beside it,
    /// authenticated as this one is.
    pub(crate) fn at(&mut self, addr: &str) -> anyhow::Result<&mut Conn> {
        if addr == self.addr {
            return Ok(self);
        }
        if !self.others.contains_key(addr) {
            let other = self.open_another(addr)?;
            self.others.insert(addr.to_string(), other);
        }
        self.others
            .get_mut(addr)
            .ok_or_else(|| anyhow::anyhow!("no connection to {addr}"))
    }

    /// SaslHandshake v1 naming PLAIN, then SaslAuthenticate with the RFC 4616 token.
    fn authenticate_plain(&mut self, username: &str, password: &str) -> anyhow::Result<()> {
        let version = self.version(ApiKey::SaslHandshake, 1)?;
        anyhow::ensure!(
            version >= 1,
            "the broker at {} speaks only SaslHandshake v0 (a bare token afterwards), which offsetlab does not",
            self.addr
        );
        let h = call!(
            self,
            SaslHandshake,
            version,
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
        );
        match h.error_code {
            0 => {}
            UNSUPPORTED_SASL_MECHANISM => anyhow::bail!(
                "the broker at {} does not enable SASL/PLAIN (it enables: {})",
                self.addr,
                h.mechanisms
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ILLEGAL_SASL_STATE => anyhow::bail!(
                "the broker at {} does not take SASL on this listener (ILLEGAL_SASL_STATE): \
                 is it PLAINTEXT? Then leave out security.protocol=SASL_PLAINTEXT",
                self.addr
            ),
            code => anyhow::bail!("SaslHandshake failed with error code {code}"),
        }
        let mut token = Vec::with_capacity(2 + username.len() + password.len());
        token.push(0);
        token.extend_from_slice(username.as_bytes());
        token.push(0);
        token.extend_from_slice(password.as_bytes());
        let version = self.version(ApiKey::SaslAuthenticate, 2)?;
        let a = call!(
            self,
            SaslAuthenticate,
            version,
            SaslAuthenticateRequest::default().with_auth_bytes(token.into()),
        );
        if a.error_code != 0 {
            let reason = a.error_message.as_ref().map_or("no reason given", |m| m.as_str());
            anyhow::bail!(
                "authentication as '{username}' failed at {} (error code {}): {reason}",
                self.addr,
                a.error_code
            );
        }
        Ok(())
    }

    /// The highest version both sides speak, up to `ours`.
    pub(crate) fn version(&self, api_key: ApiKey, ours: i16) -> anyhow::Result<i16> {
        match self.versions.get(&(api_key as i16)) {
            Some(&(lo, hi)) if lo <= ours => Ok(hi.min(ours)),
            _ => anyhow::bail!("the broker does not serve {api_key:?} in a version offsetlab speaks"),
        }
    }

    pub(crate) fn call(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: &RequestKind,
    ) -> anyhow::Result<ResponseKind> {
        self.correlation += 1;
        let frame = encode_request(api_key, version, self.correlation, "offsetlab", body)?;
        let addr = self.addr.as_str();
        let closed = |e: std::io::Error, security: &Security| match (e.kind(), security) {
            (
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe,
                Security::Plaintext,
            ) => {
                anyhow::anyhow!(
                    "{addr} closed the connection on {api_key:?}: does its listener want \
                     authentication (-X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=PLAIN …), \
                     or TLS, which offsetlab's admin commands do not speak?"
                )
            }
            (ErrorKind::WouldBlock | ErrorKind::TimedOut, _) => anyhow::anyhow!(
                "{addr} did not answer {api_key:?} within {} s",
                REQUEST_TIMEOUT.as_secs()
            ),
            _ => anyhow::anyhow!("{api_key:?} to {addr}: {e}"),
        };
        self.stream
            .write_all(&frame)
            .map_err(|e| closed(e, &self.security))?;
        let mut size = [0u8; 4];
        self.stream
            .read_exact(&mut size)
            .map_err(|e| closed(e, &self.security))?;
        let not_kafka = |why: String| {
            let text = size
                .iter()
                .all(|b| b.is_ascii_graphic())
                .then(|| String::from_utf8_lossy(&size).into_owned());
            let hint = text.map_or(String::new(), |t| format!(" (its answer begins \"{t}\")"));
            anyhow::anyhow!(
                "{} did not answer {api_key:?} as a Kafka broker does: {why}{hint}",
                self.addr
            )
        };
        let size = usize::try_from(i32::from_be_bytes(size))
            .map_err(|_| not_kafka("a negative frame size".to_string()))?;
        if size > DEFAULT_MAX_FRAME {
            return Err(not_kafka(format!("a {size}-byte response is over the limit")));
        }
        // Only what arrives is allocated: a peer announcing a large frame and sending nothing
        // costs nothing.
        let mut body = Vec::new();
        let read = (&self.stream)
            .take(size as u64)
            .read_to_end(&mut body)
            .map_err(|e| closed(e, &self.security))?;
        if read < size {
            return Err(closed(ErrorKind::UnexpectedEof.into(), &self.security));
        }
        decode_response(body.into(), api_key, version, self.correlation).map_err(|e| {
            anyhow::anyhow!(
                "the broker at {} answered {api_key:?} v{version} outside Kafka's schema for it: {e}",
                self.addr
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_partition_goes_to_its_leader_and_a_leaderless_one_nowhere() {
        use offsetlab_wire::kafka_protocol::messages::metadata_response::{
            MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
        };
        let broker = |id: i32, port: i32| {
            MetadataResponseBroker::default()
                .with_node_id(id.into())
                .with_host(StrBytes::from_static_str("kafka"))
                .with_port(port)
        };
        let partition = |p: i32, leader: i32| {
            MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(leader.into())
        };
        let topic = |name: &'static str, error: i16, partitions| {
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str(name))))
                .with_error_code(error)
                .with_partitions(partitions)
        };
        let metadata = MetadataResponse::default()
            .with_brokers(vec![broker(1, 9092), broker(2, 9093)])
            .with_topics(vec![
                // Partition 2 is offline (no leader); partition 3's leader is not listed.
                topic(
                    "orders",
                    0,
                    vec![
                        partition(0, 1),
                        partition(1, 2),
                        partition(2, -1),
                        partition(3, 7),
                    ],
                ),
                topic("audit", 0, vec![partition(0, 2)]),
                topic("missing", 3, vec![]),
            ]);
        let leaders = leaders_of(&metadata);
        assert_eq!(leaders.len(), 3, "{leaders:?}");
        let tps: BTreeMap<String, Vec<i32>> = [
            ("orders".to_string(), vec![0, 1, 2, 3]),
            ("audit".to_string(), vec![0]),
            ("missing".to_string(), vec![0]),
        ]
        .into();
        let routed = by_leader(&leaders, &tps);
        let expected: BTreeMap<String, BTreeMap<String, Vec<i32>>> = [
            ("kafka:9092".to_string(), [("orders".to_string(), vec![0])].into()),
            (
                "kafka:9093".to_string(),
                [("audit".to_string(), vec![0]), ("orders".to_string(), vec![1])].into(),
            ),
        ]
        .into();
        assert_eq!(routed, expected);
    }

    #[test]
    fn no_secret_is_shown_when_the_arguments_are() {
        let args = ConnectArgs {
            bootstrap_server: "kafka:9092".into(),
            property: vec![
                "sasl.username=ada".into(),
                "sasl.password=hunter2".into(),
                "ssl.key.password=hunter3".into(),
                "sasl.oauthbearer.client.secret=hunter4".into(),
            ],
            command_config: None,
        };
        let shown = format!("{args:?}");
        assert!(
            shown.contains("sasl.username=ada") && shown.contains("sasl.password=***"),
            "{shown}"
        );
        assert!(!shown.contains("hunter"), "{shown}");
        let cluster = crate::cluster_cmd::ClusterArgs {
            property: args.property.clone(),
            ..Default::default()
        };
        assert!(!format!("{cluster:?}").contains("hunter"));
    }

    #[test]
    fn an_ipv6_host_is_bracketed_as_a_socket_address_is() {
        use std::net::ToSocketAddrs;
        assert_eq!(host_port("kafka-1", 9092), "kafka-1:9092");
        assert_eq!(host_port("::1", 9092), "[::1]:9092");
        assert_eq!(host_port("[::1]", 9092), "[::1]:9092");
        assert!(host_port("::1", 9092).to_socket_addrs().is_ok());
    }

    #[test]
    fn plaintext_is_the_default_and_tuning_keys_are_left_alone() {
        assert_eq!(Security::from_properties(&[]), Ok(Security::Plaintext));
        let p = props(&[("batch.num.messages", "1"), ("security.protocol", "plaintext")]);
        assert_eq!(Security::from_properties(&p), Ok(Security::Plaintext));
    }

    #[test]
    fn sasl_plain_takes_its_credentials_and_the_last_setting_wins() {
        let p = props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanisms", "SCRAM-SHA-256"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "first"),
            ("sasl.password", "p = w#d é"),
        ]);
        assert_eq!(
            Security::from_properties(&p),
            Ok(Security::SaslPlain {
                username: "alice".into(),
                password: "p = w#d é".into()
            })
        );
        let shown = format!("{:?}", Security::from_properties(&p));
        assert!(!shown.contains("p = w#d"), "{shown}");
    }

    #[test]
    fn what_this_client_cannot_do_is_refused_by_name() {
        for (p, says) in [
            (props(&[("security.protocol", "SASL_SSL")]), "do not speak TLS"),
            (props(&[("security.protocol", "SSL")]), "do not speak TLS"),
            (props(&[("security.protocol", "TCP")]), "expected PLAINTEXT"),
            (props(&[("security.protocol", "SASL_PLAINTEXT")]), "PLAIN only"),
            (
                props(&[
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "SCRAM-SHA-512"),
                ]),
                "PLAIN only",
            ),
            (
                props(&[
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "PLAIN"),
                    ("sasl.username", "alice"),
                ]),
                "needs sasl.password",
            ),
        ] {
            let e = Security::from_properties(&p).expect_err("refused");
            assert!(e.contains(says), "{e}");
        }
    }
}
