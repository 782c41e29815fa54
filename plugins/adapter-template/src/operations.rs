//! The contract's operations as the example provider's requests, and its answers as the
//! contract's outcomes. Plain Rust over a [`Transport`], unit tested with scripted answers.
//!
//! | operation         | requests                                                       |
//! |-------------------|----------------------------------------------------------------|
//! | `setup-card-form` | `POST /v1/customers`, then `POST /v1/card_sessions`            |
//! | `attach-card`     | `GET /v1/cards/{id}`                                           |
//! | `authorise`       | `POST /v1/payments` with `capture: false`                      |
//! | `capture`         | `POST /v1/payments/{id}/capture`                               |
//! | `void`            | `POST /v1/payments/{id}/cancel`                                |
//! | `refund`          | `POST /v1/refunds`                                             |
//! | `retrieve`        | `GET /v1/payments/{id}`                                        |
//! | `list-payments`   | `GET /v1/payments?created_since=…&after=…`                     |

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Value, json};

use adapter_kit::{
    Attached, CardForm, CardFormRequest, Decline, Finished, Lookup, Outcome, PaymentPage,
    PaymentState, Refusal, Status, Transport,
};

use crate::provider::{Client, Failure, Settings};

/// What a decline code says about the card: only codes that say the card itself is finished
/// mark it so; every other decline is about this payment.
pub fn finished_by(code: &str) -> Option<Finished> {
    match code {
        "expired_card" => Some(Finished::Expired),
        "lost_card" | "stolen_card" => Some(Finished::Lost),
        "card_closed" | "fraudulent" => Some(Finished::RefusedForGood),
        _ => None,
    }
}

fn decline(code: String) -> Decline {
    Decline {
        finished: finished_by(&code),
        code,
    }
}

/// An id as the provider makes them: a reference from elsewhere that is not one never
/// reaches a URL path.
fn is_object_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 255 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn text(value: &Value, field: &str) -> Option<String> {
    value.get(field).and_then(Value::as_str).map(str::to_string)
}

fn number(value: &Value, field: &str) -> Option<i64> {
    value.get(field).and_then(Value::as_i64)
}

/// What differs between the provider's answer and the request, if anything.
fn mismatch(answer: &Value, amount_field: &str, amount: i64, currency: &str) -> Option<String> {
    let answered = (number(answer, amount_field), text(answer, "currency"));
    match answered {
        (Some(a), Some(c)) if a == amount && c.eq_ignore_ascii_case(currency) => None,
        (a, c) => Some(format!(
            "asked {amount} {currency}, answered {a:?} {c:?} in `{amount_field}`"
        )),
    }
}

fn outcome_of(failure: Failure) -> Outcome {
    match failure {
        Failure::Declined { code } => Outcome::Declined(decline(code)),
        Failure::InFlight(m) => Outcome::InFlight(m),
        refused @ Failure::Refused { .. } => Outcome::Refused(refused.describe()),
        Failure::Unreachable(m) => Outcome::Unreachable(m),
    }
}

fn state_of(payment: &Value) -> Result<PaymentState, String> {
    let status = match text(payment, "status").as_deref() {
        Some("authorized") => Status::Held,
        Some("captured") => Status::Captured,
        Some("canceled") => Status::Released,
        Some("failed") => Status::Refused,
        Some("processing") => Status::Processing,
        other => return Err(format!("a payment with status {other:?}")),
    };
    let field =
        |name: &str| number(payment, name).ok_or_else(|| format!("a payment without `{name}`"));
    Ok(PaymentState {
        reference: text(payment, "id").ok_or("a payment without an id")?,
        hold_key: payment
            .get("metadata")
            .and_then(|m| m.get("hold_key"))
            .and_then(Value::as_str)
            .map(str::to_string),
        status,
        amount_minor: field("amount")?,
        captured_minor: field("amount_captured")?,
        refunded_minor: field("amount_refunded")?,
        currency: text(payment, "currency")
            .ok_or("a payment without a currency")?
            .to_ascii_uppercase(),
        created_at: field("created")?,
    })
}

/// One call's adapter: the operator's settings and the way out.
pub struct Adapter<'a, T: Transport> {
    client: Client<'a, T>,
}

impl<'a, T: Transport> Adapter<'a, T> {
    pub fn new(settings: &'a Settings, transport: &'a T) -> Self {
        Adapter {
            client: Client {
                settings,
                transport,
            },
        }
    }

    /// The merchant's customer (the one the host kept, else made with the merchant as its
    /// key, so the same one every time) and a card session for the provider's card form.
    /// A new customer is given the merchant's contact email, when the host gives one.
    pub fn setup_card_form(&self, request: &CardFormRequest) -> Result<CardForm, String> {
        let merchant = &request.merchant;
        let known_customer = request.customer_id.as_deref();
        let customer_id = match known_customer.filter(|id| is_object_id(id)) {
            Some(id) => id.to_string(),
            None => {
                let mut customer = json!({"reference": merchant});
                if let Some(email) = &request.contact_email {
                    customer["email"] = json!(email);
                }
                let customer = self
                    .client
                    .post("/v1/customers", &customer, &format!("customer_{merchant}"))
                    .map_err(|f| f.describe())?;
                text(&customer, "id").ok_or("the customer has no id")?
            }
        };
        let session = self
            .client
            .post_once("/v1/card_sessions", &json!({"customer": customer_id}))
            .map_err(|f| f.describe())?;
        let client_secret =
            text(&session, "client_secret").ok_or("the card session has no client secret")?;
        // What the provider's web component is started with (the host passes it on as it is).
        Ok(CardForm {
            document: json!({"client_secret": client_secret}).to_string(),
            customer_id,
        })
    }

    /// The card the form produced, when it is this customer's.
    pub fn attach_card(&self, customer_id: &str, card_ref: &str) -> Result<Attached, Refusal> {
        if !is_object_id(card_ref) {
            return Err(Refusal::UnknownReference("not a card id".into()));
        }
        let card = match self.client.get(&format!("/v1/cards/{card_ref}")) {
            Ok(card) => card,
            Err(Failure::Refused { status: 404, .. }) => {
                return Err(Refusal::UnknownReference(format!(
                    "the provider has no card {card_ref}"
                )));
            }
            Err(Failure::Declined { code }) => return Err(Refusal::Declined(decline(code))),
            Err(other) => return Err(Refusal::Unreachable(other.describe())),
        };
        if text(&card, "customer").as_deref() != Some(customer_id) {
            return Err(Refusal::UnknownReference(
                "the card belongs to another customer".into(),
            ));
        }
        let unreadable = || Refusal::Unreachable("the card's answer cannot be read".into());
        Ok(Attached {
            reference: card_ref.to_string(),
            brand: text(&card, "brand")
                .ok_or_else(unreadable)?
                .to_ascii_lowercase(),
            last_four: text(&card, "last4").ok_or_else(unreadable)?,
            expiry_month: number(&card, "exp_month")
                .and_then(|m| u8::try_from(m).ok())
                .ok_or_else(unreadable)?,
            expiry_year: number(&card, "exp_year")
                .and_then(|y| u16::try_from(y).ok())
                .ok_or_else(unreadable)?,
        })
    }

    /// Holds money: a payment made without capturing. The host's key goes with it, and stays
    /// in its metadata for `retrieve`.
    pub fn authorise(
        &self,
        amount_minor: i64,
        currency: &str,
        card_ref: &str,
        customer_id: &str,
        idempotency_key: &str,
    ) -> Outcome {
        let body = json!({
            "amount": amount_minor,
            "currency": currency,
            "card": card_ref,
            "customer": customer_id,
            "capture": false,
            "metadata": {"hold_key": idempotency_key},
        });
        let payment = match self.client.post("/v1/payments", &body, idempotency_key) {
            Ok(payment) => payment,
            Err(failure) => return outcome_of(failure),
        };
        let Some(id) = text(&payment, "id").filter(|id| is_object_id(id)) else {
            return Outcome::Unreachable("the payment's answer has no id".into());
        };
        if let Some(wrong) = mismatch(&payment, "amount", amount_minor, currency) {
            // Never keep money nobody asked for: release it, then say what was wrong.
            let release = format!("{idempotency_key}_release");
            let _ = self
                .client
                .post(&format!("/v1/payments/{id}/cancel"), &json!({}), &release);
            return Outcome::Unreachable(format!("the hold is not what was asked for ({wrong})"));
        }
        match text(&payment, "status").as_deref() {
            Some("authorized") => Outcome::Approved(id),
            other => Outcome::Unreachable(format!("the payment is {other:?}, not authorized")),
        }
    }

    /// Takes held money.
    pub fn capture(
        &self,
        authorisation: &str,
        amount_minor: i64,
        currency: &str,
        idempotency_key: &str,
    ) -> Outcome {
        if !is_object_id(authorisation) {
            return Outcome::Declined(decline("unknown_authorisation".into()));
        }
        let path = format!("/v1/payments/{authorisation}/capture");
        let body = json!({"amount": amount_minor});
        let payment = match self.client.post(&path, &body, idempotency_key) {
            Ok(payment) => payment,
            Err(failure) => return outcome_of(failure),
        };
        if let Some(wrong) = mismatch(&payment, "amount_captured", amount_minor, currency) {
            return Outcome::Unreachable(format!(
                "the capture is not what was asked for ({wrong})"
            ));
        }
        match text(&payment, "status").as_deref() {
            Some("captured") => Outcome::Approved(authorisation.to_string()),
            // Accepted (202): the payment says how it ended later, by `retrieve`.
            Some("processing") => Outcome::Pending(authorisation.to_string()),
            other => Outcome::Unreachable(format!("the payment is {other:?}, not captured")),
        }
    }

    /// Releases a hold.
    pub fn void(&self, authorisation: &str, idempotency_key: &str) -> Outcome {
        if !is_object_id(authorisation) {
            return Outcome::Declined(decline("unknown_authorisation".into()));
        }
        let path = format!("/v1/payments/{authorisation}/cancel");
        match self.client.post(&path, &json!({}), idempotency_key) {
            Ok(payment) => match text(&payment, "status").as_deref() {
                Some("canceled") => Outcome::Approved(authorisation.to_string()),
                other => Outcome::Unreachable(format!("the payment is {other:?}, not canceled")),
            },
            Err(failure) => outcome_of(failure),
        }
    }

    /// Gives captured money back; approved with the refund's id.
    pub fn refund(
        &self,
        payment: &str,
        amount_minor: i64,
        currency: &str,
        idempotency_key: &str,
    ) -> Outcome {
        let body = json!({"payment": payment, "amount": amount_minor, "currency": currency});
        let refund = match self.client.post("/v1/refunds", &body, idempotency_key) {
            Ok(refund) => refund,
            Err(failure) => return outcome_of(failure),
        };
        if let Some(wrong) = mismatch(&refund, "amount", amount_minor, currency) {
            return Outcome::Unreachable(format!("the refund is not what was asked for ({wrong})"));
        }
        match (text(&refund, "id"), text(&refund, "status").as_deref()) {
            (Some(id), Some("succeeded")) => Outcome::Approved(id),
            (Some(id), Some("pending")) => Outcome::Pending(id),
            (_, other) => Outcome::Unreachable(format!("the refund is {other:?}, not succeeded")),
        }
    }

    /// A payment as the provider holds it now.
    pub fn retrieve(&self, reference: &str) -> Result<PaymentState, Lookup> {
        if !is_object_id(reference) {
            return Err(Lookup::NotFound);
        }
        match self.client.get(&format!("/v1/payments/{reference}")) {
            Ok(payment) => state_of(&payment).map_err(Lookup::Unreachable),
            Err(Failure::Refused { status: 404, .. }) => Err(Lookup::NotFound),
            Err(other) => Err(Lookup::Unreachable(other.describe())),
        }
    }

    /// The payments made since `since`, a page at a time.
    pub fn list_payments(&self, since: i64, after: Option<&str>) -> Result<PaymentPage, String> {
        let mut path = format!("/v1/payments?created_since={since}");
        if let Some(after) = after {
            if !is_object_id(after) {
                return Err("not a page token".into());
            }
            path.push_str(&format!("&after={after}"));
        }
        let page = self.client.get(&path).map_err(|f| f.describe())?;
        let payments = page
            .get("data")
            .and_then(Value::as_array)
            .ok_or("the page has no data")?
            .iter()
            .map(state_of)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PaymentPage {
            payments,
            next: text(&page, "next"),
        })
    }
}
