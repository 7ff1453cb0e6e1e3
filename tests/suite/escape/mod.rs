//! Escapes: nothing outside the roots can be read, learned or written,
//! through any tool, by any path, link, special file or forged name, with or
//! without `openat2` and Landlock, and no host path is used after startup.
//! Ground truth: the outside tree snapshotted on disk, replies scanned for
//! canaries.

mod forged_names;
mod landlock;
mod link_refusals;
mod no_host_paths;
#[cfg(target_os = "linux")]
pub(crate) mod no_openat2;
mod reads;
mod table;
mod writes;
