//! Adyen's standard notifications (webhooks): `{"live", "notificationItems": [{
//! "NotificationRequestItem": {…}}]}`, each item signed with HMAC-SHA256 over
//! `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:
//! eventCode:success` with the HMAC key of the webhook (hex), base64 in
//! `additionalData.hmacSignature`. Every item must verify; any that does not refuses the whole
//! notification. With the webhook's Basic authentication configured, the request must also
//! carry it (`Authorization: Basic …`): the HMAC leaves `additionalData` unsigned.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use adapter_kit::{Attached, Event, EventKind};

use crate::adyen::{Settings, from_adyen};
use crate::operations::decline_of;

fn text<'v>(item: &'v Value, field: &str) -> &'v str {
    item.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// The item's signing string, by Adyen's rule.
fn signing_string(item: &Value) -> String {
    let amount = item.get("amount");
    let value = amount
        .and_then(|a| a.get("value"))
        .and_then(Value::as_i64)
        .map(|v| v.to_string())
        .unwrap_or_default();
    let currency = amount
        .and_then(|a| a.get("currency"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    format!(
        "{}:{}:{}:{}:{}:{}:{}:{}",
        text(item, "pspReference"),
        text(item, "originalReference"),
        text(item, "merchantAccountCode"),
        text(item, "merchantReference"),
        value,
        currency,
        text(item, "eventCode"),
        text(item, "success"),
    )
}

/// The base64 HMAC-SHA256 of `message` with `key`, as Adyen signs.
#[cfg(test)]
pub fn sign(key: &[u8], message: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

pub(crate) fn verifies(key: &[u8], item: &Value) -> bool {
    let Some(given) = item
        .get("additionalData")
        .and_then(|a| a.get("hmacSignature"))
        .and_then(Value::as_str)
    else {
        return false;
    };
    let Ok(given) = base64::engine::general_purpose::STANDARD.decode(given) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(signing_string(item).as_bytes());
    // Compared in constant time.
    mac.verify_slice(&given).is_ok()
}

/// Whether `headers` carry the webhook's Basic credentials, when they are configured.
/// Compared in constant time.
fn authenticated(settings: &Settings, headers: &[(String, String)]) -> bool {
    let Some((user, password)) = &settings.notification_credentials else {
        return true;
    };
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    );
    headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .any(|(_, given)| {
            given.len() == expected.len()
                && given
                    .bytes()
                    .zip(expected.bytes())
                    .fold(0u8, |differ, (a, b)| differ | (a ^ b))
                    == 0
        })
}

/// Checks the request's credentials and every item's signature and reads the events; items
/// of other event codes are verified and left out.
pub fn verify(
    settings: &Settings,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<Event>, String> {
    if !authenticated(settings, headers) {
        return Err("the notification does not carry the webhook's Basic credentials".into());
    }
    let key = settings
        .hmac_key
        .as_deref()
        .ok_or("the adapter's configuration has no `hmac_key`")?;
    let notification: Value =
        serde_json::from_slice(body).map_err(|_| "the notification is not JSON")?;
    let items = notification
        .get("notificationItems")
        .and_then(Value::as_array)
        .ok_or("the notification has no notificationItems")?;
    let mut events = Vec::new();
    for wrapper in items {
        let item = wrapper
            .get("NotificationRequestItem")
            .ok_or("an item without NotificationRequestItem")?;
        if !verifies(key, item) {
            return Err(format!(
                "the HMAC signature of the {} item for {} does not verify",
                text(item, "eventCode"),
                text(item, "pspReference")
            ));
        }
        if text(item, "merchantAccountCode") != settings.merchant_account {
            return Err("an item for another merchant account".into());
        }
        events.extend(read(item)?);
    }
    Ok(events)
}

/// The events of one verified item.
fn read(item: &Value) -> Result<Vec<Event>, String> {
    let code = text(item, "eventCode");
    let psp = text(item, "pspReference");
    let original = text(item, "originalReference");
    let success = match text(item, "success") {
        "true" => true,
        "false" => false,
        other => return Err(format!("an item whose success is {other:?}")),
    };
    let reason = text(item, "reason").to_string();
    let money = item.get("amount").and_then(from_adyen);
    // The `reference` the request was made with: the host's idempotency key.
    let request_key = Some(text(item, "merchantReference"))
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    let event = |reference: &str, kind: EventKind| Event {
        id: format!("{code}-{psp}-{success}"),
        reference: reference.to_string(),
        kind,
        amount_minor: money.as_ref().map(|(a, _)| *a),
        currency: money.as_ref().map(|(_, c)| c.clone()),
        request_key: request_key.clone(),
    };
    let events = match (code, success) {
        ("AUTHORISATION", true) => {
            let mut events = Vec::new();
            if let Some(card) = stored_card(item) {
                let shopper = item
                    .get("additionalData")
                    .and_then(|a| a.get("recurring.shopperReference"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let mut stored = event(&shopper, card);
                stored.id = format!("{code}-{psp}-card");
                stored.request_key = None;
                events.push(stored);
            }
            // A zero-amount authorisation only checked the card being stored.
            if money.as_ref().is_some_and(|(a, _)| *a > 0) {
                events.push(event(psp, EventKind::Held));
            }
            events
        }
        ("AUTHORISATION", false) => {
            let refusal = item
                .get("additionalData")
                .and_then(|a| a.get("refusalReasonCode"))
                .and_then(Value::as_str);
            alloc::vec![event(
                psp,
                EventKind::HoldFailed(decline_of(refusal, Some(&reason)))
            )]
        }
        ("CAPTURE", true) => alloc::vec![event(original, EventKind::Captured)],
        ("CAPTURE", false) | ("CAPTURE_FAILED", _) => {
            alloc::vec![event(original, EventKind::CaptureFailed(reason))]
        }
        ("CANCELLATION", true) => alloc::vec![event(original, EventKind::Released)],
        ("CANCELLATION", false) => alloc::vec![event(original, EventKind::ReleaseFailed(reason))],
        ("REFUND", true) => alloc::vec![event(psp, EventKind::Refunded)],
        ("REFUND", false) | ("REFUND_FAILED", _) => {
            alloc::vec![event(psp, EventKind::RefundFailed(reason))]
        }
        _ => Vec::new(),
    };
    Ok(events)
}

/// The card an authorisation stored, from its `additionalData` (`recurring.recurringDetailReference`,
/// `cardSummary`, `expiryDate` as `M/YYYY`, and the payment method's brand).
fn stored_card(item: &Value) -> Option<EventKind> {
    let extra = item.get("additionalData")?;
    let field = |name: &str| extra.get(name).and_then(Value::as_str);
    let reference = field("recurring.recurringDetailReference")
        .or_else(|| field("tokenization.storedPaymentMethodId"))?;
    let (month, year) = field("expiryDate")?.split_once('/')?;
    Some(EventKind::CardStored(Attached {
        reference: reference.to_string(),
        brand: item
            .get("paymentMethod")
            .and_then(Value::as_str)?
            .to_ascii_lowercase(),
        last_four: field("cardSummary")?.to_string(),
        expiry_month: month.parse().ok()?,
        expiry_year: year.parse().ok()?,
    }))
}
