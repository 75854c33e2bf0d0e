//! Starting `offsetlab serve` as a process and talking HTTP to it, for the integration tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

pub struct Lab {
    pub child: Child,
    pub addr: String,
    /// What it printed before "press Ctrl-C to stop".
    pub banner: String,
}

impl Drop for Lab {
    /// SIGKILL: the lab dies without a chance to close anything.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `offsetlab ARGS` to the end: what it printed and how it exited.
#[allow(dead_code)] // not every test binary runs a command to its end
pub fn offsetlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args(args)
        .output()
        .expect("run offsetlab")
}

pub fn serve(args: &[&str]) -> Lab {
    serve_via(Command::new(env!("CARGO_BIN_EXE_offsetlab")), args, Stdio::null())
}

/// [`serve`] with `vars` in the server's environment.
#[allow(dead_code)] // not every test binary sets one
pub fn serve_env(vars: &[(&str, &str)], args: &[&str]) -> Lab {
    let mut command = Command::new(env!("CARGO_BIN_EXE_offsetlab"));
    command.envs(vars.iter().copied());
    serve_via(command, args, Stdio::null())
}

/// [`serve`] with what the server logs kept: `lab.child.stderr` is a pipe.
#[allow(dead_code)] // not every test binary reads the log
pub fn serve_logging(args: &[&str]) -> Lab {
    serve_via(
        Command::new(env!("CARGO_BIN_EXE_offsetlab")),
        args,
        Stdio::piped(),
    )
}

/// Stops a lab started by [`serve_logging`] and returns everything it printed on stderr.
#[allow(dead_code)] // not every test binary reads the log
pub fn server_log(mut lab: Lab) -> String {
    let _ = lab.child.kill();
    let _ = lab.child.wait();
    let mut log = String::new();
    if let Some(mut stderr) = lab.child.stderr.take() {
        stderr.read_to_string(&mut log).expect("the server's log");
    }
    log
}

/// `offsetlab serve` with at most `descriptors` file descriptors (`ulimit -n`, soft and hard).
#[allow(dead_code)] // not every test binary limits the lab
pub fn serve_limited(descriptors: u32, args: &[&str]) -> Lab {
    let mut shell = Command::new("sh");
    shell.args([
        "-c",
        &format!("ulimit -n {descriptors} && exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_offsetlab"),
    ]);
    serve_via(shell, args, Stdio::null())
}

/// `offsetlab serve ARGS` started by `command` (the binary, or a shell that execs it).
fn serve_via(mut command: Command, args: &[&str], stderr: Stdio) -> Lab {
    // Tests never take the default Kafka port: a real broker may be on it.
    let kafka: &[&str] = if args.contains(&"--kafka") {
        &[]
    } else {
        &["--kafka", "off"]
    };
    let mut child = command
        .arg("serve")
        .args(args)
        .args(kafka)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut reader = BufReader::new(stdout);
    let mut banner = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("banner") == 0 || line.contains("Ctrl-C") {
            break;
        }
        banner.push_str(&line);
    }
    let addr = banner
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {banner:?}"))
        .to_string();
    Lab { child, addr, banner }
}

impl Lab {
    /// Where its Kafka listener listens (started with `--kafka 127.0.0.1:0`).
    #[allow(dead_code)] // not every test binary talks Kafka
    pub fn kafka(&self) -> String {
        self.banner
            .split("Kafka listener on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no Kafka listener in {:?}", self.banner))
            .to_string()
    }
}

/// One request on a new connection; the raw response.
pub fn http(addr: &str, method: &str, path: &str, body: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// The JSON body of a 200 response, or `None` for anything else.
pub fn ok_json(response: &str) -> Option<serde_json::Value> {
    if !response.starts_with("HTTP/1.1 200") {
        return None;
    }
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b)?;
    serde_json::from_str(body).ok()
}

/// A durable lab with its Kafka listener on a free port, and the listener's address.
#[allow(dead_code)] // not every test binary talks Kafka
pub fn with_kafka() -> (Lab, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.keep().display().to_string();
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let kafka = lab.kafka();
    (lab, kafka)
}

/// `POST /api/actions` with `lines`; the raw response.
#[allow(dead_code)]
pub fn act(lab: &Lab, lines: &[&str]) -> String {
    let body = serde_json::json!({ "lines": lines }).to_string();
    http(&lab.addr, "POST", "/api/actions", &body).expect("actions")
}

/// [`call`] for API `$api`: sends a `$api` request, gives back the `$api` response (anything
/// else fails the test).
#[allow(unused_macros)]
macro_rules! ask {
    ($stream:expr, $api:ident, $version:expr, $correlation:expr, $request:expr $(,)?) => {
        match common::call(
            $stream,
            offsetlab_wire::kafka_protocol::messages::ApiKey::$api,
            $version,
            $correlation,
            &offsetlab_wire::kafka_protocol::messages::RequestKind::$api($request),
        ) {
            offsetlab_wire::kafka_protocol::messages::ResponseKind::$api(r) => r,
            other => panic!(concat!("not a ", stringify!($api), " response: {:?}"), other),
        }
    };
}

/// One Kafka request over a plain socket, its response decoded: the wire as a client sends it.
#[allow(dead_code)]
pub fn call(
    stream: &mut TcpStream,
    api_key: offsetlab_wire::kafka_protocol::messages::ApiKey,
    version: i16,
    correlation_id: i32,
    body: &offsetlab_wire::kafka_protocol::messages::RequestKind,
) -> offsetlab_wire::kafka_protocol::messages::ResponseKind {
    let frame =
        offsetlab_wire::client::encode_request(api_key, version, correlation_id, "offsetlab-test", body)
            .expect("encode");
    stream.write_all(&frame).expect("send");
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).expect("size");
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).expect("body");
    offsetlab_wire::client::decode_response(bytes::Bytes::from(body), api_key, version, correlation_id)
        .expect("decode")
}

/// [`act`], which must succeed.
#[allow(dead_code)]
pub fn act_ok(lab: &Lab, lines: &[&str]) {
    let res = act(lab, lines);
    assert!(ok_json(&res).is_some(), "{res}");
}

/// The timestamp of `topic`-0's first record: where the seed's orders are on the lab's clock
/// (wall time for a live lab, the lab's epoch for a paused one).
#[allow(dead_code)] // not every test binary reads records
pub fn first_timestamp(addr: &str, topic: &str) -> i64 {
    let res = http(addr, "GET", &format!("/api/records?topic={topic}&limit=1"), "").expect("records");
    ok_json(&res)
        .and_then(|v| v["records"][0]["timestamp"].as_i64())
        .unwrap_or_else(|| panic!("no first record of {topic}: {res}"))
}

/// Partition 0 of `topic` as a Fetch (v11) hands it out: the stored batches, byte for byte.
#[allow(dead_code)] // not every test binary fetches
pub fn fetched(kafka: &str, topic: &str) -> Vec<u8> {
    let (code, bytes) = fetch_at(kafka, topic, 11);
    assert_eq!(code, 0, "fetch of {topic}");
    bytes
}

/// A Fetch of `version` for partition 0 of `topic` from offset 0: its error code and batches.
#[allow(dead_code)]
pub fn fetch_at(kafka: &str, topic: &str, version: i16) -> (i16, Vec<u8>) {
    use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use offsetlab_wire::kafka_protocol::messages::{
        ApiKey, FetchRequest, RequestKind, ResponseKind, TopicName,
    };
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let mut s = TcpStream::connect(kafka).expect("connect");
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(i32::MAX)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(i32::MAX)])]);
    let ResponseKind::Fetch(response) = call(&mut s, ApiKey::Fetch, version, 1, &RequestKind::Fetch(request))
    else {
        panic!("not a Fetch response");
    };
    let p = &response.responses[0].partitions[0];
    (
        p.error_code,
        p.records.as_ref().map(|b| b.to_vec()).unwrap_or_default(),
    )
}

/// The codec of each batch in `bytes` (as a Fetch carries them).
#[allow(dead_code)]
pub fn codecs(bytes: &[u8]) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let h = offsetlab_records::BatchHeader::parse(&bytes[at..]).expect("a batch");
        let codec = offsetlab_records::Compression::from_attributes(h.attributes).expect("a codec");
        out.push(codec.name());
        at += h.total_len;
    }
    out
}
