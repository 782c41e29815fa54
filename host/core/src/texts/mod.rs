//! Texts to merchants' customers: the tracking link, sent to the drop-off contact when the
//! courier collects, if the job asks for it (`notify_customer`).
//!
//! A text is recorded in the transaction of the collection itself (an outbox row, one per job
//! and kind), then sent by a worker that every instance runs: due rows are claimed with
//! `FOR UPDATE SKIP LOCKED` and a lease, failed attempts wait and double, and every attempt
//! at one text carries the same idempotency key, so neither a retry nor a restart texts a
//! customer twice. Test-environment jobs are recorded as `simulated` and never sent; live
//! texts go only to numbers of the market's `text_countries`.

mod config;
mod gateway;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub use config::TextsConfig;
pub use gateway::{GatewayConfig, HttpSmsGateway, OutgoingText, SendFailure, SmsProvider};

use crate::infra::workers::{Pass, Workers};
use courier_domain::Environment;
use courier_domain::backoff::Backoff;
use courier_domain::text::message::{self, Disposition};
use courier_store::customer_texts::{self as store, DueText, NewText};

const TRACKING_LINK: &str = "tracking_link";
/// Texts taken per claim: small, so a shutdown waits for little.
const CLAIM_BATCH: i64 = 10;

/// The job facts a tracking-link text needs.
pub struct TrackingText<'a> {
    pub job_id: Uuid,
    pub environment: Environment,
    pub reference: &'a str,
    pub tracking_url: &'a str,
    /// The drop-off contact's number, E.164 (bookings store it normalised).
    pub to_phone: &'a str,
    /// The merchant's SMS sender name, if it set one.
    pub sender: Option<&'a str>,
    /// The market's `text_countries`.
    pub text_countries: &'a [String],
}

pub struct CustomerTexts {
    pool: PgPool,
    config: TextsConfig,
    provider: Option<Arc<dyn SmsProvider>>,
}

impl CustomerTexts {
    /// Texts through the HTTP gateway of `config`, if one is configured.
    pub fn new(pool: PgPool, config: TextsConfig) -> Result<Self, reqwest::Error> {
        let provider = match config.gateway() {
            Some(gateway) => Some(Arc::new(HttpSmsGateway::new(gateway)?) as Arc<dyn SmsProvider>),
            None => None,
        };
        Ok(Self {
            pool,
            config,
            provider,
        })
    }

    /// Records the tracking-link text of a job being collected, on `conn`: the transaction
    /// of the collection. A job has at most one; asking again changes nothing.
    pub async fn record_tracking_link(
        &self,
        conn: &mut PgConnection,
        text: &TrackingText<'_>,
        now: DateTime<Utc>,
    ) -> Result<Disposition, sqlx::Error> {
        let disposition = message::decide(
            text.environment,
            text.to_phone,
            text.text_countries,
            self.provider.is_some(),
        );
        let sender = text.sender.unwrap_or(&self.config.default_sender);
        let body = self
            .config
            .template
            .render(text.reference, text.tracking_url, sender);
        let (status, skip_reason) = match disposition {
            Disposition::Send => ("queued", None),
            Disposition::Simulate => ("simulated", None),
            Disposition::Skip(reason) => ("skipped", Some(reason.as_str())),
        };
        let recorded = store::insert(
            conn,
            &NewText {
                id: Uuid::new_v4(),
                job_id: text.job_id,
                kind: TRACKING_LINK,
                environment: text.environment,
                to_phone: text.to_phone,
                sender,
                body: &body,
                status,
                skip_reason,
                created_at: now,
            },
        )
        .await?;
        // The sandbox shows when the text would have gone, so integrations can be tested.
        if recorded && disposition == Disposition::Simulate {
            store::mark_job_notified(conn, text.job_id, now).await?;
        }
        if let Disposition::Skip(reason) = disposition {
            tracing::info!(job_id = %text.job_id, %reason, "customer text not sent");
        }
        Ok(disposition)
    }

    /// Runs the sender among `workers`; it looks for due texts every `poll`.
    pub fn run_sender(self: &Arc<Self>, workers: &Workers, poll: Duration) {
        let texts = Arc::clone(self);
        workers.run("sending customer texts", poll, move || {
            let texts = Arc::clone(&texts);
            async move {
                let claimed = texts.send_due().await?;
                Ok::<_, sqlx::Error>(Pass::of(claimed, CLAIM_BATCH))
            }
        });
    }

    /// Claims the due texts and makes one attempt at each; returns how many were claimed.
    pub async fn send_due(&self) -> Result<usize, sqlx::Error> {
        let Some(provider) = &self.provider else {
            return Ok(0);
        };
        let due = store::claim_due(&self.pool, CLAIM_BATCH, self.config.lease).await?;
        for text in &due {
            self.attempt(provider.as_ref(), text).await?;
        }
        Ok(due.len())
    }

    async fn attempt(&self, provider: &dyn SmsProvider, text: &DueText) -> Result<(), sqlx::Error> {
        let outgoing = OutgoingText {
            to: text.to_phone.clone(),
            from: text.sender.clone(),
            body: text.body.clone(),
            reference: text.id.to_string(),
        };
        match provider.send(&outgoing).await {
            Ok(message_id) => {
                store::mark_sent(
                    &self.pool,
                    text,
                    message_id.as_deref(),
                    crate::infra::clock::now(),
                )
                .await?;
                tracing::info!(job_id = %text.job_id, "customer texted the tracking link");
            }
            Err(failure) => {
                let attempts = u32::try_from(text.attempts).unwrap_or(0) + 1;
                let retry_at = match &failure {
                    SendFailure::Retryable(_) if attempts < self.config.max_attempts => {
                        Some(crate::infra::clock::now() + self.wait_after(attempts))
                    }
                    _ => None,
                };
                tracing::warn!(
                    job_id = %text.job_id,
                    attempts,
                    error = %failure,
                    giving_up = retry_at.is_none(),
                    "a customer text was not taken"
                );
                store::mark_attempt_failed(&self.pool, text.id, retry_at, &failure.to_string())
                    .await?;
            }
        }
        Ok(())
    }

    /// The wait after the `attempts`-th failure: the base, doubling each time.
    fn wait_after(&self, attempts: u32) -> chrono::Duration {
        let wait = Backoff::new(self.config.retry_base).wait_after(attempts);
        chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1))
    }
}
