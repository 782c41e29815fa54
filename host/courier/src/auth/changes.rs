//! Credential changes broadcast to every instance with Postgres `NOTIFY`, so a revoked key is
//! evicted from every verified-credential cache at once.

use sqlx::PgConnection;
use sqlx::postgres::PgListener;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::credentials::Authenticator;

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
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANGES_CHANNEL)
        .bind(change.payload())
        .execute(conn)
        .await?;
    Ok(())
}

/// Listens for changes (the listener is in place when this returns) and evicts them from
/// `authenticator`'s cache. When the connection drops, notices may have been lost, so the
/// whole cache is dropped.
pub async fn follow_changes(authenticator: Authenticator) -> Result<JoinHandle<()>, sqlx::Error> {
    let mut listener = PgListener::connect_with(authenticator.pool()).await?;
    listener.listen(CHANGES_CHANNEL).await?;
    Ok(tokio::spawn(async move {
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => match CredentialChange::parse(notification.payload()) {
                    Some(CredentialChange::Key(key)) => authenticator.forget_key(&key),
                    Some(CredentialChange::Merchant(id)) => authenticator.forget_merchant(id),
                    None => authenticator.forget_all(),
                },
                Ok(None) => authenticator.forget_all(),
                Err(e) => {
                    tracing::warn!(error = %e, "credential change listener failed; retrying");
                    authenticator.forget_all();
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    }))
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
