//! The merchants service: what operators do with merchants goes through it. Its methods sit
//! beside what they do: onboarding in the parent module, keys in `keys`, settings in `settings`.

use sqlx::PgPool;

use uuid::Uuid;

use crate::auth::Authenticator;
use crate::mail::Outbox;

/// Merchants as operators manage them. Cheap to clone.
#[derive(Clone)]
pub struct Merchants {
    pub(super) pool: PgPool,
    pub(super) authenticator: Authenticator,
    /// Tells a merchant's owners when its keys or settings change.
    pub(super) mail: Outbox,
}

impl Merchants {
    pub fn new(pool: PgPool, authenticator: Authenticator) -> Self {
        Self {
            pool,
            authenticator,
            mail: Outbox::default(),
        }
    }

    /// These merchants, their owners told by mail through `outbox` when keys or settings
    /// change.
    pub fn with_mail(self, outbox: Outbox) -> Self {
        Self {
            mail: outbox,
            ..self
        }
    }

    /// Owes `merchant_id`'s owners a notice of `what` changed, by `operator`, in the change's
    /// transaction.
    pub(super) async fn tell_owners(
        &self,
        conn: &mut sqlx::PgConnection,
        merchant_id: Uuid,
        what: &str,
        operator: &str,
    ) -> Result<(), sqlx::Error> {
        if !self.mail.sends() {
            return Ok(());
        }
        let name = courier_store::merchants::find_merchant(conn, merchant_id)
            .await?
            .map_or_else(|| merchant_id.to_string(), |m| m.name);
        let at = crate::infra::clock::now().format("%Y-%m-%d %H:%M UTC");
        let subject = format!("{name}: {what}");
        let body = format!(
            "{what}, by {operator}, at {at}.\n\nYou are told as an owner of {name}'s team on \
             Courier. If you did not expect it, look at the console's Keys and settings page \
             and the team's members, and tell Courier's operators.\n"
        );
        self.mail
            .tell_owners(conn, merchant_id, (&subject, &body))
            .await
    }
}
