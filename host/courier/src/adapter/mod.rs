//! The partner kit for payment adapters: `courier adapter new` (a crate from the template),
//! `build` (its component), `run` (one operation, alone), `record` (that operation kept as a
//! cassette) and `certify` (the contract's conformance suite over cassettes). None of them
//! needs a database or the service.

pub mod cassette;
pub mod certify;
pub mod compile;
pub mod new;
pub mod record;
pub mod run;
