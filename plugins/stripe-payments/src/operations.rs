//! The adapter's operations as Stripe requests, and Stripe's answers as
//! the contract's outcomes. Plain Rust over a [`Transport`], so every path
//! is unit tested natively with scripted answers.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value;

use adapter_kit::form::path_segment;
use adapter_kit::{
    Attached, Decline, Finished, Lookup, Outcome, PaymentPage, PaymentState, Refusal, Status,
    Transport,
};

use crate::stripe::{Client, Failure, Settings};

/// The metadata name under which a hold keeps its idempotency key.
pub const HOLD_KEY_METADATA: &str = "courier_hold_key";
/// PaymentIntents per list page: Stripe's most.
const PAGE_SIZE: &str = "100";

/// What the SetupIntent gives the card form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardForm {
    pub client_secret: String,
    pub customer_id: String,
}

/// What a decline code says about the card, after Stripe's list of decline
/// codes: only codes that say the card itself is finished mark it so; every
/// other decline is about this payment, and the card stays usable.
pub fn finished_by(code: &str) -> Option<Finished> {
    match code {
        "expired_card" => Some(Finished::Expired),
        "lost_card" | "stolen_card" | "pickup_card" => Some(Finished::Lost),
        "restricted_card"
        | "invalid_account"
        | "revocation_of_all_authorizations"
        | "revocation_of_authorization"
        | "new_account_information_available"
        | "card_not_supported"
        | "invalid_number"
        | "incorrect_number"
        | "fraudulent"
        | "stop_payment_order" => Some(Finished::RefusedForGood),
        _ => None,
    }
}

fn decline(code: &str, decline_code: Option<&str>) -> Decline {
    // The decline code is the issuer's reason; the error code alone is used
    // when Stripe gives no other (e.g. `expired_card`, `incorrect_cvc`).
    let code = decline_code.unwrap_or(code).to_string();
    Decline {
        finished: finished_by(&code),
        code,
    }
}

/// A Stripe object id as Stripe makes them (`pm_…`, `pi_…`, `cus_…`): a
/// reference from elsewhere that is not one never reaches a URL path.
fn is_object_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 255 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
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

    /// The merchant's customer and a SetupIntent for the card form, which
    /// saves the card to that customer for payments made without the
    /// customer present.
    ///
    /// Every card form of a merchant must save to the same customer (its
    /// cards are held later with the customer the host kept). The customer
    /// carries the merchant in its metadata: an earlier one is found by
    /// search, and one made in the last minutes (which search may not show
    /// yet) by creating it again with the same idempotency key, which
    /// answers the first one for 24 hours. The customer the host kept for
    /// the merchant (`known_customer`) is used as it is, without a search.
    /// A new customer is given the merchant's contact email (`contact_email`), when there is one.
    pub fn setup_card_form(
        &self,
        merchant: &str,
        known_customer: Option<&str>,
        contact_email: Option<&str>,
    ) -> Result<CardForm, String> {
        let known = known_customer
            .filter(|id| is_object_id(id))
            .map(String::from);
        let earlier = match known {
            Some(id) => Some(id),
            None => self.earlier_customer(merchant)?,
        };
        let customer_id = match earlier {
            Some(id) => id,
            None => {
                let mut fields = alloc::vec![("metadata[courier_merchant]", merchant)];
                if let Some(email) = contact_email {
                    fields.push(("email", email));
                }
                let customer = self
                    .client
                    .post(
                        "/v1/customers",
                        &fields,
                        &format!("courier-customer-{merchant}"),
                    )
                    .map_err(|f| f.describe())?;
                text(&customer, "id").ok_or("the customer has no id")?
            }
        };
        // No key: every call is a new form, and a form nobody completes costs nothing.
        let intent = self
            .client
            .post_once(
                "/v1/setup_intents",
                &[
                    ("customer", customer_id.as_str()),
                    ("usage", "off_session"),
                    ("payment_method_types[]", "card"),
                ],
            )
            .map_err(|f| f.describe())?;
        let client_secret =
            text(&intent, "client_secret").ok_or("the SetupIntent has no client_secret")?;
        Ok(CardForm {
            client_secret,
            customer_id,
        })
    }

    /// The oldest customer made for `merchant`, if search shows one.
    fn earlier_customer(&self, merchant: &str) -> Result<Option<String>, String> {
        let plain = merchant
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if merchant.is_empty() || !plain {
            return Ok(None);
        }
        let query = format!("metadata['courier_merchant']:'{merchant}'");
        let path = format!(
            "/v1/customers/search?{}",
            adapter_kit::form::encode(&[("query", query.as_str())])
        );
        let found = self.client.get(&path).map_err(|f| f.describe())?;
        let oldest = found
            .get("data")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| {
                c.get("metadata").and_then(|m| m.get("courier_merchant"))
                    == Some(&Value::from(merchant))
            })
            .min_by_key(|c| c.get("created").and_then(Value::as_i64).unwrap_or(i64::MAX));
        Ok(oldest.and_then(|c| text(c, "id")))
    }

    /// Reads the card behind a PaymentMethod, attaching it to the customer
    /// when the card form left it unattached. A PaymentMethod of another
    /// customer is unknown here. A SetupIntent's id (`seti_…`, what Stripe
    /// hands the page it returns to after the card holder authenticated)
    /// stands for the PaymentMethod it saved.
    pub fn attach_card(&self, customer_id: &str, card_ref: &str) -> Result<Attached, Refusal> {
        if !is_object_id(card_ref) {
            return Err(Refusal::UnknownReference("not a PaymentMethod id".into()));
        }
        let saved;
        let card_ref = if card_ref.starts_with("seti_") {
            saved = self.saved_by(customer_id, card_ref)?;
            saved.as_str()
        } else {
            card_ref
        };
        let path = format!("/v1/payment_methods/{}", path_segment(card_ref));
        let mut method = match self.client.get(&path) {
            Ok(m) => m,
            Err(Failure::Refused { status: 404, .. }) => {
                return Err(Refusal::UnknownReference("no such PaymentMethod".into()));
            }
            Err(f) => return Err(refusal(f)),
        };
        match method.get("customer") {
            Some(Value::String(owner)) if owner == customer_id => {}
            Some(Value::String(_)) => {
                return Err(Refusal::UnknownReference(
                    "the PaymentMethod belongs to another customer".into(),
                ));
            }
            _ => {
                method = self
                    .client
                    .post(
                        &format!("{path}/attach"),
                        &[("customer", customer_id)],
                        &format!("courier-attach-{card_ref}-{customer_id}"),
                    )
                    .map_err(refusal)?;
            }
        }
        card_of(card_ref, &method).map_err(Refusal::Unreachable)
    }

    /// The PaymentMethod a succeeded SetupIntent of `customer_id` saved.
    fn saved_by(&self, customer_id: &str, setup_intent: &str) -> Result<String, Refusal> {
        let path = format!("/v1/setup_intents/{}", path_segment(setup_intent));
        let intent = match self.client.get(&path) {
            Ok(intent) => intent,
            Err(Failure::Refused { status: 404, .. }) => {
                return Err(Refusal::UnknownReference("no such SetupIntent".into()));
            }
            Err(f) => return Err(refusal(f)),
        };
        if text(&intent, "customer").as_deref() != Some(customer_id) {
            return Err(Refusal::UnknownReference(
                "the SetupIntent belongs to another customer".into(),
            ));
        }
        let status = text(&intent, "status").unwrap_or_default();
        if status != "succeeded" {
            return Err(Refusal::UnknownReference(format!(
                "the SetupIntent has saved no card (it is {status})"
            )));
        }
        // Unexpanded it is the id; expanded, the object.
        let method = intent
            .get("payment_method")
            .and_then(|m| m.as_str().map(String::from).or_else(|| text(m, "id")))
            .filter(|id| is_object_id(id));
        method.ok_or_else(|| {
            Refusal::UnknownReference("the SetupIntent names no PaymentMethod".into())
        })
    }

    /// A hold: a PaymentIntent captured later, confirmed at once on the
    /// saved card without the customer present.
    pub fn authorise(
        &self,
        amount_minor: i64,
        currency: &str,
        card_ref: &str,
        customer_id: &str,
        idempotency_key: &str,
    ) -> Outcome {
        if !is_object_id(card_ref) {
            return Outcome::Declined(decline("unknown_card", None));
        }
        let amount = amount_minor.to_string();
        let currency = currency.to_ascii_lowercase();
        let intent = match self.client.post(
            "/v1/payment_intents",
            &[
                ("amount", amount.as_str()),
                ("currency", currency.as_str()),
                ("customer", customer_id),
                ("payment_method", card_ref),
                ("payment_method_types[]", "card"),
                ("capture_method", "manual"),
                ("confirm", "true"),
                ("off_session", "true"),
                // Kept with the payment: a hold whose approval was lost is found by it.
                ("metadata[courier_hold_key]", idempotency_key),
            ],
            idempotency_key,
        ) {
            Ok(intent) => intent,
            Err(failure) => return outcome_of(failure),
        };
        let Some(id) = text(&intent, "id").filter(|id| is_object_id(id)) else {
            return Outcome::Unreachable("the PaymentIntent has no id".into());
        };
        let status = text(&intent, "status").unwrap_or_default();
        let wrong = mismatch(&intent, "amount", amount_minor, &currency);
        if let Some(wrong) = wrong {
            // Never keep money nobody asked for: release it before saying so.
            let released = self.cancel(&id, &format!("{idempotency_key}-mismatch"));
            return Outcome::Unreachable(format!(
                "the PaymentIntent {id} is not the hold asked for ({wrong}); {}",
                match released {
                    Outcome::Approved(_) => "it was cancelled".to_string(),
                    other => format!("cancelling it failed: {other:?}"),
                }
            ));
        }
        match status.as_str() {
            "requires_capture" => Outcome::Approved(id),
            // Off-session confirmation that needs the customer is a decline
            // Stripe normally reports as a card error; a PaymentIntent left
            // waiting for an action holds no money.
            "requires_action" | "requires_payment_method" => {
                Outcome::Declined(decline("authentication_required", None))
            }
            other => Outcome::Unreachable(format!(
                "the PaymentIntent {id} is {other:?}, not requires_capture"
            )),
        }
    }

    /// Takes `amount_minor` of a hold.
    pub fn capture(
        &self,
        authorisation: &str,
        amount_minor: i64,
        currency: &str,
        idempotency_key: &str,
    ) -> Outcome {
        if !is_object_id(authorisation) {
            return Outcome::Declined(decline("unknown_authorisation", None));
        }
        let amount = amount_minor.to_string();
        let path = format!(
            "/v1/payment_intents/{}/capture",
            path_segment(authorisation)
        );
        let intent = match self.client.post(
            &path,
            &[("amount_to_capture", amount.as_str())],
            idempotency_key,
        ) {
            Ok(intent) => intent,
            Err(failure) => return outcome_of(failure),
        };
        let currency = currency.to_ascii_lowercase();
        if let Some(wrong) = mismatch(&intent, "amount_received", amount_minor, &currency) {
            return Outcome::Unreachable(format!(
                "the capture is not what was asked for ({wrong})"
            ));
        }
        match text(&intent, "status").as_deref() {
            Some("succeeded") => Outcome::Approved(authorisation.to_string()),
            other => Outcome::Unreachable(format!(
                "the captured PaymentIntent is {other:?}, not succeeded"
            )),
        }
    }

    /// Releases a hold.
    pub fn void(&self, authorisation: &str, idempotency_key: &str) -> Outcome {
        if !is_object_id(authorisation) {
            return Outcome::Declined(decline("unknown_authorisation", None));
        }
        self.cancel(authorisation, idempotency_key)
    }

    fn cancel(&self, intent: &str, idempotency_key: &str) -> Outcome {
        let path = format!("/v1/payment_intents/{}/cancel", path_segment(intent));
        match self.client.post(
            &path,
            &[("cancellation_reason", "abandoned")],
            idempotency_key,
        ) {
            Ok(cancelled) => match text(&cancelled, "status").as_deref() {
                Some("canceled") => Outcome::Approved(intent.to_string()),
                other => Outcome::Unreachable(format!(
                    "the cancelled PaymentIntent is {other:?}, not canceled"
                )),
            },
            Err(failure) => outcome_of(failure),
        }
    }

    /// Gives back `amount_minor` of a captured PaymentIntent.
    pub fn refund(
        &self,
        payment: &str,
        amount_minor: i64,
        currency: &str,
        idempotency_key: &str,
    ) -> Outcome {
        if !is_object_id(payment) {
            return Outcome::Declined(decline("unknown_payment", None));
        }
        let amount = amount_minor.to_string();
        let refund = match self.client.post(
            "/v1/refunds",
            &[("payment_intent", payment), ("amount", amount.as_str())],
            idempotency_key,
        ) {
            Ok(refund) => refund,
            Err(failure) => return outcome_of(failure),
        };
        let Some(id) = text(&refund, "id") else {
            return Outcome::Unreachable("the refund has no id".into());
        };
        let currency = currency.to_ascii_lowercase();
        if let Some(wrong) = mismatch(&refund, "amount", amount_minor, &currency) {
            return Outcome::Unreachable(format!(
                "the refund {id} is not what was asked for ({wrong})"
            ));
        }
        match text(&refund, "status").as_deref() {
            // `pending`: accepted, and Stripe finishes it; money is on its way back.
            Some("succeeded" | "pending") => Outcome::Approved(id),
            Some(status @ ("failed" | "canceled")) => {
                let reason = text(&refund, "failure_reason");
                Outcome::Declined(decline(&format!("refund_{status}"), reason.as_deref()))
            }
            other => Outcome::Unreachable(format!("the refund {id} is {other:?}")),
        }
    }

    /// A PaymentIntent read back with its latest Charge (what was refunded
    /// is counted on the Charge).
    pub fn retrieve(&self, reference: &str) -> Result<PaymentState, Lookup> {
        if !is_object_id(reference) {
            return Err(Lookup::NotFound);
        }
        let path = format!(
            "/v1/payment_intents/{}?{}",
            path_segment(reference),
            adapter_kit::form::encode(&[("expand[]", "latest_charge")])
        );
        match self.client.get(&path) {
            Ok(intent) => payment_state(&intent).map_err(Lookup::Unreachable),
            Err(Failure::Refused { status: 404, .. }) => Err(Lookup::NotFound),
            Err(other) => Err(Lookup::Unreachable(other.describe())),
        }
    }

    /// The PaymentIntents made since `since` (Unix seconds), newest first
    /// as Stripe lists them, a page of up to 100 after the id `after`.
    pub fn list_payments(&self, since: i64, after: Option<&str>) -> Result<PaymentPage, String> {
        let since = since.to_string();
        let mut query = alloc::vec![
            ("created[gte]", since.as_str()),
            ("limit", PAGE_SIZE),
            ("expand[]", "data.latest_charge"),
        ];
        if let Some(after) = after {
            if !is_object_id(after) {
                return Err(format!("{after:?} is not a PaymentIntent id"));
            }
            query.push(("starting_after", after));
        }
        let path = format!("/v1/payment_intents?{}", adapter_kit::form::encode(&query));
        let list = self.client.get(&path).map_err(|f| f.describe())?;
        let data = list
            .get("data")
            .and_then(Value::as_array)
            .ok_or("the list has no data")?;
        let payments = data
            .iter()
            .map(payment_state)
            .collect::<Result<Vec<_>, _>>()?;
        let has_more = list
            .get("has_more")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let next = match payments.last() {
            Some(last) if has_more => Some(last.reference.clone()),
            _ => None,
        };
        Ok(PaymentPage { payments, next })
    }
}

fn text(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_string)
}

/// What differs between the object Stripe returned and what was asked for.
fn mismatch(object: &Value, amount_field: &str, amount: i64, currency: &str) -> Option<String> {
    let got_amount = object.get(amount_field).and_then(Value::as_i64);
    let got_currency = object.get("currency").and_then(Value::as_str);
    if got_amount != Some(amount) {
        return Some(format!("{amount_field} {got_amount:?}, asked {amount}"));
    }
    if got_currency != Some(currency) {
        return Some(format!("currency {got_currency:?}, asked {currency:?}"));
    }
    None
}

/// The card of `method`, kept under `reference` (the id the host was given, or the one a
/// SetupIntent saved).
fn card_of(reference: &str, method: &Value) -> Result<Attached, String> {
    let card = method
        .get("card")
        .filter(|c| c.is_object())
        .ok_or("the PaymentMethod is not a card")?;
    let brand = text(card, "brand").ok_or("the card has no brand")?;
    let last_four =
        text(card, "last4").filter(|l| l.len() == 4 && l.bytes().all(|b| b.is_ascii_digit()));
    let month = card
        .get("exp_month")
        .and_then(Value::as_u64)
        .and_then(|m| u8::try_from(m).ok());
    let year = card
        .get("exp_year")
        .and_then(Value::as_u64)
        .and_then(|y| u16::try_from(y).ok());
    match (last_four, month, year) {
        (Some(last_four), Some(expiry_month @ 1..=12), Some(expiry_year @ 1000..=9999)) => {
            Ok(Attached {
                reference: String::from(reference),
                brand: brand.to_ascii_lowercase(),
                last_four,
                expiry_month,
                expiry_year,
            })
        }
        _ => Err("the card's last4, exp_month or exp_year is missing or malformed".into()),
    }
}

/// A PaymentIntent as the contract's payment state; `Err` says what does
/// not read.
fn payment_state(intent: &Value) -> Result<PaymentState, String> {
    let reference = text(intent, "id")
        .filter(|id| is_object_id(id))
        .ok_or("the PaymentIntent has no id")?;
    let number = |value: &Value, name: &str| value.get(name).and_then(Value::as_i64);
    let status = match text(intent, "status").as_deref() {
        Some("requires_capture") => Status::Held,
        Some("succeeded") => Status::Captured,
        Some("canceled") => Status::Released,
        Some("processing") => Status::Processing,
        Some("requires_payment_method" | "requires_confirmation" | "requires_action") => {
            Status::Refused
        }
        other => return Err(format!("the PaymentIntent {reference} is {other:?}")),
    };
    let amount_minor = number(intent, "amount").ok_or("the PaymentIntent has no amount")?;
    let captured_minor = number(intent, "amount_received").unwrap_or(0);
    // Refunds are counted on the Charge; unexpanded (an id) means none was read.
    let refunded_minor = intent
        .get("latest_charge")
        .filter(|c| c.is_object())
        .and_then(|c| number(c, "amount_refunded"))
        .unwrap_or(0);
    let currency = text(intent, "currency")
        .ok_or("the PaymentIntent has no currency")?
        .to_ascii_uppercase();
    let hold_key = intent
        .get("metadata")
        .and_then(|m| text(m, HOLD_KEY_METADATA));
    Ok(PaymentState {
        reference,
        hold_key,
        status,
        amount_minor,
        captured_minor,
        refunded_minor,
        currency,
        created_at: number(intent, "created").unwrap_or(0),
    })
}

fn outcome_of(failure: Failure) -> Outcome {
    match failure {
        Failure::Card {
            code, decline_code, ..
        } => Outcome::Declined(decline(&code, decline_code.as_deref())),
        Failure::InFlight(message) => Outcome::InFlight(message),
        // A key Stripe does not accept (401), one without the permission (403), or a request
        // it finds invalid (400) fails the same way every time: refused, for operators.
        refusal @ Failure::Refused {
            status: 400 | 401 | 403,
            ..
        } => Outcome::Refused(refusal.describe()),
        other => Outcome::Unreachable(other.describe()),
    }
}

fn refusal(failure: Failure) -> Refusal {
    match failure {
        Failure::Card {
            code, decline_code, ..
        } => Refusal::Declined(decline(&code, decline_code.as_deref())),
        other => Refusal::Unreachable(other.describe()),
    }
}

#[cfg(test)]
mod tests;
