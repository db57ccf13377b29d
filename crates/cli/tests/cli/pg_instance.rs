//! PostgreSQL servers the tests make themselves: the test kit's
//! (`strongroom_testkit::pg`), on a Unix socket in their own directory
//! unless a test asks for TCP.

pub use strongroom_testkit::pg::{PgInstance, server_binaries};
