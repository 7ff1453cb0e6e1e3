//! The write tools: `write_file`, `edit_file`, `append_file`, `copy_file`,
//! `create_directory`, `move_file`; what a replaced file keeps, version
//! tokens and `ifMatch`, and the undo journal. Checked on disk.

mod append_copy;
mod create_directory;
mod edit_file;
mod hard_links;
mod journal;
mod journal_output;
mod journal_show;
mod journal_undo;
mod keep_acl;
mod missing_parent;
mod move_file;
mod versions;
mod write_file;
