//! The web lab's HTTP server, with the bounds a public server needs even on 127.0.0.1: a page
//! or a script controls how many connections it opens and how slowly it talks.
//!
//! - at most [`HttpLimits::max_connections`] connections; at the cap a new one closes the
//!   connection idle longest (an open tab's event stream reconnects by itself), or is refused
//!   when every connection is answering a request ([`offsetlab_lab::connections`]);
//! - a request's headers must arrive within [`HttpLimits::header_timeout`] (slow loris);
//! - a connection with no bytes either way for [`HttpLimits::idle_timeout`] is closed (the
//!   page's event stream sends a keep-alive comment every 15 s, so a live tab stays connected);
//! - headers and request line are bounded in bytes;
//! - an accept that fails (no file descriptors left) is retried after a pause that doubles, up
//!   to a second — never in a loop that spins a core.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use offsetlab_lab::connections::Connections;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// The HTTP server's bounds.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: default_max_connections(),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// An eighth of the process's file descriptors, at least 16, at most 1,024.
pub fn default_max_connections() -> usize {
    let soft = offsetlab_storage::descriptor_limit().unwrap_or(1024);
    usize::try_from(soft / 8).unwrap_or(1024).clamp(16, 1024)
}

/// The largest request line and headers hyper buffers (the API's requests are small; bodies
/// have their own limit).
const MAX_HEAD_BYTES: usize = 64 << 10;

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let open = Connections::new(limits.max_connections);
    tokio::pin!(shutdown);
    loop {
        let (stream, slot) = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = open.accept(&listener) => accepted,
        };
        let _ = stream.set_nodelay(true);
        let slot = Arc::new(slot);
        let router = router.clone();
        let tracked = Arc::clone(&slot);
        // Busy while a request is answered (a response body that streams on — the event
        // stream — counts as idle).
        let service = tower::service_fn(move |req: axum::extract::Request<hyper::body::Incoming>| {
            let (slot, router) = (Arc::clone(&tracked), router.clone());
            // Busy once the request has arrived whole: a body trickled in a byte at a time
            // does not hold its connection's place.
            if hyper::body::Body::is_end_stream(req.body()) {
                slot.busy(true);
            }
            async move {
                let response = tower::ServiceExt::oneshot(
                    router,
                    req.map(|body| {
                        axum::body::Body::new(Arrived {
                            inner: body,
                            slot: Arc::clone(&slot),
                        })
                    }),
                )
                .await;
                slot.busy(false);
                response
            }
        });
        tokio::spawn(async move {
            let io = TokioIo::new(Idle::new(stream, limits.idle_timeout));
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(MAX_HEAD_BYTES)
                // A client that shuts its side down after sending still gets its answer.
                .half_close(true)
                .serve_connection(io, TowerToHyperService::new(service));
            tokio::select! {
                _ = connection => {}
                // Closed to make room for a new connection.
                () = slot.closed() => {}
            }
        });
    }
}

/// A request body that marks its connection busy once it has arrived whole.
struct Arrived {
    inner: hyper::body::Incoming,
    slot: Arc<offsetlab_lab::connections::Slot>,
}

impl hyper::body::Body for Arrived {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            self.slot.busy(true);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A stream that fails with `TimedOut` once no byte went either way for `timeout`.
struct Idle {
    inner: TcpStream,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl Idle {
    fn new(inner: TcpStream, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            deadline: Box::pin(tokio::time::sleep(timeout)),
        }
    }

    fn active(&mut self) {
        let next = tokio::time::Instant::now() + self.timeout;
        self.deadline.as_mut().reset(next);
    }

    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline.as_mut().poll(cx).is_ready()
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the connection was idle too long")
}

impl AsyncRead for Idle {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.active();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(timed_out())),
            other => other,
        }
    }
}

impl Idle {
    /// A write's outcome: bytes written count as activity; a write still pending once the
    /// connection has been silent too long fails.
    fn wrote(&mut self, cx: &mut Context<'_>, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match written {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.active();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(timed_out())),
            other => other,
        }
    }
}

impl AsyncWrite for Idle {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(cx, written)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
