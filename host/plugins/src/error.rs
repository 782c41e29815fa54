//! The one error type of the engine.

use std::time::Duration;

/// Why a plugin call (or loading a plugin) failed. A plugin's own answers
/// (a refused price, a declined card) are not errors: they are the `Ok`
/// values of each call.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The call used up its CPU deadline and was interrupted.
    #[error("plugin ran past its deadline of {0:?}")]
    Timeout(Duration),
    /// The plugin tried to grow its memory past the cap.
    #[error("plugin exceeded its memory cap of {0} bytes")]
    MemoryExceeded(usize),
    /// The plugin trapped (panicked, hit `unreachable`, called an import it
    /// was not given...).
    #[error("plugin trapped: {0}")]
    Trapped(String),
    /// An argument is larger than the host lets a plugin see.
    #[error("{what} is {size} bytes, over the limit of {limit}")]
    InputTooLarge {
        what: &'static str,
        size: usize,
        limit: usize,
    },
    /// The plugin answered with more than the host accepts.
    #[error("plugin output too large: {0}")]
    OutputTooLarge(String),
    /// The plugin answered something the contract does not allow (e.g. an
    /// unknown breakdown line code).
    #[error("plugin output invalid: {0}")]
    InvalidOutput(String),
    /// The adapter refused the operator's configuration, saying why.
    #[error("the adapter refuses its configuration: {0}")]
    Misconfigured(String),
    /// The component does not implement the world it was loaded as.
    #[error("component does not implement {world}: {reason}")]
    Incompatible { world: &'static str, reason: String },
    /// The bytes are not a valid component for this engine.
    #[error("cannot compile component: {0}")]
    Compile(String),
    /// Every pooled instance slot is in use; retry shortly.
    #[error("all plugin instance slots are busy")]
    Busy,
    /// The precompiled-artifact cache could not be read or written.
    #[error("plugin cache {path}: {source}")]
    Cache {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The engine itself could not be set up.
    #[error("plugin engine: {0}")]
    Engine(String),
}
