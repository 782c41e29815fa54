//! Credential changes broadcast to every instance with Postgres `NOTIFY`, so a revoked key is
//! evicted from every verified-credential cache at once.

use sqlx::PgConnection;
use tokio::sync::mpsc::UnboundedReceiver;
use uuid::Uuid;

use super::credentials::Authenticator;
use crate::infra::db::listen::Notice;
use crate::infra::workers::Workers;

pub const CHANGES_CHANNEL: &str = "courier_credentials_changed";

/// What changed: one key (revoked), or every key of a merchant (its budgets changed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialChange {
    Key(String),
    Merchant(Uuid),
}

impl CredentialChange {
    fn payload(&self) -> String {
        match self {
            CredentialChange::Key(key) => format!("key:{key}"),
            CredentialChange::Merchant(id) => format!("merchant:{id}"),
        }
    }

    fn parse(payload: &str) -> Option<Self> {
        match payload.split_once(':')? {
            ("key", key) => Some(CredentialChange::Key(key.to_owned())),
            ("merchant", id) => Uuid::parse_str(id).ok().map(CredentialChange::Merchant),
            _ => None,
        }
    }
}

/// Announces `change` from the transaction that makes it: delivered when it commits.
pub async fn announce(
    conn: &mut PgConnection,
    change: &CredentialChange,
) -> Result<(), sqlx::Error> {
    courier_store::notify(conn, CHANGES_CHANNEL, &change.payload()).await
}

/// Evicts the changes `notices` hears from `authenticator`'s cache, until the workers stop.
/// When notices may have been missed, the whole cache is dropped.
pub fn follow_changes(
    authenticator: Authenticator,
    mut notices: UnboundedReceiver<Notice>,
    workers: &Workers,
) {
    workers.spawn(move |_| async move {
        while let Some(notice) = notices.recv().await {
            match notice {
                Notice::Payload(payload) => match CredentialChange::parse(&payload) {
                    Some(CredentialChange::Key(key)) => authenticator.forget_key(&key),
                    Some(CredentialChange::Merchant(id)) => authenticator.forget_merchant(id),
                    None => authenticator.forget_all(),
                },
                Notice::Missed => authenticator.forget_all(),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let id = Uuid::new_v4();
        for change in [
            CredentialChange::Key("ck_test_abc".into()),
            CredentialChange::Merchant(id),
        ] {
            assert_eq!(CredentialChange::parse(&change.payload()), Some(change));
        }
        assert_eq!(CredentialChange::parse("merchant:nope"), None);
        assert_eq!(CredentialChange::parse("other"), None);
    }
}
