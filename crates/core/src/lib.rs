//! Strongroom's rules, with no I/O.
//!
//! Everything here is plain data in, plain data out. The clock and the random
//! source are arguments ([`time::Clock`], [`random::Random`]), so the grant
//! state machines can be driven through hours of simulated time in a unit test.
//!
//! Architecture invariant: this crate depends on no async runtime, database,
//! HTTP or TLS crate, and never reads the system clock.
#![forbid(unsafe_code)]

pub mod event;
pub mod grant;
pub mod identity;
pub mod integration;
pub mod mac;
pub mod password;
pub mod random;
pub mod scope;
pub mod secret;
pub mod throttle;
pub mod time;
pub mod token;
pub mod vault;

pub use strongroom_proto::hex;
