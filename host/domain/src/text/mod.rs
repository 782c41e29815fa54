//! Customer texts: which message a job's move sends, and its wording.

pub mod message;

pub use message::{Disposition, MessageTemplate, SkipReason};
