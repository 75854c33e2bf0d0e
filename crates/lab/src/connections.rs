//! How many connections a listener holds: Kafka's `max.connections` for the Kafka listener, the
//! same rule for the HTTP server.
//!
//! Every connection costs a file descriptor, and a client controls how many it opens and how
//! long it keeps them. A listener admits at most its cap; when a new connection arrives at the
//! cap, the one idle longest — no request being answered — is closed to make room (an idle
//! client reconnects when it needs to, as Kafka clients and the page's event stream do), and if
//! every connection is busy the new one is refused. How long a connection may stay idle is each
//! listener's own rule (`connections.max.idle.ms` for Kafka, the web crate's `http` module for HTTP).

use offsetlab_storage::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The bounds the Kafka listener keeps to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `max.connections`: connections held at once.
    pub max_connections: usize,
    /// `connections.max.idle.ms`: how long a connection may go without completing a request,
    /// however many bytes of an unfinished one it trickles in (a slow-loris client holds
    /// nothing for long).
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: default_max_connections(),
            // Kafka's default, ten minutes.
            idle_timeout: Duration::from_secs(600),
        }
    }
}

/// A quarter of the process's file descriptors (the segment file pool takes another quarter),
/// at least 16, at most 10,000.
pub fn default_max_connections() -> usize {
    let soft = rlimit_soft();
    usize::try_from(soft / 4).unwrap_or(10_000).clamp(16, 10_000)
}

fn rlimit_soft() -> u64 {
    offsetlab_storage::descriptor_limit().unwrap_or(1024)
}

/// The connections the listener holds.
#[derive(Debug)]
pub struct Connections {
    max: usize,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Entry>>,
}

#[derive(Debug)]
struct Entry {
    /// When it last completed a request (or connected).
    active: Instant,
    /// A request is being answered: never closed to make room.
    busy: bool,
    close: Arc<Notify>,
}

/// A connection's place: given back when dropped.
pub struct Slot {
    id: u64,
    connections: Arc<Connections>,
    close: Arc<Notify>,
}

impl Connections {
    /// The next connection the listener may hold, and its slot. A failed accept (out of
    /// descriptors, or another transient error) never spins: an idle connection is closed to
    /// give a descriptor back, and the loop waits, longer each time (up to a second). A
    /// connection arriving while every held one is busy at the cap is closed at once.
    pub async fn accept(
        self: &Arc<Self>,
        listener: &tokio::net::TcpListener,
    ) -> (tokio::net::TcpStream, Slot) {
        let mut backoff = Duration::from_millis(5);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    backoff = Duration::from_millis(5);
                    if let Some(slot) = self.admit() {
                        return (stream, slot);
                    }
                }
                Err(e) => {
                    if matches!(e.raw_os_error(), Some(24 | 23)) {
                        self.shed_one();
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        lock(&self.open)
    }

    /// A place for a new connection: at the cap, the longest-idle connection is closed to make
    /// room; `None` when every one is busy.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut open = self.lock();
        if open.len() >= self.max {
            let victim = open
                .iter()
                .filter(|(_, e)| !e.busy)
                .min_by_key(|(_, e)| e.active)
                .map(|(id, _)| *id)?;
            if let Some(e) = open.remove(&victim) {
                e.close.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        open.insert(
            id,
            Entry {
                active: Instant::now(),
                busy: false,
                close: Arc::clone(&close),
            },
        );
        Some(Slot {
            id,
            connections: Arc::clone(self),
            close,
        })
    }

    /// Closes the connection idle longest (descriptors ran out: make one free).
    pub fn shed_one(&self) -> bool {
        let mut open = self.lock();
        let victim = open
            .iter()
            .filter(|(_, e)| !e.busy)
            .min_by_key(|(_, e)| e.active)
            .map(|(id, _)| *id);
        match victim.and_then(|id| open.remove(&id)) {
            Some(e) => {
                e.close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Slot {
    /// A request is being answered (`true`) or was answered (`false`).
    pub fn busy(&self, busy: bool) {
        if let Some(e) = self.connections.lock().get_mut(&self.id) {
            e.busy = busy;
            if !busy {
                e.active = Instant::now();
            }
        }
    }

    /// Resolves when the listener wants this connection closed.
    pub async fn closed(&self) {
        self.close.notified().await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room() {
        let c = Connections::new(2);
        let a = c.admit().expect("a");
        // `b` active strictly after `a`: admitted once the clock has moved past `a`'s admission.
        let admitted = Instant::now();
        while Instant::now() <= admitted {
            std::thread::yield_now();
        }
        let b = c.admit().expect("b");
        b.busy(false);
        let _c = c.admit().expect("room made");
        assert_eq!(c.len(), 2);
        // `a` was told to close; `b` stays.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        rt.block_on(async {
            tokio::time::timeout(Duration::from_millis(100), a.closed())
                .await
                .expect("a closes");
        });
        drop(a);
        assert_eq!(c.len(), 2, "a's place was already given away");
    }

    #[test]
    fn busy_connections_are_never_closed_to_make_room() {
        let c = Connections::new(1);
        let a = c.admit().expect("a");
        a.busy(true);
        assert!(
            c.admit().is_none(),
            "refused: the only connection is answering a request"
        );
        a.busy(false);
        assert!(c.admit().is_some());
    }
}
