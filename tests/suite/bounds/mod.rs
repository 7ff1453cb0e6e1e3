//! Resource bounds: every named limit at and past its value, the reply
//! budget, cancellation, and peak memory under hostile inputs.

mod limits;
mod reply_budget;
