//! The listing tools: `list_directory`, `list_directory_with_sizes`,
//! `directory_tree` (budgeted and whole), and cursor paging of every walk.

mod cursors;
mod directory;
mod tree_whole;
