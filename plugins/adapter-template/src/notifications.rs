//! The provider's notifications: how a capture or refund it accepted for later (`202`, the
//! adapter's `pending`) ended. Rewrite this for your provider's.
//!
//! The example provider POSTs one event per notification, signed with the account's webhook
//! secret: the header `example-pay-signature` is the lower-case hex HMAC-SHA256 of the body
//! under `webhook_secret`. The body is `{"id": "evt_…", "type", "data": {"object"}}`, the
//! object a payment (`payment.captured`, `payment.capture_failed`) or a refund
//! (`refund.succeeded`, `refund.failed`), with `failure_reason` on a failure. Other types
//! are acknowledged and read as no event.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use adapter_kit::{Event, EventKind};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::provider::Settings;

/// The header that carries the signature (header names come lower case).
pub const SIGNATURE_HEADER: &str = "example-pay-signature";

/// Checks the notification's signature, then reads its event.
pub fn verify(
    settings: &Settings,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<Event>, String> {
    let secret = settings
        .webhook_secret
        .as_deref()
        .ok_or("the adapter's configuration has no `webhook_secret`")?;
    let signature = headers
        .iter()
        .find(|(name, _)| name == SIGNATURE_HEADER)
        .map(|(_, value)| value.trim())
        .ok_or("the notification has no example-pay-signature header")?;
    let signature =
        adapter_kit::hex::decode(signature).ok_or("the signature is not hexadecimal")?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .map_err(|_| "the webhook secret cannot key an HMAC")?;
    mac.update(body);
    // Compared in constant time.
    mac.verify_slice(&signature)
        .map_err(|_| "the notification's signature does not verify")?;
    let notification: Value =
        serde_json::from_slice(body).map_err(|e| format!("the notification is not JSON: {e}"))?;
    Ok(read(&notification)?.into_iter().collect())
}

/// The event a verified notification carries; None for a type this adapter does not read.
fn read(notification: &Value) -> Result<Option<Event>, String> {
    let text =
        |value: &Value, field: &str| value.get(field).and_then(Value::as_str).map(String::from);
    let id = text(notification, "id").ok_or("the notification has no id")?;
    let kind = text(notification, "type").ok_or("the notification has no type")?;
    let object = &notification["data"]["object"];
    let reason = || {
        text(object, "failure_reason").unwrap_or_else(|| "the provider gave no reason".to_string())
    };
    let (kind, amount) = match kind.as_str() {
        "payment.captured" => (EventKind::Captured, "amount_captured"),
        "payment.capture_failed" => (EventKind::CaptureFailed(reason()), "amount"),
        "refund.succeeded" => (EventKind::Refunded, "amount"),
        "refund.failed" => (EventKind::RefundFailed(reason()), "amount"),
        _ => return Ok(None),
    };
    let reference = text(object, "id").ok_or("the event's object has no id")?;
    Ok(Some(Event {
        id,
        reference,
        kind,
        amount_minor: object.get(amount).and_then(Value::as_i64),
        currency: text(object, "currency").map(|c| c.to_ascii_uppercase()),
        // The provider keeps only the hold's key with a payment, and its holds answer at once:
        // none of these events answers a request whose key it says. A provider whose holds can
        // answer later should say the hold's key on its `held` events.
        request_key: None,
    }))
}
