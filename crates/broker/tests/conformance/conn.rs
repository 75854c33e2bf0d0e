//! A blocking Kafka client connection: a request encoded with `kafka-protocol` behind its
//! header and size, the response frame read back and decoded for the API and version it
//! answers. The same bytes go to the lab and to Apache Kafka.

use bytes::{Bytes, BytesMut};
use offsetlab_wire::client::encode_request;
use offsetlab_wire::kafka_protocol::messages::{ApiKey, RequestKind, ResponseHeader};
use offsetlab_wire::kafka_protocol::protocol::{Decodable, Request};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// What a request got.
#[derive(Debug)]
pub enum Outcome<T> {
    Response(T),
    /// The broker closed the connection instead of answering (an unserved version, say).
    Closed,
    /// Nothing is due (a Produce with `acks=0`).
    NoResponse,
}

#[derive(Debug)]
pub enum ConnError {
    Connect(String, std::io::Error),
    Client(offsetlab_wire::client::ClientError),
    Io(String, std::io::Error),
    BadSize(i32),
    Decode(String),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect(a, e) => write!(f, "cannot connect to {a}: {e}"),
            Self::Client(e) => write!(f, "{e}"),
            Self::Io(a, e) => write!(f, "i/o with {a}: {e}"),
            Self::BadSize(n) => write!(f, "a response frame of {n} bytes"),
            Self::Decode(e) => write!(f, "cannot decode: {e}"),
        }
    }
}

impl From<offsetlab_wire::client::ClientError> for ConnError {
    fn from(e: offsetlab_wire::client::ClientError) -> Self {
        Self::Client(e)
    }
}

pub struct Conn {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    correlation: i32,
    client_id: String,
}

impl Conn {
    pub fn new(addr: &str, client_id: &str) -> Result<Self, ConnError> {
        let addr = addr
            .to_socket_addrs()
            .map_err(|e| ConnError::Connect(addr.to_string(), e))?
            .next()
            .ok_or_else(|| {
                ConnError::Connect(
                    addr.to_string(),
                    std::io::Error::new(ErrorKind::NotFound, "no address"),
                )
            })?;
        Ok(Self {
            addr,
            stream: None,
            correlation: 0,
            client_id: client_id.to_string(),
        })
    }

    /// Closes the connection; the next request opens another.
    pub fn reset(&mut self) {
        self.stream = None;
    }

    fn stream(&mut self) -> Result<&mut TcpStream, ConnError> {
        if self.stream.is_none() {
            let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(10))
                .map_err(|e| ConnError::Connect(self.addr.to_string(), e))?;
            s.set_read_timeout(Some(Duration::from_secs(60)))
                .map_err(|e| ConnError::Io(self.addr.to_string(), e))?;
            s.set_nodelay(true)
                .map_err(|e| ConnError::Io(self.addr.to_string(), e))?;
            self.stream = Some(s);
        }
        self.stream
            .as_mut()
            .ok_or_else(|| ConnError::Io("no stream".into(), std::io::Error::from(ErrorKind::NotConnected)))
    }

    /// Sends `req` at `version` and reads the answer.
    pub fn call<R>(
        &mut self,
        version: i16,
        req: R,
        expects_answer: bool,
    ) -> Result<Outcome<R::Response>, ConnError>
    where
        R: Request + Into<RequestKind>,
    {
        let Some(correlation) = self.send(version, req)? else {
            return Ok(Outcome::Closed);
        };
        if !expects_answer {
            return Ok(Outcome::NoResponse);
        }
        self.receive::<R>(version, correlation)
    }

    /// Writes `req` without waiting for its answer: its correlation id, or `None` when the
    /// connection was closed.
    pub fn send<R>(&mut self, version: i16, req: R) -> Result<Option<i32>, ConnError>
    where
        R: Request + Into<RequestKind>,
    {
        self.correlation += 1;
        let correlation = self.correlation;
        let api_key = ApiKey::try_from(R::KEY).map_err(|_| ConnError::BadSize(i32::from(R::KEY)))?;
        let frame = encode_request(api_key, version, correlation, &self.client_id, &req.into())?;
        Ok(self.write(&frame)?.then_some(correlation))
    }

    /// Reads the answer to the request sent with `correlation`.
    pub fn receive<R>(&mut self, version: i16, correlation: i32) -> Result<Outcome<R::Response>, ConnError>
    where
        R: Request,
    {
        let api_key = ApiKey::try_from(R::KEY).map_err(|_| ConnError::BadSize(i32::from(R::KEY)))?;
        let Some(mut frame) = self.read()? else {
            return Ok(Outcome::Closed);
        };
        let header_version = if api_key == ApiKey::ApiVersions {
            0
        } else {
            api_key.response_header_version(version)
        };
        let header = ResponseHeader::decode(&mut frame, header_version)
            .map_err(|e| ConnError::Decode(format!("{api_key:?} v{version} header: {e}")))?;
        if header.correlation_id != correlation {
            return Err(ConnError::Decode(format!(
                "correlation id {} answers {correlation}",
                header.correlation_id
            )));
        }
        let body = R::Response::decode(&mut frame, version)
            .map_err(|e| ConnError::Decode(format!("{api_key:?} v{version}: {e}")))?;
        if !frame.is_empty() {
            return Err(ConnError::Decode(format!(
                "{api_key:?} v{version}: {} bytes left after the response",
                frame.len()
            )));
        }
        Ok(Outcome::Response(body))
    }

    /// Sends a request header for `api_key` v`version` followed by `body` as given: for
    /// versions the codec cannot encode (Produce v0–v2, which Kafka 4 advertises but refuses).
    /// A response is returned as its length.
    pub fn call_raw(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
    ) -> Result<Outcome<usize>, ConnError> {
        self.correlation += 1;
        let mut header = Vec::new();
        header.extend_from_slice(&(api_key as i16).to_be_bytes());
        header.extend_from_slice(&version.to_be_bytes());
        header.extend_from_slice(&self.correlation.to_be_bytes());
        header.extend_from_slice(&(self.client_id.len() as i16).to_be_bytes());
        header.extend_from_slice(self.client_id.as_bytes());
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&((header.len() + body.len()) as i32).to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(body);
        if !self.write(&frame)? {
            return Ok(Outcome::Closed);
        }
        Ok(match self.read()? {
            Some(f) => Outcome::Response(f.len()),
            None => Outcome::Closed,
        })
    }

    /// Writes a frame: `false` when the peer had closed the connection.
    fn write(&mut self, frame: &[u8]) -> Result<bool, ConnError> {
        let addr = self.addr.to_string();
        let stream = self.stream()?;
        match stream.write_all(frame) {
            Ok(()) => Ok(true),
            Err(e) if is_closed(&e) => {
                self.stream = None;
                Ok(false)
            }
            Err(e) => {
                self.stream = None;
                Err(ConnError::Io(addr, e))
            }
        }
    }

    /// Reads a frame (its size removed): `None` when the peer closed the connection.
    fn read(&mut self) -> Result<Option<Bytes>, ConnError> {
        let addr = self.addr.to_string();
        let stream = self.stream()?;
        let mut size = [0u8; 4];
        match stream.read_exact(&mut size) {
            Ok(()) => {}
            Err(e) if is_closed(&e) => {
                self.stream = None;
                return Ok(None);
            }
            Err(e) => {
                self.stream = None;
                return Err(ConnError::Io(addr, e));
            }
        }
        let n = i32::from_be_bytes(size);
        if !(4..=256 << 20).contains(&n) {
            self.stream = None;
            return Err(ConnError::BadSize(n));
        }
        let mut body = vec![0u8; n as usize];
        if let Err(e) = stream.read_exact(&mut body) {
            self.stream = None;
            return Err(ConnError::Io(addr, e));
        }
        Ok(Some(Bytes::from(body)))
    }
}

fn is_closed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::BrokenPipe
            | ErrorKind::ConnectionAborted
    )
}
