//! Cards on file: the provider's card form, attaching, listing, the default card, removing,
//! and a card's death (`payment_method.dead`). The provider's references only, never numbers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

use std::sync::Arc;

use super::{Gateway, HoldError, PaymentError, Payments, SANDBOX_PREFIX, now, run};
use crate::auth::Merchant;
use crate::events;
use courier_domain::Environment;
use courier_domain::charge::{CardStatus, contains_card_number};
use courier_domain::event::{EventDetails, EventName, NewEvent};
use courier_plugins::PluginError;
use courier_plugins::{AttachRefusal, AttachedCard, CardFormRequest, FinishReason};
use courier_store::cards::{self as store, CardRow};

/// A card on file as the API shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PaymentMethodView {
    pub id: Uuid,
    pub brand: String,
    pub last_four: String,
    pub expiry_month: i32,
    pub expiry_year: i32,
    pub status: CardStatus,
    pub is_default: bool,
    pub attached_at: DateTime<Utc>,
    pub dead_reason: Option<String>,
}

impl From<CardRow> for PaymentMethodView {
    fn from(c: CardRow) -> Self {
        Self {
            id: c.id,
            brand: c.brand,
            last_four: c.last_four,
            expiry_month: c.expiry_month,
            expiry_year: c.expiry_year,
            status: c.status,
            is_default: c.is_default,
            attached_at: c.attached_at,
            dead_reason: c.dead_reason,
        }
    }
}

/// What the provider's card form needs (`POST /v1/payment-methods/setup`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CardFormView {
    /// The provider's client secret for its form, when its document has one (Stripe's); empty
    /// otherwise: `card_form` then holds what the form needs.
    pub client_secret: String,
    pub customer_id: String,
    /// The provider's document for its web component, as the payment adapter made it (for
    /// Stripe `{"client_secret"}`; for a provider with sessions, their id and data): handed to
    /// the browser as it is.
    #[schema(value_type = Object)]
    pub card_form: serde_json::Value,
}

/// What the merchant may say about the card form (the optional body of
/// `POST /v1/payment-methods/setup`); each left out is the operator's default.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CardFormOptions {
    /// ISO 4217, upper case, e.g. `EUR`: what the merchant is charged in.
    #[schema(pattern = "^[A-Z]{3}$")]
    pub currency: Option<String>,
    /// ISO 3166-1 alpha-2, upper case, e.g. `GB`.
    #[schema(pattern = "^[A-Z]{2}$")]
    pub country: Option<String>,
    /// BCP 47, e.g. `en-GB`: the form's language.
    pub locale: Option<String>,
    /// Absolute https URL the provider's form sends the merchant back to (http for
    /// `localhost` only).
    #[schema(max_length = 1024)]
    pub return_url: Option<String>,
}

/// The card form's request, the merchant's options checked and the defaults filled in.
fn card_form_request(
    merchant: &Merchant,
    options: &CardFormOptions,
    defaults: &super::CardFormDefaults,
    customer_id: Option<String>,
    contact_email: Option<String>,
) -> Result<CardFormRequest, PaymentError> {
    let invalid = PaymentError::InvalidCardForm;
    let currency = options
        .currency
        .clone()
        .unwrap_or(defaults.currency.clone());
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(invalid("`currency` must be an ISO 4217 code, e.g. EUR"));
    }
    let country = options.country.clone().unwrap_or(defaults.country.clone());
    if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(invalid(
            "`country` must be an ISO 3166-1 alpha-2 code, e.g. GB",
        ));
    }
    let locale = options.locale.clone().unwrap_or(defaults.locale.clone());
    if !is_language_tag(&locale) {
        return Err(invalid(
            "`locale` must be a BCP 47 language tag, e.g. en-GB",
        ));
    }
    let return_url = options
        .return_url
        .clone()
        .or(defaults.return_url.clone())
        .unwrap_or_else(|| "http://localhost/".into());
    if !is_return_url(&return_url) {
        return Err(invalid(
            "`return_url` must be an absolute https URL (http for localhost) of at most 1024 bytes",
        ));
    }
    Ok(CardFormRequest {
        merchant: merchant.merchant_id.to_string(),
        customer_id,
        currency,
        country,
        locale,
        return_url,
        contact_email,
    })
}

/// A language tag as BCP 47 writes them: a 2-3 letter language, then subtags of 1-8 letters or
/// digits.
fn is_language_tag(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let language = parts.next().unwrap_or_default();
    tag.len() <= 35
        && (2..=3).contains(&language.len())
        && language.bytes().all(|b| b.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn is_return_url(text: &str) -> bool {
    let Ok(url) = url::Url::parse(text) else {
        return false;
    };
    let local = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    text.len() <= 1024
        && url.username().is_empty()
        && url.password().is_none()
        && url.host_str().is_some()
        && (url.scheme() == "https" || (url.scheme() == "http" && local))
}

/// Who brings a card the provider stored.
#[derive(Clone, Copy)]
pub(super) enum CardSource {
    /// The merchant, attaching it (a card removed before is theirs to bring back).
    Attached { make_default: bool },
    /// The provider's event (e.g. an authorisation with recurring details): never brings back
    /// a card the merchant removed or that died.
    ProviderEvent,
}

impl Payments {
    /// Starts the provider's card form for the merchant (with the customer kept for it, if
    /// any) and keeps its customer id.
    pub async fn setup(
        &self,
        merchant: &Merchant,
        options: &CardFormOptions,
    ) -> Result<CardFormView, PaymentError> {
        let (kept, contact_email) = {
            let mut conn = self.pool.acquire().await?;
            let kept =
                store::customer(&mut conn, merchant.merchant_id, merchant.environment).await?;
            let email =
                courier_store::merchants::contact_email(&mut conn, merchant.merchant_id).await?;
            (kept, email)
        };
        let request = card_form_request(merchant, options, &self.card_form, kept, contact_email)?;
        let gateway = self.gateway(merchant.environment)?;
        let slot = self.call_slot(merchant.environment)?;
        let form = run(gateway, slot, move |g| async move {
            g.setup_card_form(&request).await
        })
        .await?
        .map_err(|_| PaymentError::ProviderUnreachable)?;
        let mut conn = self.pool.acquire().await?;
        store::keep_customer(
            &mut conn,
            merchant.merchant_id,
            merchant.environment,
            &form.customer_id,
        )
        .await?;
        // The adapter's host checked the document is a JSON object.
        let card_form: serde_json::Value = serde_json::from_str(&form.document).unwrap_or_default();
        Ok(CardFormView {
            client_secret: card_form
                .get("client_secret")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            customer_id: form.customer_id,
            card_form,
        })
    }

    /// Attaches the card the provider knows as `provider_ref`. The first card of an
    /// environment becomes its default, as does any card attached with `make_default`.
    pub async fn attach(
        &self,
        merchant: &Merchant,
        provider_ref: &str,
        make_default: bool,
    ) -> Result<PaymentMethodView, PaymentError> {
        let gateway = self.gateway(merchant.environment);
        // A card number is refused, unless the provider's own references look like one and
        // this is one of them.
        let own = gateway
            .as_ref()
            .is_ok_and(|g| g.is_own_reference(provider_ref));
        if contains_card_number(provider_ref) && !own {
            return Err(PaymentError::RawCardNumber);
        }
        let is_sandbox = provider_ref.starts_with(SANDBOX_PREFIX);
        match merchant.environment {
            Environment::Test if !is_sandbox => {
                return Err(PaymentError::WrongEnvironment(
                    "a test key takes only sandbox card references (`pm_sandbox_…`)",
                ));
            }
            Environment::Live if is_sandbox => {
                return Err(PaymentError::WrongEnvironment(
                    "sandbox card references are not accepted with a live key",
                ));
            }
            _ => {}
        }
        let gateway = gateway?;
        let customer_id = self.customer(merchant, &gateway).await?;
        let (customer, reference) = (customer_id.clone(), provider_ref.to_owned());
        let slot = self.call_slot(merchant.environment)?;
        let patterns = Arc::clone(&gateway);
        let attached = match run(gateway, slot, move |g| async move {
            g.attach_card(&customer, &reference).await
        })
        .await?
        {
            Ok(attached) => attached,
            // The adapter's message may quote what was sent: it is not passed on.
            Err(AttachRefusal::UnknownReference(_)) => return Err(PaymentError::UnknownReference),
            Err(AttachRefusal::Declined(d)) => {
                return Err(PaymentError::CardDeclined {
                    decline_code: d.code,
                });
            }
            Err(AttachRefusal::Unreachable(_)) => return Err(PaymentError::ProviderUnreachable),
        };
        // The reference kept is the provider's canonical one; it is held to the same rule.
        let provider_ref = attached.reference.as_str();
        if contains_card_number(provider_ref) && !patterns.is_own_reference(provider_ref) {
            return Err(PaymentError::Adapter(PluginError::InvalidOutput(
                "the card's reference holds a card number".into(),
            )));
        }
        let owner = (merchant.merchant_id, merchant.environment);
        let kept = self
            .keep_card(
                owner,
                customer_id,
                &attached,
                CardSource::Attached { make_default },
            )
            .await?;
        // Only a provider's event leaves a known card as it is.
        kept.ok_or(PaymentError::PaymentMethodNotFound)
    }

    /// Keeps a card the provider stored for the merchant's `customer_id` (attached, or told
    /// by the provider's event); the same working card again is the card already on file.
    /// None when a provider's event names a card the merchant already had and removed (or
    /// that died): it is not brought back, so no later booking charges it.
    pub(super) async fn keep_card(
        &self,
        (merchant_id, environment): (Uuid, Environment),
        customer_id: String,
        attached: &AttachedCard,
        source: CardSource,
    ) -> Result<Option<PaymentMethodView>, PaymentError> {
        let provider_ref = attached.reference.as_str();
        let card = attached.card.clone();
        let mut tx = self.pool.begin().await?;
        store::lock_cards(&mut tx, merchant_id, environment).await?;
        // The newest card with this reference: a card is only ever stored again once the one
        // before it stopped working, so a working card with it is this one.
        let known = store::card_by_reference(&mut tx, merchant_id, environment, provider_ref)
            .await?
            .filter(|existing| match source {
                CardSource::Attached { .. } => existing.is_working(),
                CardSource::ProviderEvent => true,
            });
        let make_default = match (source, known) {
            // The same working card attached again is the card already on file.
            (CardSource::Attached { make_default }, Some(mut existing)) => {
                if make_default && !existing.is_default {
                    store::clear_default(&mut tx, merchant_id, environment).await?;
                    store::set_default(&mut tx, existing.id).await?;
                    existing.is_default = true;
                }
                tx.commit().await?;
                return Ok(Some(existing.into()));
            }
            (CardSource::Attached { make_default }, None) => make_default,
            (CardSource::ProviderEvent, Some(existing)) if existing.is_working() => {
                tx.commit().await?;
                return Ok(Some(existing.into()));
            }
            (CardSource::ProviderEvent, Some(existing)) => {
                tracing::info!(card = %existing.id,
                    "the provider reports a card the merchant removed or that died; \
                     left as it is");
                tx.commit().await?;
                return Ok(None);
            }
            (CardSource::ProviderEvent, None) => false,
        };
        let has_default = store::has_default(&mut tx, merchant_id, environment).await?;
        if make_default && has_default {
            store::clear_default(&mut tx, merchant_id, environment).await?;
        }
        let row = CardRow {
            id: Uuid::new_v4(),
            merchant_id,
            environment,
            provider_ref: provider_ref.to_owned(),
            customer_id,
            brand: card.brand,
            last_four: card.last_four,
            expiry_month: i32::from(card.expiry_month),
            expiry_year: i32::from(card.expiry_year),
            status: CardStatus::Active,
            is_default: make_default || !has_default,
            attached_at: now(),
            dead_reason: None,
            died_at: None,
            removed_at: None,
        };
        store::insert_card(&mut tx, &row).await?;
        tx.commit().await?;
        Ok(Some(row.into()))
    }

    /// The merchant's customer at the provider, made on first need.
    async fn customer(
        &self,
        merchant: &Merchant,
        gateway: &Arc<dyn Gateway>,
    ) -> Result<String, PaymentError> {
        let contact_email = {
            let mut conn = self.pool.acquire().await?;
            if let Some(id) =
                store::customer(&mut conn, merchant.merchant_id, merchant.environment).await?
            {
                return Ok(id);
            }
            courier_store::merchants::contact_email(&mut conn, merchant.merchant_id).await?
        };
        let slot = self.call_slot(merchant.environment)?;
        let request = card_form_request(
            merchant,
            &CardFormOptions::default(),
            &self.card_form,
            None,
            contact_email,
        )?;
        let form = run(Arc::clone(gateway), slot, move |g| async move {
            g.setup_card_form(&request).await
        })
        .await?
        .map_err(|_| PaymentError::ProviderUnreachable)?;
        let mut conn = self.pool.acquire().await?;
        Ok(store::keep_customer(
            &mut conn,
            merchant.merchant_id,
            merchant.environment,
            &form.customer_id,
        )
        .await?)
    }

    /// The merchant's cards in the credential's environment (removed ones excluded).
    pub async fn cards(&self, merchant: &Merchant) -> Result<Vec<PaymentMethodView>, PaymentError> {
        let mut conn = self.pool.acquire().await?;
        let rows = store::list_cards(&mut conn, merchant.merchant_id, merchant.environment).await?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// Makes a working card the one deliveries are charged to.
    pub async fn make_default(&self, merchant: &Merchant, id: Uuid) -> Result<(), PaymentError> {
        let mut tx = self.pool.begin().await?;
        store::lock_cards(&mut tx, merchant.merchant_id, merchant.environment).await?;
        let card = store::card(&mut tx, merchant.merchant_id, merchant.environment, id)
            .await?
            .ok_or(PaymentError::PaymentMethodNotFound)?;
        if card.status != CardStatus::Active {
            return Err(PaymentError::CardDead {
                reason: card.dead_reason.unwrap_or_default(),
            });
        }
        if !card.is_default {
            store::clear_default(&mut tx, merchant.merchant_id, merchant.environment).await?;
            store::set_default(&mut tx, id).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Removes a card: it disappears from the list and is never charged again, but a charge
    /// already on it completes on it. Removing the default makes the most recently attached
    /// working card the default (none left: bookings answer `payment.no_payment_method`).
    pub async fn remove(&self, merchant: &Merchant, id: Uuid) -> Result<(), PaymentError> {
        let mut tx = self.pool.begin().await?;
        store::lock_cards(&mut tx, merchant.merchant_id, merchant.environment).await?;
        let card = store::card(&mut tx, merchant.merchant_id, merchant.environment, id)
            .await?
            .ok_or(PaymentError::PaymentMethodNotFound)?;
        store::remove_card(&mut tx, card.id, now()).await?;
        if card.is_default {
            store::promote_default(&mut tx, merchant.merchant_id, merchant.environment).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Marks a card dead, hands its default on and records `payment_method.dead`, all on
    /// `conn`'s transaction (once per card: a card already dead raises nothing). True when it
    /// recorded the event.
    pub async fn mark_card_dead(
        conn: &mut PgConnection,
        card_id: Uuid,
        finish: FinishReason,
    ) -> Result<bool, sqlx::Error> {
        let now = now();
        // The merchant's card lock first, as every change to its cards takes it first.
        let known = store::card_by_id(conn, card_id).await?;
        store::lock_cards(conn, known.merchant_id, known.environment).await?;
        let Some(card) = store::mark_dead(conn, card_id, dead_reason(finish), now).await? else {
            return Ok(false);
        };
        store::promote_default(conn, card.merchant_id, card.environment).await?;
        let event = NewEvent {
            name: EventName::PaymentMethodDead,
            merchant_id: card.merchant_id,
            environment: card.environment,
            occurred_at: now,
            job: None,
            details: EventDetails {
                payment_method_id: Some(card.id),
                brand: Some(card.brand),
                last_four: Some(card.last_four),
                reason: card.dead_reason,
                ..EventDetails::default()
            },
        };
        events::record(conn, &event).await?;
        Ok(true)
    }

    /// The card a new hold goes on: the default, else the most recent working card.
    pub async fn card_for_hold(
        conn: &mut PgConnection,
        merchant: &Merchant,
    ) -> Result<CardRow, HoldError> {
        store::usable_card(conn, merchant.merchant_id, merchant.environment)
            .await?
            .ok_or(HoldError::NoPaymentMethod)
    }
}

/// The `dead_reason` (and event `reason`) of a finished card.
pub fn dead_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Expired => "expired",
        FinishReason::Lost => "lost",
        FinishReason::RefusedForGood => "refused_for_good",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_reasons_are_stable() {
        assert_eq!(dead_reason(FinishReason::Expired), "expired");
        assert_eq!(dead_reason(FinishReason::Lost), "lost");
        assert_eq!(
            dead_reason(FinishReason::RefusedForGood),
            "refused_for_good"
        );
    }
}
