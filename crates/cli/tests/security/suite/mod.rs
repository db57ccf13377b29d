//! The tests, one or a few ids each. `scripts/test` leaves `suite::` to
//! `scripts/security`, which runs it once, one test at a time.

mod at_rest;
mod audit;
mod authz;
mod crash;
mod flows;
mod guessing;
mod hygiene;
mod inputs;
mod limits;
mod network;
pub(crate) mod page;
