//! The WebAssembly components the service runs, as operators see them: what each is, where it
//! is used, and the limits its calls run under.

use std::time::Duration;

use courier_plugins::Limits;
pub use courier_plugins::{CallRecord, KEPT_PER_COMPONENT, PluginEngine};

/// One component in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInUse {
    /// `price book`, `payment adapter` or `payload shaper`.
    pub kind: &'static str,
    /// Where: a market's id, an environment, or `every endpoint`.
    pub used_for: String,
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub world: String,
    /// A call's deadline: CPU time for computations, wall time for adapters (the network
    /// included).
    pub deadline: Duration,
    pub memory_bytes: usize,
    /// The hosts its outbound HTTP may reach (adapters only).
    pub hosts: Vec<String>,
}

/// The payload shaper every webhook delivery's body goes through.
pub fn shaper(limits: &Limits) -> ComponentInUse {
    let bytes = courier_plugins::defaults::STANDARD_SHAPER;
    ComponentInUse {
        kind: "payload shaper",
        used_for: "every webhook endpoint".to_owned(),
        name: "standard-shaper".to_owned(),
        version: "built in".to_owned(),
        sha256: courier_plugins::inspect(bytes)
            .map(|info| info.sha256)
            .unwrap_or_default(),
        world: courier_plugins::SHAPER_WORLD.to_owned(),
        deadline: limits.call_deadline,
        memory_bytes: limits.memory_bytes,
        hosts: Vec::new(),
    }
}
