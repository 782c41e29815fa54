//! Payload shapers (`courier:webhooks/payload-shaper@1.0.0`).
//!
//! Calls are synchronous and fast; the webhook worker calls them directly.

use std::sync::Arc;

use crate::PluginError;
use crate::calls::CallStart;
use crate::engine::{CallState, PluginEngine, Runtime, fuel_used};
use crate::limits::{check_input, check_output};

mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit/webhooks",
        world: "payload-shaper",
    });
}

use wit::courier::webhooks::types as w;

/// The world a payload shaper implements.
pub const WORLD: &str = "courier:webhooks/payload-shaper@1.0.0";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Environment {
    Test,
    Live,
}

/// Facts about the job an event concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventJob {
    pub id: String,
    pub reference: String,
    pub market: String,
    pub currency: String,
    pub price_amount_minor: i64,
    pub tax_amount_minor: i64,
    /// RFC 3339; `None` when booked for now.
    pub scheduled_for: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    pub outcome: String,
    pub recipient_name: Option<String>,
    pub has_photo: bool,
    pub has_signature: bool,
}

/// One event to shape; see `wit/webhooks/webhooks.wit` for each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEvent {
    /// e.g. `job.booked`.
    pub name: String,
    /// RFC 3339.
    pub occurred_at: String,
    pub environment: Environment,
    pub merchant: String,
    /// `None` for events not about a job (`payment_method.dead`).
    pub job: Option<EventJob>,
    pub courier: Option<String>,
    pub proof: Option<Proof>,
    pub reason: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub assigned_courier: Option<String>,
    pub payment_method_id: Option<String>,
    pub brand: Option<String>,
    pub last_four: Option<String>,
}

impl WebhookEvent {
    /// An event with only the fields every event has.
    pub fn new(
        name: impl Into<String>,
        occurred_at: impl Into<String>,
        environment: Environment,
        merchant: impl Into<String>,
    ) -> Self {
        WebhookEvent {
            name: name.into(),
            occurred_at: occurred_at.into(),
            environment,
            merchant: merchant.into(),
            job: None,
            courier: None,
            proof: None,
            reason: None,
            from: None,
            to: None,
            assigned_courier: None,
            payment_method_id: None,
            brand: None,
            last_four: None,
        }
    }
}

/// A shaped webhook body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub content_type: String,
    pub body: Vec<u8>,
}

/// A loaded payload shaper. Cheap to clone; fresh instance per call.
#[derive(Clone)]
pub struct PayloadShaper {
    inner: Arc<Loaded>,
}

struct Loaded {
    runtime: Arc<Runtime>,
    pre: wit::PayloadShaperPre<CallState>,
    sha256: String,
}

impl std::fmt::Debug for PayloadShaper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PayloadShaper")
            .field("sha256", &self.inner.sha256)
            .finish_non_exhaustive()
    }
}

impl PayloadShaper {
    /// Compiles (or loads from the cache) and links a shaper. Slow: keep it
    /// off the request path.
    pub fn load(engine: &PluginEngine, bytes: &[u8]) -> Result<Self, PluginError> {
        let runtime = engine.runtime.clone();
        let component = runtime.component(bytes)?;
        let pre = runtime.instance_pre(WORLD, &component, |_| Ok(()))?;
        let pre = wit::PayloadShaperPre::new(pre).map_err(|e| PluginError::Incompatible {
            world: WORLD,
            reason: format!("{e:#}"),
        })?;
        Ok(PayloadShaper {
            inner: Arc::new(Loaded {
                runtime,
                pre,
                sha256: crate::engine::sha256_hex(bytes),
            }),
        })
    }

    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// Shapes one event. `Ok(Err(message))` when the shaper refuses it.
    pub fn shape(&self, event: &WebhookEvent) -> Result<Result<Payload, String>, PluginError> {
        let rt = &self.inner.runtime;
        let limits = &rt.limits;
        for (what, value) in fields(event) {
            check_input(what, value, limits.max_field_bytes)?;
        }
        let wire = to_wire(event);
        let start = CallStart::now();
        let deadline = limits.call_deadline;
        let mut store = rt.store(deadline, None);
        let answer = self
            .inner
            .pre
            .instantiate(&mut store)
            .and_then(|shaper| {
                shaper
                    .courier_webhooks_shaper()
                    .call_shape(&mut store, &wire)
            })
            .map_err(|e| rt.classify(&store, deadline, e));
        let used = (deadline, store.data().memory_peak(), fuel_used(&store));
        rt.record(
            &self.inner.sha256,
            "shape",
            &start,
            used,
            &answer,
            Vec::new(),
        );
        let answer = answer?;
        match answer {
            Ok(p) => {
                check_output("content type", &p.content_type, limits.max_text_bytes)?;
                if p.body.len() > limits.max_body_bytes {
                    return Err(PluginError::OutputTooLarge(format!(
                        "webhook body is {} bytes, over the limit of {}",
                        p.body.len(),
                        limits.max_body_bytes
                    )));
                }
                Ok(Ok(Payload {
                    content_type: p.content_type,
                    body: p.body,
                }))
            }
            Err(message) => {
                check_output("shaper error", &message, limits.max_text_bytes)?;
                Ok(Err(message))
            }
        }
    }
}

/// Every string in an event, named for error messages.
fn fields(e: &WebhookEvent) -> Vec<(&'static str, &str)> {
    let mut out = vec![
        ("event name", e.name.as_str()),
        ("occurred at", e.occurred_at.as_str()),
        ("merchant", e.merchant.as_str()),
    ];
    if let Some(j) = &e.job {
        out.extend([
            ("job id", j.id.as_str()),
            ("job reference", j.reference.as_str()),
            ("market", j.market.as_str()),
            ("currency", j.currency.as_str()),
        ]);
        out.extend(j.scheduled_for.as_deref().map(|s| ("scheduled for", s)));
    }
    if let Some(p) = &e.proof {
        out.push(("proof outcome", p.outcome.as_str()));
        out.extend(p.recipient_name.as_deref().map(|s| ("recipient name", s)));
    }
    for (what, value) in [
        ("courier", &e.courier),
        ("reason", &e.reason),
        ("from", &e.from),
        ("to", &e.to),
        ("assigned courier", &e.assigned_courier),
        ("payment method id", &e.payment_method_id),
        ("brand", &e.brand),
        ("last four", &e.last_four),
    ] {
        out.extend(value.as_deref().map(|s| (what, s)));
    }
    out
}

fn to_wire(e: &WebhookEvent) -> w::Event {
    w::Event {
        name: e.name.clone(),
        occurred_at: e.occurred_at.clone(),
        environment: match e.environment {
            Environment::Test => w::Environment::Test,
            Environment::Live => w::Environment::Live,
        },
        merchant: e.merchant.clone(),
        job: e.job.as_ref().map(|j| w::Job {
            id: j.id.clone(),
            reference: j.reference.clone(),
            market: j.market.clone(),
            currency: j.currency.clone(),
            price_amount_minor: j.price_amount_minor,
            tax_amount_minor: j.tax_amount_minor,
            scheduled_for: j.scheduled_for.clone(),
        }),
        courier: e.courier.clone(),
        proof: e.proof.as_ref().map(|p| w::Proof {
            outcome: p.outcome.clone(),
            recipient_name: p.recipient_name.clone(),
            has_photo: p.has_photo,
            has_signature: p.has_signature,
        }),
        reason: e.reason.clone(),
        from: e.from.clone(),
        to: e.to.clone(),
        assigned_courier: e.assigned_courier.clone(),
        payment_method_id: e.payment_method_id.clone(),
        brand: e.brand.clone(),
        last_four: e.last_four.clone(),
    }
}
