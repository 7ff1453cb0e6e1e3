//! Roots: client roots only narrow the operator's roots (and what a client's
//! list that narrows to nothing says, and what a path they exclude says), and a
//! root moved or replaced while tuls runs.

mod client;
mod client_lists;
mod moved;
mod refusals;
