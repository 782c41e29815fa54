//! Account settings: what bookings of the merchant default to (customer texts, proof, the
//! parcel's preparation time), the SMS sender name customers see, the merchant's request
//! budgets, and their billing contact.

use serde::{Deserialize, Deserializer};
use serde_json::json;
use uuid::Uuid;

use super::error::{MAX_PER_MINUTE, MerchantError, SettingsError};
use crate::audit::{self, AuditAction, AuditRecord};
use crate::auth::CredentialChange;
use courier_domain::job::ready::MAX_PREPARATION_MINUTES;
use courier_domain::numeric::Numeric;
use courier_store as store;
pub use courier_store::merchants::AccountSettings;

/// A change to some account settings; what is absent stays as it is, and `null` puts a
/// nullable setting back to the service's default.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsChange {
    pub notify_customer: Option<bool>,
    pub proof_photo_required: Option<bool>,
    pub proof_signature_required: Option<bool>,
    /// 3 to 11 letters and digits (A-Z, a-z, 0-9), at least one a letter; null: the
    /// service's default sender.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, min_length = 3, max_length = 11, pattern = "^[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*$")]
    pub sms_sender_name: Option<Option<String>>,
    /// Requests per minute, shared by all the merchant's keys; null: the service's default.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 1_000_000)]
    pub rate_limit_quotes_per_minute: Option<Option<Numeric<i64>>>,
    /// Requests per minute, shared by all the merchant's keys; null: the service's default.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 1_000_000)]
    pub rate_limit_bookings_per_minute: Option<Option<Numeric<i64>>>,
    /// Requests per minute, shared by all the merchant's keys; null: the service's default.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 1_000_000)]
    pub rate_limit_reads_per_minute: Option<Option<Numeric<i64>>>,
    /// Where the merchant is written to about billing (an email address of at most 254
    /// characters), told to the payment provider's card form; null: none.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, format = Email, max_length = 254)]
    pub contact_email: Option<Option<String>>,
    /// Minutes from when a job is due (booked, or its scheduled time) to its parcel's being
    /// ready, for bookings that do not send `pickup_ready_at` (at most the dispatch
    /// deadline); null: ready as soon as due.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 240)]
    pub preparation_minutes: Option<Option<Numeric<i64>>>,
}

/// A field that is present, possibly `null` (absent fields take the `default`, None).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

impl SettingsChange {
    /// `settings` with this change applied, or why the change is refused.
    pub fn apply_to(&self, settings: &AccountSettings) -> Result<AccountSettings, SettingsError> {
        let mut after = settings.clone();
        if let Some(value) = self.notify_customer {
            after.notify_customer = value;
        }
        if let Some(value) = self.proof_photo_required {
            after.proof_photo_required = value;
        }
        if let Some(value) = self.proof_signature_required {
            after.proof_signature_required = value;
        }
        if let Some(name) = &self.sms_sender_name {
            after.sms_sender_name = name.as_deref().map(sms_sender_name).transpose()?;
        }
        if let Some(email) = &self.contact_email {
            after.contact_email = email.as_deref().map(contact_email).transpose()?;
        }
        if let Some(minutes) = self.preparation_minutes {
            after.preparation_minutes = minutes
                .map(|Numeric(n)| {
                    i32::try_from(n)
                        .ok()
                        .filter(|n| (0..=MAX_PREPARATION_MINUTES).contains(n))
                        .ok_or(SettingsError::InvalidPreparationMinutes)
                })
                .transpose()?;
        }
        for (change, setting, field) in [
            (
                &self.rate_limit_quotes_per_minute,
                &mut after.rate_limit_quotes_per_minute,
                "rate_limit_quotes_per_minute",
            ),
            (
                &self.rate_limit_bookings_per_minute,
                &mut after.rate_limit_bookings_per_minute,
                "rate_limit_bookings_per_minute",
            ),
            (
                &self.rate_limit_reads_per_minute,
                &mut after.rate_limit_reads_per_minute,
                "rate_limit_reads_per_minute",
            ),
        ] {
            if let Some(value) = change {
                *setting = value
                    .map(|Numeric(n)| {
                        (1..=MAX_PER_MINUTE)
                            .contains(&n)
                            .then_some(n as i32)
                            .ok_or(SettingsError::InvalidRateLimit { field })
                    })
                    .transpose()?;
            }
        }
        Ok(after)
    }
}

/// SMS alphanumeric sender ids: 3 to 11 ASCII letters and digits, not all digits (an
/// all-digit sender would be taken for a phone number).
fn sms_sender_name(name: &str) -> Result<String, SettingsError> {
    let valid = (3..=11).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
        && name.chars().any(|c| c.is_ascii_alphabetic());
    valid
        .then(|| name.to_owned())
        .ok_or(SettingsError::InvalidSmsSenderName)
}

/// Longest email address accepted (RFC 5321's path limit, less its brackets).
const MAX_EMAIL_CHARS: usize = 254;

/// An address a provider can be given: `local@domain.tld`, no display name, no IP literal.
fn contact_email(email: &str) -> Result<String, SettingsError> {
    let email = email.trim();
    let options = email_address::Options {
        minimum_sub_domains: 2,
        allow_domain_literal: false,
        allow_display_text: false,
        ..email_address::Options::default()
    };
    let valid = email.len() <= MAX_EMAIL_CHARS
        && email_address::EmailAddress::parse_with_options(email, options).is_ok();
    valid
        .then(|| email.to_owned())
        .ok_or(SettingsError::InvalidContactEmail)
}

impl super::service::Merchants {
    /// The merchant's settings.
    pub async fn settings(&self, merchant_id: Uuid) -> Result<AccountSettings, MerchantError> {
        let pool = &self.pool;
        let mut conn = pool.acquire().await?;
        store::merchants::settings(&mut conn, merchant_id, false)
            .await?
            .ok_or(MerchantError::NotFound)
    }

    /// Applies `change` for `operator` and returns the settings after it. A change that changes
    /// something is recorded with the settings before and after; new budgets reach every
    /// instance at once.
    pub async fn change_settings(
        &self,
        merchant_id: Uuid,
        change: &SettingsChange,
        operator: &str,
    ) -> Result<AccountSettings, MerchantError> {
        let pool = &self.pool;
        let authenticator = &self.authenticator;
        let mut tx = pool.begin().await?;
        let before = store::merchants::settings(&mut tx, merchant_id, true)
            .await?
            .ok_or(MerchantError::NotFound)?;
        let after = change.apply_to(&before)?;
        if after == before {
            return Ok(after);
        }
        store::merchants::write_settings(&mut tx, merchant_id, &after).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::SettingsChanged,
                target_type: "merchant",
                target_id: merchant_id.to_string(),
                merchant_id: Some(merchant_id),
                before: Some(json!(before)),
                after: Some(json!(after)),
                occurred_at: crate::infra::clock::now(),
            },
        )
        .await?;
        let budgets_changed = after.limit_overrides() != before.limit_overrides();
        if budgets_changed {
            crate::auth::announce(&mut tx, &CredentialChange::Merchant(merchant_id)).await?;
        }
        self.tell_owners(
            &mut tx,
            merchant_id,
            "the account's settings were changed",
            operator,
        )
        .await?;
        tx.commit().await?;
        if budgets_changed {
            authenticator.forget_merchant(merchant_id);
        }
        Ok(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> AccountSettings {
        AccountSettings {
            notify_customer: false,
            proof_photo_required: false,
            proof_signature_required: false,
            sms_sender_name: None,
            rate_limit_quotes_per_minute: None,
            rate_limit_bookings_per_minute: None,
            rate_limit_reads_per_minute: None,
            contact_email: None,
            preparation_minutes: None,
        }
    }

    fn change(body: serde_json::Value) -> SettingsChange {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn absent_fields_stay_and_null_restores_the_default() {
        let set = change(json!({"sms_sender_name": "Acme", "rate_limit_reads_per_minute": "60"}))
            .apply_to(&defaults())
            .unwrap();
        assert_eq!(set.sms_sender_name.as_deref(), Some("Acme"));
        assert_eq!(set.rate_limit_reads_per_minute, Some(60));
        let unchanged = change(json!({"notify_customer": true}))
            .apply_to(&set)
            .unwrap();
        assert_eq!(unchanged.sms_sender_name.as_deref(), Some("Acme"));
        assert!(unchanged.notify_customer);
        let cleared = change(json!({"sms_sender_name": null, "rate_limit_reads_per_minute": null}))
            .apply_to(&set)
            .unwrap();
        assert_eq!(cleared, defaults());
    }

    #[test]
    fn preparation_minutes_are_a_bounded_whole_number() {
        let set = change(json!({"preparation_minutes": "12"}))
            .apply_to(&defaults())
            .unwrap();
        assert_eq!(set.preparation_minutes, Some(12));
        for good in [0, 240] {
            let set = change(json!({"preparation_minutes": good}))
                .apply_to(&defaults())
                .unwrap();
            assert_eq!(set.preparation_minutes, Some(good));
        }
        for bad in [json!(-1), json!(241), json!(i64::MAX)] {
            assert_eq!(
                change(json!({"preparation_minutes": bad})).apply_to(&defaults()),
                Err(SettingsError::InvalidPreparationMinutes)
            );
        }
        let cleared = change(json!({"preparation_minutes": null}))
            .apply_to(&set)
            .unwrap();
        assert_eq!(cleared.preparation_minutes, None);
    }

    #[test]
    fn sms_sender_names_are_alphanumeric_ids() {
        for good in ["Acme", "ACME2go", "abc", "Abcdefghijk"] {
            assert!(sms_sender_name(good).is_ok(), "{good}");
        }
        for bad in [
            "ab",
            "Abcdefghijkl",
            "Acme Ltd",
            "Acmé",
            "12345",
            "",
            "Ac-me",
        ] {
            assert_eq!(
                sms_sender_name(bad),
                Err(SettingsError::InvalidSmsSenderName),
                "{bad}"
            );
        }
    }

    #[test]
    fn budgets_are_positive_and_bounded() {
        for bad in [json!(0), json!(-5), json!(MAX_PER_MINUTE + 1)] {
            let refused =
                change(json!({"rate_limit_quotes_per_minute": bad})).apply_to(&defaults());
            assert_eq!(
                refused,
                Err(SettingsError::InvalidRateLimit {
                    field: "rate_limit_quotes_per_minute"
                })
            );
        }
        let set = change(json!({"rate_limit_bookings_per_minute": MAX_PER_MINUTE}))
            .apply_to(&defaults())
            .unwrap();
        assert_eq!(
            set.limit_overrides().bookings_per_minute,
            Some(MAX_PER_MINUTE as u32)
        );
    }

    #[test]
    fn contact_emails_are_plain_addresses() {
        let set = change(json!({"contact_email": " billing@merchant.example "}))
            .apply_to(&defaults())
            .unwrap();
        assert_eq!(
            set.contact_email.as_deref(),
            Some("billing@merchant.example")
        );
        let cleared = change(json!({"contact_email": null}))
            .apply_to(&set)
            .unwrap();
        assert_eq!(cleared, defaults());
        let long = format!("{}@merchant.example", "a".repeat(64));
        assert!(contact_email(&long).is_ok());
        for bad in [
            "",
            "billing",
            "billing@",
            "@merchant.example",
            "billing@localhost",
            "billing@[192.0.2.1]",
            "Billing <billing@merchant.example>",
            "two@at@merchant.example",
            &format!("{}@{}.example", "a".repeat(64), "b".repeat(200)),
        ] {
            assert_eq!(
                contact_email(bad),
                Err(SettingsError::InvalidContactEmail),
                "{bad}"
            );
        }
    }
}
