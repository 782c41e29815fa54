//! The standard payload shaper (`courier:webhooks/shaper@1.0.0`): the
//! spec's envelope
//!
//! ```json
//! {"type": "job.booked", "occurred_at": "...", "environment": "test", "data": {...}}
//! ```
//!
//! with a camelCase `data` holding exactly the spec's fields for the event.
//! Keys keep this order on the wire, and the same event always gives the
//! same bytes.
//!
//! `data.environment` is an integer code: **0 = test, 1 = live** (the
//! envelope's `environment` carries the same as a string).
//!
//! Every event's `data` starts with `occurredAt`, `environment`, `jobId`
//! (absent for `payment_method.dead`), `reference` (null for
//! `payment_method.dead`, which is not about a job) and `merchant`. Fields
//! the spec lists for an event are always present, as null when the host
//! has no value, except `assignedCourier` on `job.cancelled`, which the
//! spec includes only when someone was on the way.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

#[cfg(target_family = "wasm")]
mod component;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Test,
    Live,
}

impl Environment {
    fn name(self) -> &'static str {
        match self {
            Environment::Test => "test",
            Environment::Live => "live",
        }
    }

    fn code(self) -> u8 {
        match self {
            Environment::Test => 0,
            Environment::Live => 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub reference: String,
    pub market: String,
    pub currency: String,
    pub price_amount_minor: i64,
    pub tax_amount_minor: i64,
    pub scheduled_for: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Proof {
    pub outcome: String,
    pub recipient_name: Option<String>,
    pub has_photo: bool,
    pub has_signature: bool,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub name: String,
    pub occurred_at: String,
    pub environment: Environment,
    pub merchant: String,
    pub job: Option<Job>,
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

/// A JSON object that keeps insertion order (serde_json's own map sorts
/// its keys unless built with a feature that costs a dependency).
struct Object(Vec<(&'static str, Field)>);

enum Field {
    Value(Value),
    Object(Object),
}

impl Object {
    fn put(&mut self, key: &'static str, value: impl Into<Value>) {
        self.0.push((key, Field::Value(value.into())));
    }

    fn put_object(&mut self, key: &'static str, value: Object) {
        self.0.push((key, Field::Object(value)));
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            match v {
                Field::Value(v) => map.serialize_entry(k, v)?,
                Field::Object(o) => map.serialize_entry(k, o)?,
            }
        }
        map.end()
    }
}

fn opt(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
}

fn required<'a>(event: &str, field: &str, v: &'a Option<String>) -> Result<&'a str, String> {
    v.as_deref().ok_or_else(|| format!("{event} needs {field}"))
}

/// The JSON body for an event; Err names what is missing or unknown.
pub fn shape(e: &Event) -> Result<Vec<u8>, String> {
    let name = e.name.as_str();
    let mut data = Object(Vec::with_capacity(12));
    data.put("occurredAt", e.occurred_at.as_str());
    data.put("environment", e.environment.code());

    if name == "payment_method.dead" {
        data.put("reference", Value::Null);
        data.put("merchant", e.merchant.as_str());
        data.put(
            "paymentMethodId",
            required(name, "payment-method-id", &e.payment_method_id)?,
        );
        data.put("brand", opt(&e.brand));
        data.put("lastFour", opt(&e.last_four));
        data.put("reason", opt(&e.reason));
    } else {
        let job = e
            .job
            .as_ref()
            .ok_or_else(|| format!("{name} needs the job"))?;
        data.put("jobId", job.id.as_str());
        data.put("reference", job.reference.as_str());
        data.put("merchant", e.merchant.as_str());
        let money = |data: &mut Object| {
            data.put("currency", job.currency.as_str());
            data.put("priceAmountMinor", job.price_amount_minor);
            data.put("taxAmountMinor", job.tax_amount_minor);
        };
        match name {
            "job.booked" => {
                data.put("market", job.market.as_str());
                money(&mut data);
                data.put("scheduledFor", opt(&job.scheduled_for));
            }
            "job.courier_assigned" | "job.picked_up" => {
                data.put("courier", required(name, "courier", &e.courier)?);
            }
            "job.delivered" => {
                data.put("market", job.market.as_str());
                data.put("courier", opt(&e.courier));
                money(&mut data);
                match &e.proof {
                    Some(p) => {
                        let mut proof = Object(Vec::with_capacity(4));
                        proof.put("outcome", p.outcome.as_str());
                        proof.put("recipientName", opt(&p.recipient_name));
                        proof.put("hasPhoto", p.has_photo);
                        proof.put("hasSignature", p.has_signature);
                        data.put_object("proof", proof);
                    }
                    None => data.put("proof", Value::Null),
                }
            }
            "job.returned" => {
                data.put("market", job.market.as_str());
                data.put("courier", opt(&e.courier));
                money(&mut data);
                data.put("reason", opt(&e.reason));
            }
            "job.cancelled" => {
                data.put("reason", opt(&e.reason));
                if let Some(c) = &e.assigned_courier {
                    data.put("assignedCourier", c.as_str());
                }
            }
            "job.failed" => data.put("reason", opt(&e.reason)),
            "job.status_changed" => {
                data.put("from", required(name, "from", &e.from)?);
                data.put("to", required(name, "to", &e.to)?);
                data.put("reason", opt(&e.reason));
            }
            other => return Err(format!("unknown event {other:?}")),
        }
    }

    let mut envelope = Object(Vec::with_capacity(4));
    envelope.put("type", name);
    envelope.put("occurred_at", e.occurred_at.as_str());
    envelope.put("environment", e.environment.name());
    envelope.put_object("data", data);
    serde_json::to_vec(&envelope).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests;
