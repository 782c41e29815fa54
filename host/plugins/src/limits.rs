//! Per-call limits, and the memory limiter each call's store carries.

use std::time::Duration;

/// Caps applied to every call. The defaults suit the request path.
#[derive(Debug, Clone)]
pub struct Limits {
    /// CPU deadline of a price-book or shaper call, instantiation included.
    /// A call is guaranteed this much CPU time however busy the machine is;
    /// a call that never returns is stopped after about twice this on an
    /// idle machine.
    pub call_deadline: Duration,
    /// Wall-clock deadline of a payment-adapter call, which includes the
    /// adapter's outbound HTTP requests (each also has its own timeout).
    pub adapter_deadline: Duration,
    /// Linear memory a call may use (also the pool's per-memory size).
    pub memory_bytes: usize,
    /// A price book's settings document.
    pub max_settings_bytes: usize,
    /// Any single string argument other than settings (ids, postcodes,
    /// card references, event fields...).
    pub max_field_bytes: usize,
    /// Lines in a price breakdown.
    pub max_lines: usize,
    /// A breakdown line's description, a provider reference, a message.
    pub max_text_bytes: usize,
    /// A webhook body.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_deadline: Duration::from_millis(50),
            adapter_deadline: Duration::from_secs(30),
            memory_bytes: 64 << 20,
            max_settings_bytes: 64 << 10,
            max_field_bytes: 1 << 10,
            max_lines: 64,
            max_text_bytes: 1 << 10,
            max_body_bytes: 256 << 10,
        }
    }
}

impl Limits {
    /// How many bytes the host will copy out of a plugin in one call.
    /// Wasmtime charges every lifted string and list against this budget
    /// ("hostcall fuel") before allocating, which is what stops a plugin
    /// from returning many strings that alias one large block and having
    /// the host copy each of them. Generous enough for any answer within
    /// the other caps, which are then checked precisely.
    pub(crate) fn output_budget(&self) -> usize {
        self.max_body_bytes + self.max_lines * (2 * self.max_text_bytes + 64) + 64 * 1024
    }
}

/// Records that a call hit the memory cap, so the trap that follows (the
/// guest's allocator aborts when `memory.grow` fails) is reported as
/// `MemoryExceeded` rather than as an anonymous trap.
pub(crate) struct MemoryCap {
    limit: usize,
    pub(crate) hit: bool,
    /// The most memory granted, for the record of the call.
    pub(crate) peak: usize,
}

impl MemoryCap {
    pub(crate) fn new(limit: usize) -> Self {
        MemoryCap {
            limit,
            hit: false,
            peak: 0,
        }
    }
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.limit && maximum.is_none_or(|m| desired <= m);
        if allowed {
            self.peak = self.peak.max(desired);
        } else {
            self.hit = true;
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; Rust components use a handful.
        Ok(desired <= 100_000 && maximum.is_none_or(|m| desired <= m))
    }
}

/// `Err(InputTooLarge)` when `value` is over `limit` bytes.
pub(crate) fn check_input(
    what: &'static str,
    value: &str,
    limit: usize,
) -> Result<(), crate::PluginError> {
    if value.len() > limit {
        return Err(crate::PluginError::InputTooLarge {
            what,
            size: value.len(),
            limit,
        });
    }
    Ok(())
}

/// `Err(OutputTooLarge)` when `value` is over `limit` bytes.
pub(crate) fn check_output(
    what: &str,
    value: &str,
    limit: usize,
) -> Result<(), crate::PluginError> {
    if value.len() > limit {
        return Err(crate::PluginError::OutputTooLarge(format!(
            "{what} is {} bytes, over the limit of {limit}",
            value.len()
        )));
    }
    Ok(())
}
