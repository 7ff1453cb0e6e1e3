//! The protocol edge under a hostile or careless client: what a request line
//! may cost, malformed and flooding input, calls in flight at cancellation
//! and end of input, every request answered at its id. Ground truth from
//! `/proc` and the replies on the wire.

mod hostile_client;
mod in_flight;
mod reply_memory;
mod requests;
mod slow_fs;
