//! Passkeys (WebAuthn, through `webauthn-rs`): for a person whose second factor is on, a
//! faster way to give it than typing a code. Registering one and using one are each two
//! requests (the options, then the browser's answer); between them the ceremony's state is
//! kept in the database, used once, for [`CEREMONY_LIFETIME`]. The relying party is the
//! service's public address: its host is the RP ID, and only a host name can be one (an
//! address such as `127.0.0.1` cannot), so without one passkeys are not offered.

use std::sync::Arc;

use serde_json::Value;
use sqlx::PgPool;
use url::Url;
use uuid::Uuid;
use webauthn_rs::prelude::{
    Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Webauthn, WebauthnBuilder,
};

use courier_domain::error::{Code, ErrorCode};
use courier_domain::team::Person;
use courier_store::passkeys as store;

/// How long a ceremony waits for the browser's answer.
pub const CEREMONY_LIFETIME: std::time::Duration = std::time::Duration::from_secs(300);
/// The longest name a passkey may be given.
pub const MAX_NAME_CHARS: usize = 60;

const REGISTER: &str = "register";
const AUTHENTICATE: &str = "authenticate";

pub const UNAVAILABLE: Code = Code::new(
    404,
    "passkey.unavailable",
    "Passkeys need the service at a host name (`COURIER_PUBLIC_URL`); an address such as 127.0.0.1 cannot be a relying party.",
);
pub const NEEDS_SECOND_FACTOR: Code = Code::new(
    409,
    "passkey.needs_second_factor",
    "A passkey is added once the person's second factor (the app's codes) is on.",
);
pub const INVALID_NAME: Code = Code::new(
    422,
    "passkey.invalid_name",
    "A passkey's `name` is 1 to 60 characters.",
);
pub const EXPIRED: Code = Code::new(
    410,
    "passkey.expired",
    "The passkey ceremony expired (5 minutes), was used already, or is another person's.",
);
pub const REJECTED: Code = Code::new(
    401,
    "passkey.rejected",
    "The browser's answer does not verify: another origin, a wrong signature, a credential the person has not added, or malformed.",
);
pub const ALREADY_ADDED: Code = Code::new(
    409,
    "passkey.already_added",
    "That passkey is added already.",
);
pub const NO_ANSWER: Code = Code::new(
    400,
    "passkey.no_answer",
    "The request did not carry `ceremony` (an id) and `credential` (the browser's answer as JSON).",
);
pub const NOT_WAITING: Code = Code::new(
    401,
    "passkey.not_waiting",
    "No sign-in on this browser waits for its second factor.",
);
pub const NO_PASSKEY: Code = Code::new(
    404,
    "passkey.none",
    "The person signing in has no passkey; the app's code is asked instead.",
);

/// Why a passkey could not be added or used.
#[derive(Debug, thiserror::Error, ErrorCode)]
pub enum PasskeyRefusal {
    #[error("passkeys need the service to be reached at a host name")]
    #[code(UNAVAILABLE)]
    Unavailable,
    #[error("turn the second factor on first")]
    #[code(NEEDS_SECOND_FACTOR)]
    NeedsSecondFactor,
    #[error("a passkey's name is 1 to 60 characters")]
    #[code(INVALID_NAME)]
    InvalidName,
    #[error("the passkey request has expired; try again")]
    #[code(EXPIRED)]
    Expired,
    #[error("the passkey was not accepted")]
    #[code(REJECTED)]
    Rejected,
    #[error("that passkey is added already")]
    #[code(ALREADY_ADDED)]
    AlreadyAdded,
    #[error("the request did not carry a passkey's answer")]
    #[code(NO_ANSWER)]
    NoAnswer,
    #[error("no sign-in waits for a second factor")]
    #[code(NOT_WAITING)]
    NotWaiting,
    #[error("you have no passkey; enter a code")]
    #[code(NO_PASSKEY)]
    NoPasskey,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// A person's passkey, as their account page lists it.
#[derive(Clone, Debug)]
pub struct PasskeyEntry {
    pub id: Uuid,
    pub name: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A ceremony begun: its id (sent back with the answer) and the options for the browser's
/// `navigator.credentials` call, as JSON.
#[derive(Clone, Debug)]
pub struct Ceremony {
    pub id: Uuid,
    pub options: Value,
}

/// People's passkeys. Cheap to clone.
#[derive(Clone)]
pub struct Passkeys {
    pool: PgPool,
    relying_party: Option<Arc<Webauthn>>,
}

impl Passkeys {
    /// Passkeys of the relying party at `public_url` (none when its host is not a name).
    pub fn new(pool: PgPool, public_url: &str) -> Self {
        let relying_party = Url::parse(public_url).ok().and_then(|origin| {
            let host = origin.domain()?.to_owned();
            WebauthnBuilder::new(&host, &origin)
                .ok()?
                .rp_name("Courier")
                .build()
                .ok()
        });
        Self {
            pool,
            relying_party: relying_party.map(Arc::new),
        }
    }

    /// Whether passkeys can be used at all here.
    pub fn available(&self) -> bool {
        self.relying_party.is_some()
    }

    fn relying_party(&self) -> Result<&Webauthn, PasskeyRefusal> {
        self.relying_party
            .as_deref()
            .ok_or(PasskeyRefusal::Unavailable)
    }

    /// The person's passkeys, oldest first.
    pub async fn of(&self, person_id: Uuid) -> Result<Vec<PasskeyEntry>, sqlx::Error> {
        Ok(store::of_person(&self.pool, person_id)
            .await?
            .into_iter()
            .map(|row| PasskeyEntry {
                id: row.id,
                name: row.name,
                created_at: row.created_at,
                last_used_at: row.last_used_at,
            })
            .collect())
    }

    async fn kept(&self, person_id: Uuid) -> Result<Vec<(Uuid, Passkey)>, sqlx::Error> {
        Ok(store::of_person(&self.pool, person_id)
            .await?
            .into_iter()
            .filter_map(|row| Some((row.id, serde_json::from_value(row.passkey).ok()?)))
            .collect())
    }

    async fn begin(
        &self,
        person_id: Uuid,
        purpose: &str,
        state: Value,
        options: Value,
    ) -> Result<Ceremony, PasskeyRefusal> {
        let id = Uuid::new_v4();
        let expires_at = crate::infra::clock::now()
            + chrono::Duration::from_std(CEREMONY_LIFETIME).unwrap_or_default();
        store::begin_ceremony(&self.pool, id, person_id, purpose, &state, expires_at).await?;
        Ok(Ceremony { id, options })
    }

    /// Begins adding a passkey for `person`, whose second factor is on.
    pub async fn start_registration(&self, person: &Person) -> Result<Ceremony, PasskeyRefusal> {
        let relying_party = self.relying_party()?;
        if !courier_store::people::has_second_factor(&self.pool, person.id).await? {
            return Err(PasskeyRefusal::NeedsSecondFactor);
        }
        let existing = self.kept(person.id).await?;
        let exclude = existing.iter().map(|(_, p)| p.cred_id().clone()).collect();
        let (options, state) = relying_party
            .start_passkey_registration(person.id, &person.email, &person.name, Some(exclude))
            .map_err(|_| PasskeyRefusal::Unavailable)?;
        self.begin(
            person.id,
            REGISTER,
            serde_json::to_value(state).expect("the state serialises"),
            serde_json::to_value(options).expect("the options serialise"),
        )
        .await
    }

    /// Finishes adding a passkey named `name` with the browser's answer to `ceremony`.
    pub async fn finish_registration(
        &self,
        person_id: Uuid,
        ceremony: Uuid,
        answer: &Value,
        name: &str,
    ) -> Result<PasskeyEntry, PasskeyRefusal> {
        let relying_party = self.relying_party()?;
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(PasskeyRefusal::InvalidName);
        }
        let now = crate::infra::clock::now();
        let state = store::take_ceremony(&self.pool, ceremony, person_id, REGISTER, now)
            .await?
            .ok_or(PasskeyRefusal::Expired)?;
        let state: PasskeyRegistration =
            serde_json::from_value(state).map_err(|_| PasskeyRefusal::Expired)?;
        let answer: RegisterPublicKeyCredential =
            serde_json::from_value(answer.clone()).map_err(|_| PasskeyRefusal::Rejected)?;
        // The library refuses a credential the options excluded (the person's own) as an
        // altered algorithm: said plainly here first.
        let own = self.kept(person_id).await?;
        if own
            .iter()
            .any(|(_, p)| p.cred_id().as_slice() == answer.raw_id.as_slice())
        {
            return Err(PasskeyRefusal::AlreadyAdded);
        }
        let passkey = relying_party
            .finish_passkey_registration(&answer, &state)
            .map_err(|error| {
                tracing::info!(%error, "a passkey's registration did not verify");
                PasskeyRefusal::Rejected
            })?;
        let id = Uuid::new_v4();
        let kept = store::insert(
            &self.pool,
            &store::NewPasskey {
                id,
                person_id,
                credential_id: passkey.cred_id().as_ref(),
                name,
                passkey: &serde_json::to_value(&passkey).expect("a passkey serialises"),
                now,
            },
        )
        .await?;
        if !kept {
            return Err(PasskeyRefusal::AlreadyAdded);
        }
        Ok(PasskeyEntry {
            id,
            name: name.to_owned(),
            created_at: now,
            last_used_at: None,
        })
    }

    /// Begins a sign-in's second factor with one of `person_id`'s passkeys; None when they
    /// have none.
    pub async fn start_authentication(
        &self,
        person_id: Uuid,
    ) -> Result<Option<Ceremony>, PasskeyRefusal> {
        let relying_party = self.relying_party()?;
        let kept: Vec<Passkey> = self
            .kept(person_id)
            .await?
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        if kept.is_empty() {
            return Ok(None);
        }
        let (options, state) = relying_party
            .start_passkey_authentication(&kept)
            .map_err(|_| PasskeyRefusal::Unavailable)?;
        self.begin(
            person_id,
            AUTHENTICATE,
            serde_json::to_value(state).expect("the state serialises"),
            serde_json::to_value(options).expect("the options serialise"),
        )
        .await
        .map(Some)
    }

    /// Whether the browser's answer to `ceremony` is `person_id`'s passkey: the ceremony is
    /// used either way; the passkey's counter is kept.
    pub async fn finish_authentication(
        &self,
        person_id: Uuid,
        ceremony: Uuid,
        answer: &Value,
    ) -> Result<(), PasskeyRefusal> {
        let relying_party = self.relying_party()?;
        let now = crate::infra::clock::now();
        let state = store::take_ceremony(&self.pool, ceremony, person_id, AUTHENTICATE, now)
            .await?
            .ok_or(PasskeyRefusal::Expired)?;
        let state: PasskeyAuthentication =
            serde_json::from_value(state).map_err(|_| PasskeyRefusal::Expired)?;
        let answer: PublicKeyCredential =
            serde_json::from_value(answer.clone()).map_err(|_| PasskeyRefusal::Rejected)?;
        let result = relying_party
            .finish_passkey_authentication(&answer, &state)
            .map_err(|error| {
                tracing::info!(%error, "a passkey's sign-in did not verify");
                PasskeyRefusal::Rejected
            })?;
        for (id, mut passkey) in self.kept(person_id).await? {
            if passkey.update_credential(&result).is_some() {
                let value = serde_json::to_value(&passkey).expect("a passkey serialises");
                store::used(&self.pool, id, &value, now).await?;
            }
        }
        Ok(())
    }

    /// Removes one of the person's passkeys; false when they have no such one.
    pub async fn remove(&self, person_id: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
        store::remove(&self.pool, person_id, id).await
    }

    /// Removes all the person's passkeys (their second factor was turned off).
    pub async fn remove_all(&self, person_id: Uuid) -> Result<(), sqlx::Error> {
        store::remove_all(&self.pool, person_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passkeys(url: &str) -> Passkeys {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@localhost/none")
            .unwrap();
        Passkeys::new(pool, url)
    }

    #[tokio::test]
    async fn a_host_name_is_needed_to_be_the_relying_party() {
        assert!(passkeys("https://courier.example").available());
        assert!(passkeys("http://localhost:8080").available());
        assert!(!passkeys("http://127.0.0.1:8080").available());
        assert!(!passkeys("not a url").available());
    }
}
