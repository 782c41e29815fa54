//! The contract's operations as Adyen Checkout (v71) requests, and Adyen's answers as the
//! contract's outcomes.
//!
//! | operation         | requests                                                         |
//! |-------------------|------------------------------------------------------------------|
//! | `setup-card-form` | `POST /sessions` (zero amount, the card stored for the shopper)  |
//! | `attach-card`     | `GET /storedPaymentMethods?shopperReference=…`                   |
//! | `authorise`       | `POST /payments`: the stored card, `ContAuth`, manual capture    |
//! | `capture`         | `POST /payments/{pspReference}/captures` (`received`: pending)   |
//! | `void`            | `POST /payments/{pspReference}/cancels` (`received`: pending)    |
//! | `refund`          | `POST /payments/{pspReference}/refunds` (`received`: pending)    |
//! | `retrieve`, `list-payments` | none: Checkout has no payment lookup; the outcome of  |
//! |                   | each move arrives by notification                                |

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Value, json};

use adapter_kit::{Attached, CardFormRequest, Decline, Finished, Outcome, Refusal, Transport};

use crate::adyen::{Client, Failure, Settings, from_adyen, to_adyen};

/// What the session gives the card form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardForm {
    pub customer_id: String,
    /// What Adyen's web Drop-in is started with.
    pub document: Value,
}

/// Adyen's refusal reason (`refusalReasonCode`, else `refusalReason`) as the contract's
/// canonical decline. Only reasons that say the card itself is finished finish it.
pub fn decline_of(code: Option<&str>, reason: Option<&str>) -> Decline {
    let reason = reason.unwrap_or_default();
    let (code, finished) = match (code.unwrap_or_default(), reason) {
        ("6", _) | (_, "Expired Card") => ("expired_card", Some(Finished::Expired)),
        ("5", _) | (_, "Blocked Card") => ("card_closed", Some(Finished::RefusedForGood)),
        ("8", _) | (_, "Invalid Card Number") => ("invalid_number", Some(Finished::RefusedForGood)),
        ("25", _) | (_, "Restricted Card") => ("restricted_card", Some(Finished::RefusedForGood)),
        ("14" | "20" | "22" | "31", _)
        | (_, "FRAUD" | "Acquirer Fraud" | "Issuer Suspected Fraud") => {
            ("fraudulent", Some(Finished::RefusedForGood))
        }
        ("12", _) | (_, "Not enough balance") => ("insufficient_funds", None),
        ("24", _) | (_, "CVC Declined") => ("incorrect_cvc", None),
        ("27", _) | (_, "Declined Non Generic") => ("do_not_honor", None),
        ("4" | "9", _) | (_, "Acquirer Error" | "Issuer Unavailable") => ("processing_error", None),
        ("11" | "38" | "42", _) => ("authentication_required", None),
        _ => ("card_declined", None),
    };
    Decline {
        code: code.to_string(),
        finished,
    }
}

/// A stored card's id or a PSP reference: letters and digits only, so nothing else reaches a
/// URL path.
fn is_reference(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A shopper reference: what the host keeps as the merchant's customer.
fn is_shopper(id: &str) -> bool {
    (3..=256).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn text(value: &Value, field: &str) -> Option<String> {
    value.get(field).and_then(Value::as_str).map(str::to_string)
}

/// What differs between Adyen's `amount` and what was asked, if anything.
fn mismatch(answer: &Value, amount_minor: i64, currency: &str) -> Option<String> {
    match answer.get("amount").and_then(from_adyen) {
        Some((a, c)) if a == amount_minor && c.eq_ignore_ascii_case(currency) => None,
        other => Some(format!(
            "asked {amount_minor} {currency}, Adyen answered {other:?}"
        )),
    }
}

/// A failure as an outcome: a refusal of the credentials or the request is for good; a 404
/// on a modification is an unknown payment.
fn outcome_of(failure: Failure) -> Outcome {
    match failure {
        Failure::InFlight(m) => Outcome::InFlight(m),
        Failure::Unreachable(m) => Outcome::Unreachable(m),
        refused @ Failure::Refused { .. } => Outcome::Refused(refused.describe()),
    }
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

    fn account(&self) -> &str {
        &self.client.settings.merchant_account
    }

    /// A Checkout session for Adyen's Drop-in that stores the card for the merchant's shopper
    /// reference (the customer the host keeps, else one named after the merchant) with a zero
    /// amount. Adyen keeps no customers: the shopper reference is the customer.
    /// The merchant's contact email, when the host gives one, is the shopper's email.
    pub fn setup_card_form(&self, request: &CardFormRequest) -> Result<CardForm, String> {
        let customer_id = match request.customer_id.as_deref().filter(|id| is_shopper(id)) {
            Some(id) => id.to_string(),
            None => format!("courier-{}", request.merchant),
        };
        if !is_shopper(&customer_id) {
            return Err("the merchant's id cannot be a shopper reference".into());
        }
        let amount = to_adyen(0, &request.currency).ok_or("the currency cannot be counted")?;
        let mut body = json!({
            "merchantAccount": self.account(),
            "amount": amount,
            "reference": format!("card-form-{customer_id}"),
            "returnUrl": request.return_url,
            "countryCode": request.country,
            "shopperLocale": request.locale,
            "shopperReference": customer_id,
            "storePaymentMethodMode": "enabled",
            "recurringProcessingModel": "UnscheduledCardOnFile",
            "shopperInteraction": "Ecommerce",
        });
        if let Some(email) = &request.contact_email {
            body["shopperEmail"] = json!(email);
        }
        let session = self
            .client
            .post_once("/sessions", &body)
            .map_err(|f| f.describe())?;
        let id = text(&session, "id").ok_or("the session has no id")?;
        let data = text(&session, "sessionData").ok_or("the session has no sessionData")?;
        let settings = self.client.settings;
        let mut document = json!({
            "session": {"id": id, "sessionData": data},
            "clientKey": settings.client_key,
            "environment": settings.environment,
        });
        if settings.client_key.is_some() {
            document["browser"] = browser(settings);
        }
        Ok(CardForm {
            customer_id,
            document,
        })
    }

    /// The stored card `card_ref` of the shopper `customer_id`, with the id to keep for it.
    pub fn attach_card(&self, customer_id: &str, card_ref: &str) -> Result<Attached, Refusal> {
        if !is_reference(card_ref) || !is_shopper(customer_id) {
            return Err(Refusal::UnknownReference("not a stored card id".into()));
        }
        let path = format!(
            "/storedPaymentMethods?merchantAccount={}&shopperReference={customer_id}",
            self.account()
        );
        let stored = match self.client.get(&path) {
            Ok(stored) => stored,
            Err(Failure::Refused { status: 404, .. }) => {
                return Err(Refusal::UnknownReference(
                    "the shopper has no stored cards".into(),
                ));
            }
            Err(other) => return Err(Refusal::Unreachable(other.describe())),
        };
        let cards = stored
            .get("storedPaymentMethods")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let Some(card) = cards
            .iter()
            .find(|c| text(c, "id").as_deref() == Some(card_ref))
        else {
            return Err(Refusal::UnknownReference(format!(
                "the shopper has no stored card {card_ref}"
            )));
        };
        let unreadable = || Refusal::Unreachable("the stored card cannot be read".into());
        let digits = |field: &str| text(card, field).and_then(|v| v.parse::<u16>().ok());
        Ok(Attached {
            reference: card_ref.to_string(),
            brand: text(card, "brand")
                .ok_or_else(unreadable)?
                .to_ascii_lowercase(),
            last_four: text(card, "lastFour").ok_or_else(unreadable)?,
            expiry_month: digits("expiryMonth")
                .and_then(|m| u8::try_from(m).ok())
                .ok_or_else(unreadable)?,
            // Adyen gives the year as "2030" or as "30".
            expiry_year: digits("expiryYear")
                .map(|y| if y < 100 { 2000 + y } else { y })
                .ok_or_else(unreadable)?,
        })
    }

    /// Holds money on the stored card, merchant-initiated (`ContAuth`, unscheduled card on
    /// file: no 3-D Secure challenge), with manual capture. The host's key is the payment's
    /// `reference` and its idempotency key.
    pub fn authorise(
        &self,
        amount_minor: i64,
        currency: &str,
        card_ref: &str,
        customer_id: &str,
        idempotency_key: &str,
    ) -> Outcome {
        let Some(amount) = to_adyen(amount_minor, currency) else {
            return Outcome::Refused(format!("Adyen cannot count {amount_minor} {currency}"));
        };
        let body = json!({
            "merchantAccount": self.account(),
            "amount": amount,
            "reference": idempotency_key,
            "paymentMethod": {"type": "scheme", "storedPaymentMethodId": card_ref},
            "shopperReference": customer_id,
            "shopperInteraction": "ContAuth",
            "recurringProcessingModel": "UnscheduledCardOnFile",
            "additionalData": {"manualCapture": "true"},
            "metadata": {"courier_hold_key": idempotency_key},
        });
        let payment = match self.client.post("/payments", &body, idempotency_key) {
            Ok(payment) => payment,
            Err(failure) => return outcome_of(failure),
        };
        let psp = text(&payment, "pspReference").filter(|r| is_reference(r));
        match text(&payment, "resultCode").as_deref() {
            Some("Authorised") => {
                let Some(psp) = psp else {
                    return Outcome::Unreachable("the payment's answer has no pspReference".into());
                };
                if let Some(wrong) = mismatch(&payment, amount_minor, currency) {
                    // Never keep money nobody asked for: cancel it, then say what was wrong.
                    let cancel = json!({
                        "merchantAccount": self.account(),
                        "reference": idempotency_key,
                    });
                    let key = format!("{idempotency_key}_cancel");
                    let _ = self
                        .client
                        .post(&format!("/payments/{psp}/cancels"), &cancel, &key);
                    return Outcome::Unreachable(format!(
                        "the hold is not what was asked for ({wrong})"
                    ));
                }
                Outcome::Approved(psp)
            }
            Some("Refused") => Outcome::Declined(decline_of(
                payment.get("refusalReasonCode").and_then(Value::as_str),
                payment.get("refusalReason").and_then(Value::as_str),
            )),
            Some("Cancelled") => Outcome::Declined(decline_of(None, None)),
            // The merchant is absent: a payment that asks for the shopper cannot go ahead.
            Some(
                "ChallengeShopper" | "IdentifyShopper" | "RedirectShopper" | "PresentToShopper",
            ) => Outcome::Declined(decline_of(Some("38"), None)),
            Some("Received" | "Pending") => match psp {
                Some(psp) => Outcome::Pending(psp),
                None => Outcome::Unreachable("a pending payment without a pspReference".into()),
            },
            other => Outcome::Unreachable(format!("the payment's resultCode is {other:?}")),
        }
    }

    /// A modification of the payment `psp` (`captures`, `cancels`, `refunds`): Adyen answers
    /// `received` with the modification's own pspReference, and the outcome by notification.
    fn modify(
        &self,
        psp: &str,
        kind: &str,
        money: Option<(i64, &str)>,
        idempotency_key: &str,
    ) -> Result<Value, Outcome> {
        if !is_reference(psp) {
            return Err(Outcome::Declined(decline_of(None, None)));
        }
        let mut body = json!({"merchantAccount": self.account(), "reference": idempotency_key});
        if let Some((amount_minor, currency)) = money {
            let Some(amount) = to_adyen(amount_minor, currency) else {
                return Err(Outcome::Refused(format!(
                    "Adyen cannot count {amount_minor} {currency}"
                )));
            };
            body["amount"] = amount;
        }
        let answer = self
            .client
            .post(&format!("/payments/{psp}/{kind}"), &body, idempotency_key)
            .map_err(|failure| match failure {
                // An unknown payment: nothing of ours to move.
                Failure::Refused { status: 404, .. } => Outcome::Declined(decline_of(None, None)),
                other => outcome_of(other),
            })?;
        if text(&answer, "status").as_deref() != Some("received") {
            return Err(Outcome::Unreachable(format!(
                "the {kind} answer's status is {:?}, not received",
                text(&answer, "status")
            )));
        }
        if text(&answer, "paymentPspReference").as_deref() != Some(psp) {
            return Err(Outcome::Unreachable(format!(
                "the {kind} answer names another payment"
            )));
        }
        if let Some((amount_minor, currency)) = money
            && let Some(wrong) = mismatch(&answer, amount_minor, currency)
        {
            return Err(Outcome::Unreachable(format!(
                "the {kind} is not what was asked for ({wrong})"
            )));
        }
        Ok(answer)
    }

    /// Takes held money: pending until Adyen's `CAPTURE` notification, which names the payment.
    pub fn capture(
        &self,
        authorisation: &str,
        amount_minor: i64,
        currency: &str,
        idempotency_key: &str,
    ) -> Outcome {
        match self.modify(
            authorisation,
            "captures",
            Some((amount_minor, currency)),
            idempotency_key,
        ) {
            Ok(_) => Outcome::Pending(authorisation.to_string()),
            Err(outcome) => outcome,
        }
    }

    /// Releases a hold: pending until Adyen's `CANCELLATION` notification.
    pub fn void(&self, authorisation: &str, idempotency_key: &str) -> Outcome {
        match self.modify(authorisation, "cancels", None, idempotency_key) {
            Ok(_) => Outcome::Pending(authorisation.to_string()),
            Err(outcome) => outcome,
        }
    }

    /// Gives captured money back: pending until Adyen's `REFUND` notification, which names the
    /// refund's own pspReference.
    pub fn refund(
        &self,
        payment: &str,
        amount_minor: i64,
        currency: &str,
        idempotency_key: &str,
    ) -> Outcome {
        match self.modify(
            payment,
            "refunds",
            Some((amount_minor, currency)),
            idempotency_key,
        ) {
            Ok(answer) => match text(&answer, "pspReference").filter(|r| is_reference(r)) {
                Some(refund) => Outcome::Pending(refund),
                None => Outcome::Unreachable("the refund's answer has no pspReference".into()),
            },
            Err(outcome) => outcome,
        }
    }
}

/// How a page loads Adyen's Drop-in (the service's `browser` convention for card-form
/// documents): Adyen Web's script and stylesheet, and the origins it loads from, frames and
/// calls (Adyen's Content-Security-Policy guidance: the SDK's host and Checkout's shopper host
/// of the environment).
fn browser(settings: &Settings) -> Value {
    let base = &settings.web_sdk_base;
    let origin_of = |url: &str| {
        let rest = url.strip_prefix("https://").unwrap_or_default();
        format!("https://{}", rest.split('/').next().unwrap_or_default())
    };
    let mut origins = alloc::vec![origin_of(base)];
    if origin_of(base) == origin_of(&crate::adyen::default_web_sdk_base(&settings.environment)) {
        origins.push(format!(
            "https://checkoutshopper-{}.adyen.com",
            settings.environment
        ));
    }
    json!({
        "component": "adyen-drop-in",
        "script": format!("{base}adyen.js"),
        "stylesheet": format!("{base}adyen.css"),
        "origins": origins,
    })
}
