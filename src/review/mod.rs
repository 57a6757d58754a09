//! Review: reviewers' decisions on entries, kept apart from the entries themselves.
//!
//! [`log`] is the append-only decision log every reader of decisions goes through.

pub mod log;
