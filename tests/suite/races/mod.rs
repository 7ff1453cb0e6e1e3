//! Races with another process: a directory swapped for a symbolic link out
//! while reads run, and a directory moved out of the root while a write runs.
//! Ground truth: replies scanned for outside content, outside trees on disk.

#[cfg(target_os = "linux")]
mod moved_mid_write;
mod moved_out;
mod read_swap;
