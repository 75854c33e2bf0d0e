//! One broker under test: a connection, its normalisation context, and the transcript of every
//! exchange a conversation had with it.

use crate::conn::{Conn, Outcome};
use crate::normalize::Ctx;
use crate::tree::{flatten, parse, Flat};
use offsetlab_wire::kafka_protocol::messages::{ApiKey, RequestKind};
use offsetlab_wire::kafka_protocol::protocol::Request;
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Why a conversation stopped before its end on one broker (an answer it could not go on from).
#[derive(Debug, Clone)]
pub struct Abort(pub String);

pub type Step<T> = Result<T, Abort>;

/// Ends the conversation with `why` (formatted) unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err($crate::target::Abort(format!($($why)+)));
        }
    };
}

/// (API, from version, to version, path): fields those versions of the response do not carry.
const NOT_IN_VERSION: &[(ApiKey, i16, i16, &str)] = &[
    // From v4 a FindCoordinator answer is its `coordinators` list only.
    (ApiKey::FindCoordinator, 4, 6, "node_id"),
    (ApiKey::FindCoordinator, 4, 6, "host"),
    (ApiKey::FindCoordinator, 4, 6, "port"),
];

/// A request sent and not yet answered.
pub struct Pending {
    conn: usize,
    correlation: i32,
    version: i16,
    step: String,
}

/// One request and its normalised answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub conversation: String,
    pub step: String,
    pub api_key: i16,
    pub version: i16,
    pub answer: Flat,
}

pub struct Target {
    /// `lab` or `kafka`.
    pub side: &'static str,
    pub bootstrap: String,
    /// Connections: the active one takes each request (a second member is a second client).
    conns: Vec<Conn>,
    active: usize,
    pub ctx: Ctx,
    pub run: String,
    pub conversation: String,
    pub exchanges: Vec<Exchange>,
    /// Every (api key, version) sent in a recorded exchange.
    pub sent: BTreeSet<(i16, i16)>,
    /// The first timestamp records of this run carry (the same on both brokers).
    pub base_ts: i64,
}

pub fn api_name(key: i16) -> String {
    ApiKey::try_from(key).map_or_else(|_| format!("Api{key}"), |k| format!("{k:?}"))
}

impl Target {
    pub fn new(side: &'static str, bootstrap: &str, ctx: Ctx, run: &str) -> Step<Self> {
        Ok(Self {
            side,
            bootstrap: bootstrap.to_string(),
            conns: vec![Conn::new(bootstrap, "conformance").map_err(|e| Abort(e.to_string()))?],
            active: 0,
            ctx,
            run: run.to_string(),
            conversation: String::new(),
            exchanges: Vec::new(),
            sent: BTreeSet::new(),
            base_ts: 0,
        })
    }

    /// The next request goes on a new connection; back to the first client.
    pub fn fresh_connection(&mut self) {
        for c in &mut self.conns {
            c.reset();
        }
        self.active = 0;
    }

    /// Requests go on connection `i` (another client) from now on.
    pub fn use_conn(&mut self, i: usize) -> Step<()> {
        while self.conns.len() <= i {
            let n = self.conns.len();
            self.conns.push(
                Conn::new(&self.bootstrap, &format!("conformance-{n}")).map_err(|e| Abort(e.to_string()))?,
            );
        }
        self.active = i;
        Ok(())
    }

    fn conn(&mut self) -> &mut Conn {
        &mut self.conns[self.active]
    }

    /// Sends `req` on the active connection without waiting; [`Target::collect`] reads and
    /// records its answer later (a JoinGroup that waits for a rebalance, say).
    pub fn send_later<R>(&mut self, step: &str, version: i16, req: R) -> Step<Pending>
    where
        R: Request + Into<RequestKind>,
    {
        let correlation = self
            .conn()
            .send(version, req)
            .map_err(|e| Abort(format!("{step}: {e}")))?
            .ok_or_else(|| Abort(format!("{step}: the connection was closed")))?;
        Ok(Pending {
            conn: self.active,
            correlation,
            version,
            step: step.to_string(),
        })
    }

    /// The answer to a request sent with [`Target::send_later`], recorded now.
    pub fn collect<R>(&mut self, p: Pending) -> Step<R::Response>
    where
        R: Request,
        R::Response: Debug,
    {
        let out = self.conns[p.conn]
            .receive::<R>(p.version, p.correlation)
            .map_err(|e| Abort(format!("{}: {e}", p.step)))?;
        match out {
            Outcome::Response(r) => {
                let flat = self.flat_of(&p.step, R::KEY, p.version, &format!("{r:?}"))?;
                self.record(&p.step, R::KEY, p.version, flat);
                Ok(r)
            }
            other => Err(Abort(format!("{}: {other:?} instead of an answer", p.step))),
        }
    }

    /// This broker's node id, as a config resource names it.
    pub fn node_name(&self) -> String {
        self.ctx.node.to_string()
    }

    /// A name of this run's: `<run>-what`.
    pub fn name(&self, what: &str) -> String {
        format!("{}-{what}", self.run)
    }

    fn record(&mut self, step: &str, api_key: i16, version: i16, answer: Flat) {
        self.sent.insert((api_key, version));
        self.exchanges.push(Exchange {
            conversation: self.conversation.clone(),
            step: step.to_string(),
            api_key,
            version,
            answer,
        });
    }

    fn flat_of(&mut self, step: &str, key: i16, version: i16, debug: &str) -> Step<Flat> {
        let tree = parse(debug).map_err(|e| Abort(format!("{step}: the answer does not parse: {}", e.0)))?;
        let mut flat = flatten(&self.ctx.normalize(tree));
        // Fields this version does not carry: the codec leaves its defaults there, which the
        // node-id normalisation could tell apart (the lab is node 0).
        for &(api, from, to, path) in NOT_IN_VERSION {
            if api as i16 == key && (from..=to).contains(&version) {
                flat.remove(path);
            }
        }
        // A broker's own id as a config value (broker.id, node.id and their synonyms).
        let node = format!("\"{}\"", self.ctx.node);
        for (k, v) in flat.iter_mut() {
            let own_id = k.contains("configs[broker.id]") || k.contains("configs[node.id]");
            if own_id && k.ends_with(".value") && *v == node {
                *v = "<node>".into();
            }
        }
        Ok(flat)
    }

    /// Sends `req` at `version`, records the exchange, and returns the outcome.
    pub fn call<R>(&mut self, step: &str, version: i16, req: R) -> Step<Outcome<R::Response>>
    where
        R: Request + Into<RequestKind>,
        R::Response: Debug,
    {
        self.call_keeping(step, version, req, |_| {})
    }

    /// [`Target::call`], the answer trimmed by `keep` before it is recorded (a listing that
    /// holds other runs' topics or groups on a Kafka used before).
    pub fn call_keeping<R>(
        &mut self,
        step: &str,
        version: i16,
        req: R,
        keep: impl FnOnce(&mut R::Response),
    ) -> Step<Outcome<R::Response>>
    where
        R: Request + Into<RequestKind>,
        R::Response: Debug,
    {
        let mut out = self
            .conn()
            .call(version, req, true)
            .map_err(|e| Abort(format!("{step}: {e}")))?;
        if let Outcome::Response(r) = &mut out {
            keep(r);
        }
        let flat = match &out {
            Outcome::Response(r) => self.flat_of(step, R::KEY, version, &format!("{r:?}"))?,
            Outcome::Closed => outcome("connection closed"),
            Outcome::NoResponse => outcome("no response"),
        };
        self.record(step, R::KEY, version, flat);
        Ok(out)
    }

    /// [`Target::call_keeping`] for a request that must be answered.
    pub fn ask_keeping<R>(
        &mut self,
        step: &str,
        version: i16,
        req: R,
        keep: impl FnOnce(&mut R::Response),
    ) -> Step<R::Response>
    where
        R: Request + Into<RequestKind>,
        R::Response: Debug,
    {
        match self.call_keeping(step, version, req, keep)? {
            Outcome::Response(r) => Ok(r),
            other => Err(Abort(format!("{step}: {other:?} instead of an answer"))),
        }
    }

    /// [`Target::call`] for a request that must be answered.
    pub fn ask<R>(&mut self, step: &str, version: i16, req: R) -> Step<R::Response>
    where
        R: Request + Into<RequestKind>,
        R::Response: Debug,
    {
        match self.call(step, version, req)? {
            Outcome::Response(r) => Ok(r),
            other => Err(Abort(format!("{step}: {other:?} instead of an answer"))),
        }
    }

    /// A request that gets no answer (a Produce with acks=0), recorded as such.
    pub fn send_only<R>(&mut self, step: &str, version: i16, req: R) -> Step<()>
    where
        R: Request + Into<RequestKind>,
    {
        self.conn()
            .call(version, req, false)
            .map_err(|e| Abort(format!("{step}: {e}")))?;
        self.record(step, R::KEY, version, outcome("no response"));
        Ok(())
    }

    /// A request header and hand-made body, for a version the codec cannot encode.
    pub fn call_raw(&mut self, step: &str, api_key: ApiKey, version: i16, body: &[u8]) -> Step<()> {
        let out = self
            .conn()
            .call_raw(api_key, version, body)
            .map_err(|e| Abort(format!("{step}: {e}")))?;
        let flat = match out {
            Outcome::Response(n) => outcome(&format!("an answer of {n} bytes")),
            Outcome::Closed => outcome("connection closed"),
            Outcome::NoResponse => outcome("no response"),
        };
        self.record(step, api_key as i16, version, flat);
        Ok(())
    }

    /// A request that is not part of the comparison (waiting for a broker to be ready).
    pub fn quiet<R>(&mut self, version: i16, req: R) -> Step<R::Response>
    where
        R: Request + Into<RequestKind>,
        R::Response: Debug,
    {
        match self.conn().call(version, req, true) {
            Ok(Outcome::Response(r)) => Ok(r),
            Ok(other) => Err(Abort(format!("{other:?} instead of an answer"))),
            Err(e) => Err(Abort(e.to_string())),
        }
    }

    /// Repeats `check` (quietly) until it holds, for at most `within`.
    pub fn wait_until(
        &mut self,
        what: &str,
        within: Duration,
        mut check: impl FnMut(&mut Self) -> Step<bool>,
    ) -> Step<()> {
        let deadline = Instant::now() + within;
        loop {
            if check(self)? {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Abort(format!("never {what} (waited {within:?})")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Notes that the conversation stopped early, as an exchange of its own (compared too).
    pub fn ended(&mut self, why: &str) {
        let mut flat = Flat::new();
        flat.insert("<ended>".into(), self.ctx.text(why));
        self.exchanges.push(Exchange {
            conversation: self.conversation.clone(),
            step: "<ended early>".into(),
            api_key: -1,
            version: -1,
            answer: flat,
        });
    }
}

fn outcome(what: &str) -> Flat {
    let mut flat = Flat::new();
    flat.insert("<outcome>".into(), what.to_string());
    flat
}
