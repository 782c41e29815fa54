//! Courier: a courier delivery service for merchants, over a REST API. This crate is the
//! service itself: the `courier` binary's commands, the process that wires the features
//! (`courier-core`) to the HTTP layer (`courier-api`), and the server that listens.
//!
//! - `app`: one running service: pool, plugins, workers, router, and its graceful stop.
//! - `cli`: the `courier` commands.
//! - `server`: HTTP/1 and HTTP/2 on one listener, with a graceful stop.
//! - `simulate`: the meal-delivery benchmark replayed through dispatch.

/// Every request allocates and frees many small blocks across the runtime's threads; glibc's
/// allocator spent 15-18% of the service's CPU on it (BENCHMARKS.md). Declared here, in the
/// crate that is the service, so the binary, its tests and its benchmarks all run on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod adapter;
pub mod app;
pub mod cli;
#[cfg(test)]
mod generated_docs;
pub mod server;
mod simulate;
