//! The listener's sockets: accepting connections within the cap, reading frames with a size
//! limit checked before allocation, answering them in order, and closing what is idle.
//!
//! Each connection is a task. A malformed frame, an unknown API or an unserved version of any
//! API but ApiVersions closes that connection and nothing else, as a Kafka broker does; so does
//! a failed SASL authentication, once the client has been told why.

use crate::apis::{answer, Client, Reply};
use crate::broker::Broker;
use bytes::BytesMut;
use offsetlab_lab::connections::{Connections, Slot};
use offsetlab_wire::frame::{bytes_wanted, split_frame};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request frame at least this large is left the only owner of its bytes (see [`connection`]).
const OWN_BUFFER_FRAME: usize = 64 << 10;

/// Numbers connections, for what belongs to one (a share session).
static NEXT_CONNECTION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The share sessions a connection opened end with it, however it ends: Kafka removes them and
/// releases the records their members held at once — a share consumer killed mid-batch has its
/// records delivered again as soon as its connection closes, not when their locks run out.
struct ShareSessionsOf {
    broker: Arc<Broker>,
    connection: u64,
}

impl Drop for ShareSessionsOf {
    fn drop(&mut self) {
        let closed = self.broker.share_sessions.close_connection(self.connection);
        if closed.is_empty() {
            return;
        }
        let broker = Arc::clone(&self.broker);
        tokio::task::spawn_blocking(move || {
            for (group, member) in closed {
                // A member that opened a session again meanwhile (a client reconnecting) holds
                // records of the new one: they are not the closed connection's to release.
                if !broker.share_sessions.has(&group, &member) {
                    crate::handlers::share_fetch::release(&broker, &group, &member);
                }
            }
        });
    }
}

/// A connection's first buffer, and the least room a read makes.
const READ_CHUNK: usize = 16 << 10;

/// Accepts connections until the runtime stops.
pub(crate) async fn accept(listener: TcpListener, broker: Arc<Broker>) {
    let open = Connections::new(broker.config.limits.max_connections);
    loop {
        let (stream, slot) = open.accept(&listener).await;
        let broker = Arc::clone(&broker);
        tokio::spawn(async move {
            let _ = connection(stream, &broker, slot).await;
        });
    }
}

async fn connection(mut stream: TcpStream, broker: &Arc<Broker>, slot: Slot) -> std::io::Result<()> {
    let idle = broker.config.limits.idle_timeout;
    // Completing a request moves the deadline; bytes of an unfinished one do not.
    let mut deadline = tokio::time::Instant::now() + idle;
    // Kafka prints a member's host as `/address`.
    let host = stream
        .peer_addr()
        .map_or_else(|_| "/unknown".to_string(), |a| format!("/{}", a.ip()));
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut client = Client {
        host: &host,
        sasl: Default::default(),
        connection: NEXT_CONNECTION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    };
    let _sessions = ShareSessionsOf {
        broker: Arc::clone(broker),
        connection: client.connection,
    };
    loop {
        loop {
            let limit = frame_limit(broker, &client);
            let frame = match split_frame(&mut buf, limit) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return Ok(()), // a size over the limit: close
            };
            if frame.len() >= OWN_BUFFER_FRAME {
                // The frame shares its allocation with what follows it in `buf`: give the rest
                // (usually nothing, or the start of the next request) a buffer of its own, so
                // the frame's bytes have one owner and a Produce request's batches can be
                // appended in place, not copied first.
                let mut rest = BytesMut::with_capacity(buf.len().max(READ_CHUNK));
                rest.extend_from_slice(&buf);
                buf = rest;
            }
            slot.busy(true);
            match answer(frame.freeze(), broker, &mut client).await {
                Reply::Frame(out) => stream.write_all(&out).await?,
                // A failed authentication: after Kafka's delay, the client hears why, then the
                // connection ends.
                Reply::FailedAuthentication(out) => {
                    tokio::time::sleep(crate::auth_failures::FAILED_AUTHENTICATION_DELAY).await;
                    if let Some(out) = out {
                        stream.write_all(&out).await?;
                    }
                    return Ok(());
                }
                Reply::Nothing => {}
                Reply::Close => return Ok(()), // malformed or unserved: close, as Kafka does
            }
            slot.busy(false);
            deadline = tokio::time::Instant::now() + idle;
        }
        buf.reserve(read_room(
            buf.len(),
            bytes_wanted(&buf, frame_limit(broker, &client)),
        ));
        let read = tokio::select! {
            // Closed to make room for a new connection.
            () = slot.closed() => return Ok(()),
            read = tokio::time::timeout_at(deadline, stream.read_buf(&mut buf)) => read,
        };
        match read {
            // `connections.max.idle.ms` passed without a complete request.
            Err(_) => return Ok(()),
            Ok(Ok(0)) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e),
        }
    }
}

/// How much room the next read makes: what the frame being read still needs, but no more than
/// has already arrived (and at least [`READ_CHUNK`]). A client that announced a 100 MB request
/// and sent a few bytes of it holds kilobytes, not the megabyte a read used to make room for
/// (5 GB at the 5,000-connection cap); a large request that really arrives doubles its buffer
/// as it comes, a few reads per megabyte.
fn read_room(buffered: usize, wanted: usize) -> usize {
    wanted.clamp(1, buffered.max(READ_CHUNK))
}

/// The largest frame a connection may send now: `socket.request.max.bytes`, or — on a SASL
/// listener, before the client authenticated — Kafka's `sasl.server.max.receive.size` (512 KiB),
/// so that nobody unauthenticated makes the lab hold a large request.
fn frame_limit(broker: &Broker, client: &Client<'_>) -> usize {
    let max = broker.config.max_request_bytes;
    match &broker.config.sasl_plain {
        Some(_) if !matches!(client.sasl, crate::sasl::SaslState::Authenticated(_)) => {
            max.min(crate::sasl::MAX_UNAUTHENTICATED_FRAME)
        }
        _ => max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_sent_request_holds_what_arrived_not_what_it_announced() {
        // A 100 MB request announced, its size (4 bytes) arrived: one chunk.
        assert_eq!(read_room(4, 100 << 20), READ_CHUNK);
        // What arrives doubles the room, never more than the frame still needs.
        assert_eq!(read_room(1 << 20, 99 << 20), 1 << 20);
        assert_eq!(read_room(1 << 20, 300), 300);
        // A read always makes some room.
        assert_eq!(read_room(0, 0), 1);
        // From the announcement to the whole frame, the buffer stays within twice what came.
        let (total, mut buffered, mut capacity) = (100usize << 20, 4usize, READ_CHUNK);
        while buffered < total {
            capacity = capacity.max(buffered + read_room(buffered, total - buffered));
            assert!(
                capacity <= 2 * buffered.max(READ_CHUNK),
                "{capacity} for {buffered}"
            );
            buffered = capacity; // the read filled the room
        }
    }
}
