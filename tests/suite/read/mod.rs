//! The read tools: `read_text_file` (whole, head/tail, line ranges),
//! `read_media_file`, `read_multiple_files`, `get_file_info` and
//! `list_allowed_directories`, and paths spelled in replies as the client
//! spelled them.

mod info;
mod line_ranges;
mod long_lines;
mod media_multiple;
mod spelling;
mod text;
