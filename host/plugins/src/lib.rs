//! The WebAssembly plugin engine: runs price books, payment adapters and
//! payload shapers as sandboxed wasmtime components.
//!
//! - [`PluginEngine`]: one per process. Pooled instances, epoch deadlines,
//!   precompiled artifacts cached on disk by the component's sha256.
//! - [`PriceBook`], [`PaymentAdapter`], [`PayloadShaper`]: a loaded plugin
//!   version. Loading compiles (slow, keep it off the request path); every
//!   call then gets a fresh instance in a fresh store with a CPU deadline,
//!   a memory cap and caps on what goes in and out, and is thrown away
//!   afterwards, so one hostile call fails alone.
//! - [`Slot`]: hot swap of the active version under load.
//! - [`inspect`]: what a component file is, without running it.
//! - [`defaults`]: the default components' bytes.
//!
//! Price books and shapers are synchronous and take microseconds: call them
//! directly from async code. Payment adapters wait on their outbound HTTP:
//! their calls are asynchronous (inside a Tokio runtime).
//!
//! Components get no WASI. The only capabilities are what their world
//! imports (`outbound-http` and `config` for payment adapters); any other
//! import is linked to a trap.

mod calls;
pub mod defaults;
mod engine;
mod error;
mod inspect;
mod limits;
mod outbound;
mod payments;
mod pricing;
mod public_address;
mod slot;
mod webhooks;

pub use calls::{COMPONENTS_KEPT, CallRecord, KEPT_PER_COMPONENT};
pub use engine::{EPOCH_THREAD, EngineConfig, PluginEngine};
pub use error::PluginError;
pub use inspect::{ComponentInfo, Import, World, inspect};
pub use limits::Limits;
pub use outbound::{
    EXCERPT_BYTES, Exchange, GuestLine, HttpFailure, HttpRequest, HttpResponse, LogLevel, Method,
    ProviderStandIn,
};
pub use payments::{
    AdapterConfig, AdapterInfo, AttachRefusal, AttachedCard, CaptureRequest, Card, CardForm,
    CardFormRequest, Decline, EventKind, EventRefusal, FinishReason, HoldRequest, LookupFailure,
    NetworkOverrides, Outcome, PaymentAdapter, PaymentPage, PaymentState, PaymentStatus,
    ProviderEvent, RefundRequest, VoidRequest,
};
pub use pricing::WORLD as PRICE_BOOK_WORLD;
pub use pricing::{
    BookInfo, LineCode, LocalDateTime, PreparedSettings, PriceBook, PriceLine, PriceRefusal,
    PriceRequest, Vehicle, Weekday, total_minor,
};
pub use public_address::is_public as is_public_address;
pub use slot::Slot;
pub use webhooks::WORLD as SHAPER_WORLD;
pub use webhooks::{Environment, EventJob, Payload, PayloadShaper, Proof, WebhookEvent};
