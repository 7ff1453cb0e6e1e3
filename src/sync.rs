//! Locks that shrug off poisoning: the one place that decides what a
//! poisoned lock means.
//!
//! A panic inside a tool is caught and becomes an error result for that
//! call only (see [`crate::mcp::server`]); the data these locks guard (the
//! roots in force, the roots-request state) is replaced whole, never left
//! half-written, so a lock poisoned by such a panic is still sound to use.
//! May touch: nothing.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, ignoring poison.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `l`, ignoring poison.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `l`, ignoring poison.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}
