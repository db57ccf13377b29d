//! The tests, one or a few ids each, named by them (`ids` checks the names
//! against the table of book/src/security/suite.md).

mod at_rest;
mod audit;
mod authz;
mod cert_inputs;
mod certificates;
mod crash;
mod flows;
mod guessing;
mod hygiene;
mod inputs;
mod limits;
mod network;
pub(crate) mod page;
