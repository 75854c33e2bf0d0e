//! # offsetlab-lab
//!
//! The lab as the web page and the Kafka listener both serve it: a [`session::Session`] holds
//! the engine's [`offsetlab_engine::Lab`], the history of lines that built it and — for the
//! durable lab `serve` runs — the generation directory it is saved in.
//!
//! - [`session`]: batches applied all or none, undone by replaying the history; saves, the
//!   rollback when the disk refuses a write, restore, export.
//! - [`open`]: the lab of a data directory, restored or new, never replaced.
//! - [`handle`]: [`LabHandle`], the write path (the locked session), the read path (the
//!   published [`read_view::ReadView`]), the page's state built once per version, and the change
//!   notifications, shared by both front ends.
//! - [`read_view`]: what a Fetch, a Metadata, a ListOffsets or an OffsetFetch reads instead of
//!   the session. [`shared_log`]: partition logs readable from another thread.
//! - [`connections`]: how many connections a listener holds, and which one makes room.
//! - [`caps`]: what one lab of a server that keeps many may grow to.
//! - [`clip`]: cutting client-sized values down to what a response carries.

pub mod caps;
pub mod clip;
pub mod connections;
pub mod handle;
pub mod open;
pub mod read_view;
pub mod session;
pub mod shared_log;

pub use handle::{BuiltState, LabHandle, SessionGuard};
pub use offsetlab_storage::lock;
pub use open::{open, OpenError, Opened};
pub use session::{ActionError, Applied, Change, PendingSave, RestoreError, Session, SinkBackend};
