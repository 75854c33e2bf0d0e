//! What a run does to the cluster itself: check it can be reached, create the run's topics —
//! never one that exists —, and delete, at the end, only what the run created.
//!
//! rdkafka's admin calls are futures driven by librdkafka's own threads; a current-thread
//! runtime waits for each.

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;
use std::time::Duration;

/// Why the cluster did not do what a run needs. Each says what and where, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot reach the cluster at {bootstrap}: {why}")]
    Unreachable { bootstrap: String, why: String },
    #[error("topic {0:?} exists on the cluster: a run creates its own topics and never writes to one it did not create (choose another --prefix)")]
    TopicExists(String),
    #[error("the cluster refused {what}: {why}")]
    Refused { what: String, why: String },
    /// librdkafka refused a client property (`-X`, `--command-config`).
    #[error("client settings: {0}")]
    Settings(String),
}

/// Reaching the cluster failed: a property the client refused is the user's input (exit 2),
/// anything else the cluster not answering (exit 3) — with the client's own last complaint
/// (an authentication failure, say), which the metadata error alone does not name.
pub fn unreachable(bootstrap: &str, error: &KafkaError, complaints: &Complaints) -> ClusterError {
    if let KafkaError::ClientConfig(..) = error {
        return ClusterError::Settings(error.to_string());
    }
    let why = match complaints.last() {
        Some(last) => format!("{error}; the client said: {last}"),
        None => error.to_string(),
    };
    ClusterError::Unreachable {
        bootstrap: bootstrap.to_string(),
        why,
    }
}

/// A client context that keeps librdkafka's error reports (the reason a broker connection
/// failed: refused, TLS, SASL), so that an error can say what went wrong.
#[derive(Default)]
pub struct Complaints(std::sync::Mutex<Vec<String>>);

impl Complaints {
    pub fn last(&self) -> Option<String> {
        self.0.lock().ok().and_then(|v| v.last().cloned())
    }
}

impl Complaints {
    fn keep(&self, text: String) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() >= 16 {
                v.remove(0);
            }
            v.push(text);
        }
    }
}

impl rdkafka::consumer::ConsumerContext for Complaints {}

impl ClientContext for Complaints {
    fn error(&self, error: KafkaError, reason: &str) {
        self.keep(format!("{reason} ({error})"));
    }

    /// librdkafka says why a connection failed in its log (from its own threads, at once):
    /// the warnings and errors are what a user needs to hear.
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        use rdkafka::config::RDKafkaLogLevel as L;
        if matches!(level, L::Emerg | L::Alert | L::Critical | L::Error | L::Warning) {
            self.keep(format!("{fac}: {log_message}"));
        }
    }
}

impl ClusterError {
    /// The exit code a command answers it with: 3 when the cluster could not be reached, 2
    /// when what the run asked for cannot be done.
    pub fn exit_code(&self) -> u8 {
        match self {
            ClusterError::Unreachable { .. } => 3,
            ClusterError::TopicExists(_) | ClusterError::Refused { .. } | ClusterError::Settings(_) => 2,
        }
    }
}

/// A run's admin connection to the cluster.
pub struct Cluster {
    admin: AdminClient<Complaints>,
    bootstrap: String,
    wait: Waiter,
    timeout: Duration,
}

/// The runtime an admin call's future is waited on. It is dropped without blocking: a run may
/// end inside an async context (the page's server, after its last request), where a runtime's
/// ordinary drop panics.
struct Waiter(Option<tokio::runtime::Runtime>);

impl Waiter {
    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        match &self.0 {
            Some(rt) => rt.block_on(future),
            // Taken only by `drop`, after which nothing calls this.
            None => unreachable!("a waiter's runtime lives until the waiter is dropped"),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl Cluster {
    /// Connects, and asks the cluster for its metadata: a bootstrap server that does not answer
    /// within `timeout` (or refuses the client's credentials) is [`ClusterError::Unreachable`].
    pub fn connect(
        bootstrap: &str,
        extra: &[(String, String)],
        timeout: Duration,
    ) -> Result<Self, ClusterError> {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", bootstrap);
        for (k, v) in extra {
            config.set(k, v);
        }
        // The first contact is made by a client whose callbacks this thread serves (an admin
        // client's log and error reports wait on a queue nobody polls), so that a failure says
        // what the client saw: refused, TLS, SASL. It writes nothing.
        let mut probe = config.clone();
        // Without a `log` logger, rdkafka would tell librdkafka to say nothing at all.
        probe.set_log_level(rdkafka::config::RDKafkaLogLevel::Warning);
        let probe: rdkafka::consumer::BaseConsumer<Complaints> = probe
            .create_with_context(Complaints::default())
            .map_err(|e| unreachable(bootstrap, &e, &Complaints::default()))?;
        if let Err(e) = rdkafka::consumer::Consumer::fetch_metadata(&probe, None, timeout) {
            let _ = probe.poll(Duration::from_millis(100));
            return Err(unreachable(
                bootstrap,
                &e,
                rdkafka::consumer::Consumer::context(&probe),
            ));
        }
        drop(probe);
        let admin: AdminClient<Complaints> = config
            .create_with_context(Complaints::default())
            .map_err(|e| unreachable(bootstrap, &e, &Complaints::default()))?;
        let unreachable = |why: String| ClusterError::Unreachable {
            bootstrap: bootstrap.to_string(),
            why,
        };
        let wait = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| unreachable(format!("no runtime: {e}")))?;
        Ok(Self {
            admin,
            bootstrap: bootstrap.to_string(),
            wait: Waiter(Some(wait)),
            timeout,
        })
    }

    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    fn options(&self) -> AdminOptions {
        AdminOptions::new().operation_timeout(Some(self.timeout))
    }

    /// Whether `topic` exists on the cluster. Asked of every topic's metadata, never of the one
    /// topic's: a broker with `auto.create.topics.enable` creates a topic a client asks about by
    /// name, and a run must not create what it then refuses as existing.
    pub fn topic_exists(&self, topic: &str) -> Result<bool, ClusterError> {
        Ok(self.topic_partitions(topic)?.is_some())
    }

    /// How many partitions `topic` has on the cluster; `None` when it does not exist (asked as
    /// [`Self::topic_exists`] asks).
    pub fn topic_partitions(&self, topic: &str) -> Result<Option<i32>, ClusterError> {
        let metadata = self
            .admin
            .inner()
            .fetch_metadata(None, self.timeout)
            .map_err(|e| ClusterError::Refused {
                what: format!("the metadata of {topic:?}"),
                why: e.to_string(),
            })?;
        Ok(metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty())
            .map(|t| i32::try_from(t.partitions().len()).unwrap_or(i32::MAX)))
    }

    /// The partitions of `topics` (cluster names) that their leader cannot serve now, each said
    /// in a few words: one without a leader (every replica out of the cluster or out of sync —
    /// a partition whose only broker died, once the controller has fenced it), or one whose
    /// leader does not answer a connection (a broker killed moments ago, not fenced yet). Empty
    /// when every partition's leader answers, or when the cluster cannot say.
    pub fn lost_leaders(&self, topics: &[String]) -> Vec<String> {
        let Ok(metadata) = self.admin.inner().fetch_metadata(None, self.timeout) else {
            return Vec::new();
        };
        let brokers: std::collections::BTreeMap<i32, (String, i32)> = metadata
            .brokers()
            .iter()
            .map(|b| (b.id(), (b.host().to_string(), b.port())))
            .collect();
        let mut answers: std::collections::BTreeMap<i32, Option<String>> = std::collections::BTreeMap::new();
        let mut lost = Vec::new();
        for t in metadata
            .topics()
            .iter()
            .filter(|t| topics.iter().any(|n| n == t.name()))
        {
            for p in t.partitions() {
                let leader = p.leader();
                if leader < 0 {
                    lost.push(format!(
                        "{}-{} has no leader (its replicas, on broker(s) {:?}, are out of the cluster or out of sync)",
                        t.name(),
                        p.id(),
                        p.replicas()
                    ));
                    continue;
                }
                let silent = answers
                    .entry(leader)
                    .or_insert_with(|| match brokers.get(&leader) {
                        None => Some("it is not in the cluster's metadata".to_string()),
                        Some((host, port)) => does_not_answer(host, *port),
                    })
                    .clone();
                if let Some(why) = silent {
                    let at = brokers
                        .get(&leader)
                        .map_or(String::new(), |(h, port)| format!(" at {h}:{port}"));
                    lost.push(format!(
                        "{}-{}'s leader, broker {leader}{at}, does not answer ({why})",
                        t.name(),
                        p.id()
                    ));
                }
            }
        }
        lost
    }

    /// `group` as its coordinator describes it (ListGroups + DescribeGroups).
    fn described(&self, group: &str) -> Result<rdkafka::groups::GroupList, ClusterError> {
        self.admin
            .inner()
            .fetch_group_list(Some(group), self.timeout)
            .map_err(|e| ClusterError::Refused {
                what: format!("the description of group {group:?}"),
                why: e.to_string(),
            })
    }

    /// Whether a consumer group of that name is known to the cluster (any state but `Dead`).
    pub fn group_exists(&self, group: &str) -> Result<bool, ClusterError> {
        Ok(self
            .described(group)?
            .groups()
            .iter()
            .any(|g| g.name() == group && !matches!(g.state(), "Dead" | "")))
    }

    /// A classic group's state as its coordinator describes it (DescribeGroups):
    /// `PreparingRebalance`, `CompletingRebalance`, `Stable`, `Empty` — `Dead` for none.
    pub fn group_state(&self, group: &str) -> Result<String, ClusterError> {
        Ok(self
            .described(group)?
            .groups()
            .iter()
            .find(|g| g.name() == group)
            .map(|g| g.state())
            .filter(|s| !s.is_empty())
            .unwrap_or("Dead")
            .to_string())
    }

    /// The members of `group` as its coordinator describes them: (client id, member id). A
    /// coordinator that leaves the client id out (tansu 0.6 does) has it read from the member
    /// id, which Kafka's coordinator makes `<client.id>-<UUID>` — `<group.instance.id>-<UUID>`
    /// for a static member, whose instance id then stands in for its client id.
    pub fn members(&self, group: &str) -> Result<Vec<(String, String)>, ClusterError> {
        Ok(self
            .described(group)?
            .groups()
            .iter()
            .filter(|g| g.name() == group)
            .flat_map(|g| g.members().iter())
            .map(|m| {
                let client = match m.client_id() {
                    "" => client_id_of_member(m.id()),
                    client => client,
                };
                (client.to_string(), m.id().to_string())
            })
            .collect())
    }

    /// Creates `topic` with `partitions` and `configs`; one that exists already is refused,
    /// untouched.
    pub fn create_topic(
        &self,
        topic: &str,
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<(), ClusterError> {
        if self.topic_exists(topic)? {
            return Err(ClusterError::TopicExists(topic.to_string()));
        }
        let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(-1));
        for (k, v) in configs {
            new = new.set(k, v);
        }
        let results = self
            .wait
            .block_on(self.admin.create_topics([&new], &self.options()))
            .map_err(|e| ClusterError::Refused {
                what: format!("creating {topic:?}"),
                why: e.to_string(),
            })?;
        match results.into_iter().next() {
            Some(Ok(_)) => Ok(()),
            Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => {
                Err(ClusterError::TopicExists(topic.to_string()))
            }
            Some(Err((_, code))) => Err(ClusterError::Refused {
                what: format!("creating {topic:?}"),
                why: code.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Deletes the run's topics and groups (what it created, and nothing else): each failure
    /// named, none stopping the others.
    pub fn delete(&self, topics: &[String], groups: &[String]) -> Vec<ClusterError> {
        let mut failed = Vec::new();
        let opts = self.options();
        if !topics.is_empty() {
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            match self.wait.block_on(self.admin.delete_topics(&names, &opts)) {
                Ok(results) => failed.extend(results.into_iter().filter_map(Result::err).map(|(t, code)| {
                    ClusterError::Refused {
                        what: format!("deleting topic {t:?}"),
                        why: code.to_string(),
                    }
                })),
                Err(e) => failed.push(ClusterError::Refused {
                    what: "deleting the run's topics".into(),
                    why: e.to_string(),
                }),
            }
        }
        // A group's coordinator may be moving or loading (a new cluster creating
        // `__consumer_offsets`, a broker failing over): such a group is asked again, until the
        // timeout.
        let deadline = std::time::Instant::now() + self.timeout;
        let mut pending: Vec<&str> = groups.iter().map(String::as_str).collect();
        while !pending.is_empty() {
            let mut again = Vec::new();
            match self.wait.block_on(self.admin.delete_groups(&pending, &opts)) {
                Ok(results) => {
                    for (g, code) in results.into_iter().filter_map(Result::err) {
                        if coordinator_moving(code) && std::time::Instant::now() < deadline {
                            if let Some(name) = pending.iter().find(|p| **p == g) {
                                again.push(*name);
                            }
                            continue;
                        }
                        // A group no consumer ever committed in does not exist to delete.
                        if code != RDKafkaErrorCode::GroupIdNotFound {
                            failed.push(ClusterError::Refused {
                                what: format!("deleting group {g:?}"),
                                why: code.to_string(),
                            });
                        }
                    }
                }
                Err(e) => failed.push(ClusterError::Refused {
                    what: "deleting the run's groups".into(),
                    why: e.to_string(),
                }),
            }
            if !again.is_empty() {
                std::thread::sleep(Duration::from_millis(200));
            }
            pending = again;
        }
        failed
    }
}

/// Why a broker at `host:port` takes no connection within a second; `None` when it does.
fn does_not_answer(host: &str, port: i32) -> Option<String> {
    use std::net::ToSocketAddrs;
    let port = u16::try_from(port).ok()?;
    let addrs = match (host, port).to_socket_addrs() {
        Ok(a) => a,
        Err(e) => return Some(e.to_string()),
    };
    let mut why = None;
    for addr in addrs {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Ok(_) => return None,
            Err(e) => why = Some(e.to_string()),
        }
    }
    why
}

/// Whether a group request failed because the group's coordinator is not where the client
/// asked, or not ready yet: Kafka answers so while `__consumer_offsets` is being created or
/// loaded (a new cluster's first group), and while a coordinator moves to another broker. The
/// request is to be asked again.
pub fn coordinator_moving(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::NotCoordinator
            | RDKafkaErrorCode::CoordinatorNotAvailable
            | RDKafkaErrorCode::CoordinatorLoadInProgress
    )
}

/// The client id a member id was made from: Kafka's coordinator names a member
/// `<client.id>-<UUID>` (a random UUID in its 36-character form; a static member's is its
/// `group.instance.id` instead); anything else gives "".
fn client_id_of_member(member_id: &str) -> &str {
    const UUID_LEN: usize = 36;
    let Some(split) = member_id.len().checked_sub(UUID_LEN + 1) else {
        return "";
    };
    let (Some(client), Some(uuid)) = (member_id.get(..split), member_id.get(split + 1..)) else {
        return "";
    };
    let is_uuid = uuid.char_indices().all(|(i, c)| match i {
        8 | 13 | 18 | 23 => c == '-',
        _ => c.is_ascii_hexdigit(),
    });
    if member_id.as_bytes().get(split) == Some(&b'-') && is_uuid {
        client
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::client_id_of_member;

    #[test]
    fn a_member_id_gives_the_client_id_it_was_made_from() {
        assert_eq!(
            client_id_of_member("c1-1ee6542b-9765-4f52-8ee8-28fe7abae9b1"),
            "c1"
        );
        assert_eq!(
            client_id_of_member("billing-c-2-00000000-0000-0000-0000-00000000000a"),
            "billing-c-2"
        );
        // The client id may be empty; anything not ending in -UUID gives nothing.
        assert_eq!(client_id_of_member("-1ee6542b-9765-4f52-8ee8-28fe7abae9b1"), "");
        assert_eq!(client_id_of_member("c1"), "");
        assert_eq!(client_id_of_member("c1-1ee6542b-9765-4f52-8ee8-28fe7abae9bz"), "");
        assert_eq!(client_id_of_member("c1_1ee6542b-9765-4f52-8ee8-28fe7abae9b1"), "");
        assert_eq!(client_id_of_member("é-1ee6542b-9765-4f52-8ee8-28fe7abae9b"), "");
    }
}
