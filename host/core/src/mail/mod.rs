//! Mail to people: invitations, password resets, and notices to a team's owners when its keys
//! or settings change. A mail is written to the outbox in the transaction of the change that
//! owes it ([`Outbox`]), so a crash never loses one; a worker that every instance runs sends
//! due mails through the operator's SMTP relay (`lettre`), claimed with `FOR UPDATE SKIP
//! LOCKED` and a lease; failed attempts wait and double. Each mail's `Message-ID` is its id,
//! fixed when it is written, so a send repeated after a crash between the relay's answer and
//! the note of it is the same message to every server after the relay. With no relay
//! configured nothing is written (the command line prints the links instead).

mod config;

use std::sync::Arc;

use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub use config::MailConfig;

use crate::infra::workers::{Pass, Workers};
use courier_domain::backoff::Backoff;
use courier_store::mail::{self as store, DueMail, NewMail};

/// Mails taken per claim: small, so a shutdown waits for little.
const CLAIM_BATCH: i64 = 10;

/// What a mail is about, as the outbox records it.
#[derive(Clone, Copy, Debug)]
pub enum MailKind {
    Invitation,
    PasswordReset,
    OwnerNotice,
    /// To the people who manage a merchant's webhooks: an endpoint is failing, or suspended.
    WebhookNotice,
}

impl MailKind {
    fn as_str(self) -> &'static str {
        match self {
            MailKind::Invitation => "invitation",
            MailKind::PasswordReset => "password_reset",
            MailKind::OwnerNotice => "owner_notice",
            MailKind::WebhookNotice => "webhook_notice",
        }
    }
}

/// Writes mail owed by a change into the outbox, in the change's own transaction. Cheap to
/// clone.
#[derive(Clone, Debug, Default)]
pub struct Outbox {
    relay: bool,
}

impl Outbox {
    /// An outbox that writes mail when a relay is configured.
    pub fn new(config: &MailConfig) -> Self {
        Self {
            relay: config.smtp_url.is_some(),
        }
    }

    /// Whether mail is sent at all.
    pub fn sends(&self) -> bool {
        self.relay
    }

    /// Owes `to` a mail; true when it was written (a relay is configured).
    pub async fn write(
        &self,
        conn: &mut PgConnection,
        to: &str,
        kind: MailKind,
        (subject, body): (&str, &str),
    ) -> Result<bool, sqlx::Error> {
        if !self.relay {
            return Ok(false);
        }
        store::insert(
            conn,
            &NewMail {
                id: Uuid::new_v4(),
                to_address: to,
                subject,
                body,
                kind: kind.as_str(),
                now: crate::infra::clock::now(),
            },
        )
        .await?;
        Ok(true)
    }

    /// Owes each member of `merchant_id` whose role may `permission` a mail of `kind`.
    pub async fn tell_members_who_may(
        &self,
        conn: &mut PgConnection,
        merchant_id: Uuid,
        permission: courier_domain::team::Permission,
        kind: MailKind,
        (subject, body): (&str, &str),
    ) -> Result<(), sqlx::Error> {
        if !self.relay {
            return Ok(());
        }
        let roles: Vec<&str> = courier_domain::team::Role::ALL
            .iter()
            .filter(|role| role.may(permission))
            .map(|role| role.as_str())
            .collect();
        for to in store::addresses_with_roles(conn, merchant_id, &roles).await? {
            self.write(conn, &to, kind, (subject, body)).await?;
        }
        Ok(())
    }

    /// Owes each owner of `merchant_id` a notice.
    pub async fn tell_owners(
        &self,
        conn: &mut PgConnection,
        merchant_id: Uuid,
        (subject, body): (&str, &str),
    ) -> Result<(), sqlx::Error> {
        if !self.relay {
            return Ok(());
        }
        for owner in store::owner_addresses(conn, merchant_id).await? {
            self.write(conn, &owner, MailKind::OwnerNotice, (subject, body))
                .await?;
        }
        Ok(())
    }
}

/// Sends the outbox's due mail through the relay.
pub struct MailSender {
    pool: PgPool,
    config: MailConfig,
    relay: Option<AsyncSmtpTransport<Tokio1Executor>>,
}

/// Why the relay settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("COURIER_SMTP_URL cannot be used: {0}")]
pub struct RelayError(#[from] lettre::transport::smtp::Error);

impl MailSender {
    pub fn new(pool: PgPool, config: MailConfig) -> Result<Self, RelayError> {
        let relay = match &config.smtp_url {
            Some(url) => Some(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())?
                    .timeout(Some(config.timeout))
                    .build(),
            ),
            None => None,
        };
        Ok(Self {
            pool,
            config,
            relay,
        })
    }

    /// Runs the sender among `workers`; it looks for due mail every `poll`.
    pub fn run(self: &Arc<Self>, workers: &Workers, poll: std::time::Duration) {
        if self.relay.is_none() {
            return;
        }
        let sender = Arc::clone(self);
        workers.run("sending mail", poll, move || {
            let sender = Arc::clone(&sender);
            async move {
                let claimed = sender.send_due().await?;
                Ok::<_, sqlx::Error>(Pass::of(claimed, CLAIM_BATCH))
            }
        });
    }

    /// Claims the due mail and makes one attempt at each; returns how many were claimed.
    pub async fn send_due(&self) -> Result<usize, sqlx::Error> {
        let Some(relay) = &self.relay else {
            return Ok(0);
        };
        let due = store::claim_due(&self.pool, CLAIM_BATCH, self.config.lease).await?;
        for mail in &due {
            self.attempt(relay, mail).await?;
        }
        Ok(due.len())
    }

    async fn attempt(
        &self,
        relay: &AsyncSmtpTransport<Tokio1Executor>,
        mail: &DueMail,
    ) -> Result<(), sqlx::Error> {
        let sent = match self.message(mail) {
            Ok(message) => relay
                .send(message)
                .await
                .map_err(|error| (error.is_permanent(), error.to_string())),
            Err(problem) => Err((true, problem)),
        };
        match sent {
            Ok(_) => {
                store::mark_sent(&self.pool, mail.id, crate::infra::clock::now()).await?;
                tracing::info!(mail = %mail.id, kind = %mail.kind, "mail sent");
            }
            Err((permanent, error)) => {
                let attempts = u32::try_from(mail.attempts).unwrap_or(0) + 1;
                let retry_at = (!permanent && attempts < self.config.max_attempts)
                    .then(|| crate::infra::clock::now() + self.wait_after(attempts));
                tracing::warn!(
                    mail = %mail.id,
                    kind = %mail.kind,
                    attempts,
                    %error,
                    giving_up = retry_at.is_none(),
                    "a mail was not taken by the relay"
                );
                store::mark_attempt_failed(&self.pool, mail.id, retry_at, &error).await?;
            }
        }
        Ok(())
    }

    /// The message of an outbox row; its `Message-ID` is the row's id.
    fn message(&self, mail: &DueMail) -> Result<Message, String> {
        let to = mail
            .to_address
            .parse()
            .map_err(|_| format!("{:?} is not an address", mail.to_address))?;
        Message::builder()
            .message_id(Some(format!("<{}@courier.invalid>", mail.id)))
            .from(self.config.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body.clone())
            .map_err(|error| error.to_string())
    }

    /// The wait after the `attempts`-th failure: the base, doubling each time.
    fn wait_after(&self, attempts: u32) -> chrono::Duration {
        let wait = Backoff::new(self.config.retry_base).wait_after(attempts);
        chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1))
    }
}
