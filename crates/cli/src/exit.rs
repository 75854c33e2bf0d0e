//! Exit codes, stable for scripts and CI, and the one way a command ends on an error: one line
//! on stderr, then its code. Every command module returns through here, so none has to reach
//! into another command's module for it.

/// Everything ran and every `expect` held.
pub const OK: u8 = 0;
/// An `expect` line did not hold.
pub const EXPECTATION_FAILED: u8 = 1;
/// The scenario is malformed, or the lab rejected one of its actions (also clap's usage errors).
pub const INVALID_SCENARIO: u8 = 2;
/// A file could not be read or a sink database could not be opened.
pub const IO_ERROR: u8 = 3;
/// Ctrl-C or SIGTERM stopped a run before its end (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = offsetlab_cluster::run::INTERRUPTED_EXIT;

/// Says `e` (one line, as an error) and gives its exit code.
pub(crate) fn said((e, code): (String, u8)) -> u8 {
    crate::style::say_error!("{e}");
    code
}
