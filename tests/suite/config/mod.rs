//! Configuration and startup: fail-closed flags, selectors and roots, the
//! capability policy at dispatch, the startup lines and log format, and the
//! audit log.

mod audit;
mod audit_chain;
mod fail_closed;
mod policy;
mod rule_checks;
mod startup;
