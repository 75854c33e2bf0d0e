//! Locks that outlive a panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Takes `mutex` even when a thread panicked holding it. What these locks guard is left
/// consistent at every step that can panic (a file position, a health record, a pool of open
/// files), and where a step can fail half-way the failure is written into the guarded state
/// itself: one request that panicked must not turn every later one into a panic.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
