//! Where the libraries' logs go. The crates under `crates/` log through `tracing` and never
//! print; the binary is the one place that decides what is shown: everything on stderr (stdout
//! is the commands' output, `--json` among it), at the level `RUST_LOG` asks for, and by default
//! the lab's own information and warnings — what a listener's departures, refused clients and
//! failed saves always said — with only warnings from the crates it builds on.
//!
//! Logs are coloured only on a terminal (and never under `NO_COLOR`): a log captured into a
//! file or read by a test is plain text.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// What is shown when `RUST_LOG` is not set (or cannot be read): the `offsetlab*` crates at
/// `info`, everything else at `warn`.
const DEFAULT_FILTER: &str = "warn,offsetlab=info";

/// Installs the process's subscriber; once, first thing in `main`.
pub fn install() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .try_init();
}
