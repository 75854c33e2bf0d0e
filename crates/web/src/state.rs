//! What every handler of the server shares: which labs it serves (one, or a workshop's), the
//! names it answers to, the explorer's matrix once computed, and the cluster it mirrors. Its own
//! module because the lab's API, the workshop's endpoints and the guards all take it, and none of
//! them owns it.

use crate::workshop::Workshop;
use offsetlab_lab::LabHandle;
use offsetlab_scenario::explore::Cell;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

/// The explorer's answer, computed once: the consumer-group cells and the share rows.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Matrix {
    pub(crate) cells: Vec<Cell>,
    pub(crate) share: Vec<offsetlab_scenario::explore_share::ShareCell>,
}

#[derive(Clone)]
pub struct AppState {
    pub(crate) labs: Labs,
    /// The `Host` headers the lab answers: its loopback names, and the public names it was
    /// given (`--public-host`). Any other is refused: a page whose name was made to resolve to
    /// the lab (DNS rebinding) sends its own name.
    hosts: Arc<Vec<String>>,
    pub(crate) matrix: Arc<OnceLock<Matrix>>,
    /// `serve --bootstrap-server`: the lab runs on a real cluster as well.
    pub(crate) cluster: Option<Arc<crate::cluster::ClusterMirror>>,
}

impl AppState {
    /// `public_hosts`: further names the lab answers to (`--public-host`), each `NAME` (on the
    /// lab's port) or `NAME:PORT`.
    pub fn new(lab: LabHandle, addr: SocketAddr, public_hosts: &[String]) -> Self {
        Self::serving(Labs::One(lab), addr, public_hosts)
    }

    /// A workshop's server: every request's lab is its learner's ([`crate::workshop`]).
    pub fn workshop(workshop: Arc<Workshop>, addr: SocketAddr, public_hosts: &[String]) -> Self {
        Self::serving(Labs::Workshop(workshop), addr, public_hosts)
    }

    fn serving(labs: Labs, addr: SocketAddr, public_hosts: &[String]) -> Self {
        let port = addr.port();
        let mut hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
            addr.to_string(),
        ];
        for h in public_hosts {
            let h = h.trim().to_ascii_lowercase();
            let has_port = h.rsplit_once(':').is_some_and(|(name, p)| {
                !name.ends_with(':') && p.parse::<u16>().is_ok() && !h.ends_with(']')
            });
            hosts.push(if has_port { h } else { format!("{h}:{port}") });
        }
        Self {
            labs,
            hosts: Arc::new(hosts),
            matrix: Arc::new(OnceLock::new()),
            cluster: None,
        }
    }

    /// The one lab, every action run on a real cluster first (`serve --bootstrap-server`).
    pub fn on_cluster(
        lab: LabHandle,
        addr: SocketAddr,
        public_hosts: &[String],
        mirror: Arc<crate::cluster::ClusterMirror>,
    ) -> Self {
        let mut state = Self::serving(Labs::One(lab), addr, public_hosts);
        state.cluster = Some(mirror);
        state
    }

    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    /// The `Host` headers the lab answers.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The workshop this server runs, if it runs one.
    pub fn workshop_of(&self) -> Option<&Arc<Workshop>> {
        match &self.labs {
            Labs::One(_) => None,
            Labs::Workshop(w) => Some(w),
        }
    }

    /// The one lab the page shows, shared with the Kafka listener (`None` in workshop mode,
    /// where every learner has their own).
    pub fn lab(&self) -> Option<&LabHandle> {
        match &self.labs {
            Labs::One(lab) => Some(lab),
            Labs::Workshop(_) => None,
        }
    }

    /// The largest request body accepted.
    pub(crate) fn max_body_bytes(&self) -> usize {
        match &self.labs {
            Labs::One(_) => crate::MAX_BODY_BYTES,
            Labs::Workshop(w) => w.room.config().max_request_bytes,
        }
    }
}

/// Which labs a server serves: one (the page's and the Kafka listener's), or a workshop's.
#[derive(Clone)]
pub(crate) enum Labs {
    One(LabHandle),
    Workshop(Arc<Workshop>),
}
