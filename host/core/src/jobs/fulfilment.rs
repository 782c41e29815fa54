//! Applying job moves: each one updates the job (only if it is still in the state it was
//! read in), withdraws open offers when a search ends, records its event, and records what
//! the ending owes the charge, in one transaction. The charge is settled right after commit;
//! a settlement cut short by a crash is found by the dispatch worker and done then
//! ([`Fulfilment::run_due_settlements`]). Capture and void are idempotent, so doing one
//! twice is harmless.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use thiserror::Error;
use uuid::Uuid;

use crate::audit::{self, AuditAction, AuditRecord};
use crate::auth::Merchant;
use crate::events::{EventTransaction, FanOutWakeup};
use crate::infra::clock::now;
use crate::markets::Markets;
use crate::payments::{PaymentError, Payments};
use crate::texts::{CustomerTexts, TrackingText};
use courier_domain::JobStatus;
use courier_domain::dispatch::{CourierStatus, OfferStatus};
use courier_domain::event::{EventDetails, EventName, JobFacts, NewEvent};
use courier_domain::job::proof::{Proof, ProofError};
use courier_domain::job::transitions::{self, Actor, InvalidTransition, Settlement};
use courier_store::courier_actions;
use courier_store::couriers as couriers_store;
use courier_store::dispatch::{self as offers, OfferRow};
use courier_store::fulfilment::{self as store, ProofFileRow};
use courier_store::jobs::JobRow;
use courier_store::merchants as merchants_store;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const NOT_CANCELLABLE: Code = Code::new(
    409,
    "job.not_cancellable",
    "Merchant cancellation after collection, or of an ended job.",
);
pub const REASON_REQUIRED: Code = Code::new(
    422,
    "job.reason_required",
    "An operator's status change or a return without a reason (or one over 500 characters; also a cancellation reason over 500).",
);
pub const COURIER_NOT_AVAILABLE: Code = Code::new(
    422,
    "courier.not_available",
    "Reassignment to a suspended courier or one of another market.",
);
pub const OFFER_NOT_FOUND: Code =
    Code::new(404, "offer.not_found", "No such offer of this courier.");
pub const OFFER_EXPIRED: Code = Code::new(409, "offer.expired", "The offer ran out.");
pub const OFFER_NOT_OPEN: Code = Code::new(
    409,
    "offer.not_open",
    "The offer was already answered or withdrawn, or the job moved on.",
);

/// `reason` of `job.failed` when nobody took the job in time.
pub const NO_COURIER_REASON: &str = "no_courier_before_deadline";
/// `reason` (and `cancellation_reason`) of a merchant's cancellation that gives none.
pub const MERCHANT_CANCELLED_REASON: &str = "cancelled_by_merchant";
const MAX_REASON_CHARS: usize = 500;
/// How long after an ending its settlement is left to the request that made it before the
/// worker takes it up (the request settles at once; this only covers a crash).
const SETTLEMENT_GRACE: chrono::Duration = chrono::Duration::seconds(30);
/// How long a claimed settlement is left to the worker that claimed it.
const SETTLEMENT_LEASE: std::time::Duration = std::time::Duration::from_secs(60);
const SETTLEMENT_BATCH: i64 = 20;

#[derive(Debug, Error, ErrorCode)]
pub enum FulfilmentError {
    #[error("no such job")]
    #[code(courier_domain::job::JOB_NOT_FOUND)]
    JobNotFound,
    #[error(transparent)]
    #[code(courier_domain::job::transitions::INVALID_TRANSITION)]
    InvalidTransition(#[from] InvalidTransition),
    #[error("a {} job can no longer be cancelled: it has been collected or has ended", .0.as_str())]
    #[code(NOT_CANCELLABLE)]
    NotCancellable(JobStatus),
    #[error("no such offer")]
    #[code(OFFER_NOT_FOUND)]
    OfferNotFound,
    #[error("this offer has expired")]
    #[code(OFFER_EXPIRED)]
    OfferExpired,
    #[error("this offer is no longer open (already answered, withdrawn, or the job moved on)")]
    #[code(OFFER_NOT_OPEN)]
    OfferNotOpen,
    #[error("no such courier")]
    #[code(crate::couriers::COURIER_NOT_FOUND)]
    CourierNotFound,
    #[error("{0}")]
    #[code(COURIER_NOT_AVAILABLE)]
    CourierNotAvailable(&'static str),
    #[error("`reason` is required (1 to {MAX_REASON_CHARS} characters)")]
    #[code(REASON_REQUIRED)]
    ReasonRequired,
    #[error(transparent)]
    #[code(via)]
    Proof(#[from] ProofError),
    #[error(transparent)]
    #[code(via)]
    Key(#[from] crate::idempotency::KeyError),
    #[error("this Idempotency-Key was used for another move (another action, offer or job)")]
    #[code(crate::idempotency::KEY_REUSED)]
    KeyReused,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// One move of a job.
struct Move<'a> {
    actor: Actor,
    to: JobStatus,
    courier: Option<Uuid>,
    reason: Option<&'a str>,
    proof: Option<&'a Proof>,
}

/// A courier's move of its own job, as its key records it.
struct CourierStep<'a> {
    /// The action its key is recorded for.
    action: &'static str,
    to: JobStatus,
    reason: Option<&'a str>,
}

/// A move the sandbox simulator makes (see [`Fulfilment::simulated_move`]).
#[derive(Clone, Copy, Debug)]
pub enum SimulatedMove<'a> {
    /// A simulated courier takes the searching job.
    Assign(Uuid),
    /// Another simulated courier takes over.
    Reassign(Uuid),
    Collect,
    Deliver(&'a Proof),
    Return(&'a str),
    /// Operations set the job to `cancelled` (`job.status_changed`).
    CancelByOperations(&'a str),
    /// No courier before the deadline.
    Fail,
}

/// What texting the customer at collection needs.
#[derive(Clone)]
pub struct CollectionTexts {
    pub texts: Arc<CustomerTexts>,
    pub markets: Arc<Markets>,
    /// `COURIER_PUBLIC_URL`, for the tracking link.
    pub public_url: String,
}

/// The job service for everything after booking. Cheap to clone.
#[derive(Clone)]
pub struct Fulfilment {
    pool: PgPool,
    payments: Arc<Payments>,
    texts: CollectionTexts,
    wakeup: FanOutWakeup,
}

impl Fulfilment {
    pub fn new(
        pool: PgPool,
        payments: Arc<Payments>,
        texts: CollectionTexts,
        wakeup: FanOutWakeup,
    ) -> Self {
        Self {
            pool,
            payments,
            texts,
            wakeup,
        }
    }

    /// Records the tracking-link text of a job just collected (`in_transit`), in the
    /// collection's own transaction, when the job asks for it.
    async fn text_on_collection(
        &self,
        conn: &mut PgConnection,
        job: &JobRow,
    ) -> Result<(), FulfilmentError> {
        if !job.notify_customer || job.status != JobStatus::InTransit {
            return Ok(());
        }
        let Some(to_phone) = job.dropoff["contact_phone"].as_str() else {
            return Ok(());
        };
        let sender = merchants_store::settings(conn, job.merchant_id, false)
            .await?
            .and_then(|settings| settings.sms_sender_name);
        let text_countries = self
            .texts
            .markets
            .get(&job.market_id)
            .map(|market| market.definition.text_countries.clone())
            .unwrap_or_default();
        let tracking_url =
            crate::jobs::views::tracking_url(&self.texts.public_url, &job.tracking_token);
        self.texts
            .texts
            .record_tracking_link(
                conn,
                &TrackingText {
                    job_id: job.id,
                    environment: job.environment,
                    reference: &job.reference,
                    tracking_url: &tracking_url,
                    to_phone,
                    sender: sender.as_deref(),
                    text_countries: &text_countries,
                },
                now(),
            )
            .await?;
        Ok(())
    }

    /// `POST /v1/jobs/{id}/cancel`: until collection. Cancelling a cancelled job answers it
    /// as it is (its first reason kept).
    pub async fn cancel_by_merchant(
        &self,
        merchant: &Merchant,
        job_id: Uuid,
        reason: Option<&str>,
    ) -> Result<JobRow, FulfilmentError> {
        let reason = optional_reason(reason)?.unwrap_or(MERCHANT_CANCELLED_REASON);
        let mut tx = self.begin_move().await?;
        let job = store::lock_job(&mut tx, job_id)
            .await?
            .filter(|j| {
                j.merchant_id == merchant.merchant_id && j.environment == merchant.environment
            })
            .ok_or(FulfilmentError::JobNotFound)?;
        let from = job.status;
        if from == JobStatus::Cancelled {
            return Ok(job);
        }
        if transitions::check(Actor::Merchant, from, JobStatus::Cancelled).is_err() {
            return Err(FulfilmentError::NotCancellable(from));
        }
        let moved = apply(
            &mut tx,
            &job,
            &Move {
                actor: Actor::Merchant,
                to: JobStatus::Cancelled,
                courier: None,
                reason: Some(reason),
                proof: None,
            },
        )
        .await?;
        tx.commit().await?;
        self.settle_ended(&moved).await;
        Ok(moved)
    }

    /// A courier accepts its open offer (a route of one job or several): each of its jobs
    /// still searching is assigned to it; returns them in the route's order. Of two accepts
    /// racing for a job, only the first to lock it assigns it.
    pub async fn accept_offer(
        &self,
        courier_id: Uuid,
        offer_id: Uuid,
        key: Option<&str>,
    ) -> Result<Vec<JobRow>, FulfilmentError> {
        let mut tx = self.begin_move().await?;
        if made_before(&mut tx, courier_id, key, "accept", offer_id).await? {
            return accepted_before(&mut tx, courier_id, offer_id).await;
        }
        // Jobs first (by id, so two moves never wait on each other in a circle), then the
        // offers: the order every job move takes its locks in.
        let mut job_ids = offers::route_jobs(&mut tx, offer_id, courier_id).await?;
        if job_ids.is_empty() {
            return Err(FulfilmentError::OfferNotFound);
        }
        job_ids.sort_unstable();
        let mut jobs = Vec::with_capacity(job_ids.len());
        for job_id in job_ids {
            if let Some(job) = store::lock_job(&mut tx, job_id).await? {
                jobs.push(job);
            }
        }
        let route = offers::lock_route(&mut tx, offer_id, courier_id).await?;
        let first = route.first().ok_or(FulfilmentError::OfferNotFound)?;
        let now = now();
        // A route's offers are made, and run out, together.
        let open = route.iter().any(|o| o.status == OfferStatus::Open);
        if open && first.expires_at <= now {
            offers::answer_route(&mut tx, offer_id, OfferStatus::Expired, now).await?;
            tx.commit().await?;
            return Err(FulfilmentError::OfferExpired);
        }
        if !open && route.iter().any(|o| o.status == OfferStatus::Expired) {
            return Err(FulfilmentError::OfferExpired);
        }
        let mut assigned = Vec::with_capacity(route.len());
        for offer in route_order(&route) {
            let Some(job) = jobs.iter().find(|j| j.id == offer.job_id) else {
                continue;
            };
            // A job cancelled while offered has its offer withdrawn: the rest still go.
            if offer.status != OfferStatus::Open || job.status != JobStatus::Searching {
                continue;
            }
            let moved = apply(
                &mut tx,
                job,
                &Move {
                    actor: Actor::Courier,
                    to: JobStatus::Assigned,
                    courier: Some(courier_id),
                    reason: None,
                    proof: None,
                },
            )
            .await?;
            offers::answer_offer(&mut tx, offer.id, OfferStatus::Accepted, now).await?;
            assigned.push(moved);
        }
        if assigned.is_empty() {
            return Err(FulfilmentError::OfferNotOpen);
        }
        tx.commit().await?;
        for job in &assigned {
            self.settle_ended(job).await;
        }
        Ok(assigned)
    }

    /// A courier declines its open offer, every job of it; they go to other couriers.
    pub async fn decline_offer(
        &self,
        courier_id: Uuid,
        offer_id: Uuid,
        key: Option<&str>,
    ) -> Result<(), FulfilmentError> {
        let mut tx = self.begin_move().await?;
        if made_before(&mut tx, courier_id, key, "decline", offer_id).await? {
            return Ok(());
        }
        let route = offers::lock_route(&mut tx, offer_id, courier_id).await?;
        let first = route.first().ok_or(FulfilmentError::OfferNotFound)?;
        let now = now();
        let open = route.iter().any(|o| o.status == OfferStatus::Open);
        let expired = route.iter().any(|o| o.status == OfferStatus::Expired);
        if open && first.expires_at > now {
            offers::answer_route(&mut tx, offer_id, OfferStatus::Declined, now).await?;
            tx.commit().await?;
            Ok(())
        } else if open || expired {
            Err(FulfilmentError::OfferExpired)
        } else {
            Err(FulfilmentError::OfferNotOpen)
        }
    }

    /// The courier collected the job: `in_transit`, `job.picked_up`.
    pub async fn collected(
        &self,
        courier_id: Uuid,
        job_id: Uuid,
        key: Option<&str>,
    ) -> Result<JobRow, FulfilmentError> {
        let step = CourierStep {
            action: "collected",
            to: JobStatus::InTransit,
            reason: None,
        };
        self.courier_move(courier_id, job_id, step, key).await
    }

    /// The courier brought the job back: `returned`, `job.returned` with the reason, capture.
    pub async fn returned(
        &self,
        courier_id: Uuid,
        job_id: Uuid,
        reason: Option<&str>,
        key: Option<&str>,
    ) -> Result<JobRow, FulfilmentError> {
        let step = CourierStep {
            action: "returned",
            to: JobStatus::Returned,
            reason: Some(required_reason(reason)?),
        };
        self.courier_move(courier_id, job_id, step, key).await
    }

    /// The courier handed the job over with `proof`, which `check` builds from the job's proof
    /// requirement: `delivered`, `job.delivered` with the proof, capture.
    pub async fn delivered(
        &self,
        courier_id: Uuid,
        job_id: Uuid,
        key: Option<&str>,
        check: impl FnOnce(&JobRow) -> Result<Proof, ProofError>,
    ) -> Result<JobRow, FulfilmentError> {
        let mut tx = self.begin_move().await?;
        let repeat = made_before(&mut tx, courier_id, key, "delivered", job_id).await?;
        let job = courier_job(&mut tx, courier_id, job_id).await?;
        if repeat {
            return Ok(job);
        }
        transitions::check(Actor::Courier, job.status, JobStatus::Delivered)?;
        let proof = check(&job)?;
        keep_proof_files(&mut tx, job_id, &proof).await?;
        let moved = apply(
            &mut tx,
            &job,
            &Move {
                actor: Actor::Courier,
                to: JobStatus::Delivered,
                courier: None,
                reason: None,
                proof: Some(&proof),
            },
        )
        .await?;
        tx.commit().await?;
        self.settle_ended(&moved).await;
        Ok(moved)
    }

    async fn courier_move(
        &self,
        courier_id: Uuid,
        job_id: Uuid,
        step: CourierStep<'_>,
        key: Option<&str>,
    ) -> Result<JobRow, FulfilmentError> {
        let mut tx = self.begin_move().await?;
        let repeat = made_before(&mut tx, courier_id, key, step.action, job_id).await?;
        let job = courier_job(&mut tx, courier_id, job_id).await?;
        if repeat {
            return Ok(job);
        }
        let moved = apply(
            &mut tx,
            &job,
            &Move {
                actor: Actor::Courier,
                to: step.to,
                courier: None,
                reason: step.reason,
                proof: None,
            },
        )
        .await?;
        self.text_on_collection(&mut tx, &moved).await?;
        tx.commit().await?;
        self.settle_ended(&moved).await;
        Ok(moved)
    }

    /// `POST /admin/v1/jobs/{id}/status`: an operator sets the status by hand, with a reason.
    /// Raises `job.status_changed`; the money follows the new status as for any other move.
    pub async fn set_status_by_hand(
        &self,
        operator: &str,
        job_id: Uuid,
        to: JobStatus,
        reason: Option<&str>,
    ) -> Result<JobRow, FulfilmentError> {
        let reason = required_reason(reason)?;
        let mut tx = self.begin_move().await?;
        let job = store::lock_job(&mut tx, job_id)
            .await?
            .ok_or(FulfilmentError::JobNotFound)?;
        let moved = apply(
            &mut tx,
            &job,
            &Move {
                actor: Actor::Operator,
                to,
                courier: None,
                reason: Some(reason),
                proof: None,
            },
        )
        .await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::JobStatusSet,
                target_type: "job",
                target_id: job_id.to_string(),
                merchant_id: Some(job.merchant_id),
                before: Some(json!({"status": job.status})),
                after: Some(json!({"status": moved.status, "reason": reason})),
                occurred_at: now(),
            },
        )
        .await?;
        self.text_on_collection(&mut tx, &moved).await?;
        tx.commit().await?;
        self.settle_ended(&moved).await;
        Ok(moved)
    }

    /// `POST /admin/v1/jobs/{id}/reassign`: puts `courier_id` on a searching, assigned or
    /// in-transit job (a searching job becomes `assigned`); `job.courier_assigned` again.
    pub async fn reassign(
        &self,
        operator: &str,
        job_id: Uuid,
        courier_id: Uuid,
        reason: Option<&str>,
    ) -> Result<JobRow, FulfilmentError> {
        let reason = optional_reason(reason)?;
        let mut tx = self.begin_move().await?;
        let job = store::lock_job(&mut tx, job_id)
            .await?
            .ok_or(FulfilmentError::JobNotFound)?;
        let from = job.status;
        if !transitions::can_reassign(from) {
            return Err(InvalidTransition {
                from,
                to: JobStatus::Assigned,
            }
            .into());
        }
        // The courier already on it (a form sent twice, a request repeated): nothing moves,
        // and the merchant is not told again.
        if job.courier_id == Some(courier_id) {
            return Ok(job);
        }
        let courier = couriers_store::lock(&mut tx, courier_id)
            .await?
            .ok_or(FulfilmentError::CourierNotFound)?;
        if courier.status != CourierStatus::Active {
            return Err(FulfilmentError::CourierNotAvailable(
                "the courier is suspended",
            ));
        }
        if courier.market_id != job.market_id {
            return Err(FulfilmentError::CourierNotAvailable(
                "the courier works in another market",
            ));
        }
        let now = now();
        let moved = put_on_courier(&mut tx, &job, courier_id, now).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::JobCourierReassigned,
                target_type: "job",
                target_id: job_id.to_string(),
                merchant_id: Some(job.merchant_id),
                before: Some(json!({"status": job.status, "courier_id": job.courier_id})),
                after: Some(
                    json!({"status": moved.status, "courier_id": courier_id, "reason": reason}),
                ),
                occurred_at: now,
            },
        )
        .await?;
        tx.commit().await?;
        self.settle_ended(&moved).await;
        Ok(moved)
    }

    /// Fails searching jobs past the dispatch deadline (`job.failed`, hold voided); returns
    /// how many. Claimed with `SKIP LOCKED`, so instances share the work.
    pub async fn fail_overdue_searches(
        &self,
        deadline: chrono::Duration,
    ) -> Result<usize, FulfilmentError> {
        let mut tx = self.begin_move().await?;
        let due = offers::claim_overdue_searches(&mut tx, deadline, now(), 50).await?;
        let mut failed = Vec::with_capacity(due.len());
        for job in &due {
            let moved = apply(
                &mut tx,
                job,
                &Move {
                    actor: Actor::Dispatch,
                    to: JobStatus::Failed,
                    courier: None,
                    reason: Some(NO_COURIER_REASON),
                    proof: None,
                },
            )
            .await?;
            failed.push(moved);
        }
        tx.commit().await?;
        for job in &failed {
            self.settle_ended(job).await;
        }
        Ok(failed.len())
    }

    /// A transaction for a move of a job: its commit wakes the webhook fan-out for the event
    /// the move records.
    pub async fn begin_move(&self) -> Result<EventTransaction<'static>, sqlx::Error> {
        let mut tx = self.begin_maybe_move().await?;
        tx.recorded();
        Ok(tx)
    }

    /// A transaction that may move a job: the caller says so with
    /// [`EventTransaction::recorded`] when it did.
    pub async fn begin_maybe_move(&self) -> Result<EventTransaction<'static>, sqlx::Error> {
        EventTransaction::begin(&self.pool, &self.wakeup).await
    }

    /// What follows the commit of a move of `job`: the charge of a job the move ended is
    /// settled. Settlement failures are left to the worker: the settlement row stays.
    pub async fn settle_ended(&self, job: &JobRow) {
        if let Some(settlement) = transitions::settlement(job.status) {
            self.settle(job.id, settlement).await;
        }
    }

    async fn settle(&self, job_id: Uuid, settlement: Settlement) {
        let result = match settlement {
            Settlement::Capture => self.payments.capture_for_job(job_id).await,
            Settlement::Void => self.payments.void_for_job(job_id).await,
        };
        let outcome = match result {
            // Done, handed to the charge retries, or nothing left to do on this charge.
            Ok(_) | Err(PaymentError::InvalidMove(_) | PaymentError::ChargeNotFound) => {
                store::settled(&self.pool, job_id, settlement).await
            }
            Err(error) => {
                tracing::warn!(%error, %job_id, "settling a job's charge failed; will retry");
                store::settlement_failed(
                    &self.pool,
                    job_id,
                    &error.to_string(),
                    now() + SETTLEMENT_GRACE,
                )
                .await
            }
        };
        if let Err(error) = outcome {
            tracing::warn!(%error, %job_id, "recording a settlement failed; the worker will redo it");
        }
    }

    /// Applies a move of the sandbox simulator to `job`, locked by the caller in `conn`, as
    /// the courier, operations or dispatch would make it (same checks, events and
    /// settlements owed), in a transaction of [`Fulfilment::begin`]. The caller commits, then
    /// calls [`Fulfilment::settle_ended`].
    pub async fn simulated_move(
        &self,
        conn: &mut PgConnection,
        job: &JobRow,
        step: SimulatedMove<'_>,
    ) -> Result<JobRow, FulfilmentError> {
        let (actor, to, reason, proof) = match step {
            SimulatedMove::Assign(courier) => {
                let step = Move {
                    actor: Actor::Courier,
                    to: JobStatus::Assigned,
                    courier: Some(courier),
                    reason: None,
                    proof: None,
                };
                return apply(conn, job, &step).await;
            }
            SimulatedMove::Reassign(courier) => {
                return put_on_courier(conn, job, courier, now()).await;
            }
            SimulatedMove::Collect => (Actor::Courier, JobStatus::InTransit, None, None),
            SimulatedMove::Deliver(proof) => {
                keep_proof_files(conn, job.id, proof).await?;
                (Actor::Courier, JobStatus::Delivered, None, Some(proof))
            }
            SimulatedMove::Return(reason) => {
                (Actor::Courier, JobStatus::Returned, Some(reason), None)
            }
            SimulatedMove::CancelByOperations(reason) => {
                (Actor::Operator, JobStatus::Cancelled, Some(reason), None)
            }
            SimulatedMove::Fail => (
                Actor::Dispatch,
                JobStatus::Failed,
                Some(NO_COURIER_REASON),
                None,
            ),
        };
        let step = Move {
            actor,
            to,
            courier: None,
            reason,
            proof,
        };
        let moved = apply(conn, job, &step).await?;
        self.text_on_collection(conn, &moved).await?;
        Ok(moved)
    }

    /// Does the settlements left behind (by a crash, or a failure); returns how many.
    pub async fn run_due_settlements(&self) -> Result<usize, FulfilmentError> {
        let due =
            store::claim_due_settlements(&self.pool, SETTLEMENT_BATCH, SETTLEMENT_LEASE).await?;
        for row in &due {
            self.settle(row.job_id, row.operation).await;
        }
        Ok(due.len())
    }
}

async fn keep_proof_files(
    conn: &mut PgConnection,
    job_id: Uuid,
    proof: &Proof,
) -> Result<(), sqlx::Error> {
    for file in &proof.files {
        store::insert_proof_file(
            conn,
            &ProofFileRow {
                job_id,
                kind: file.kind,
                content_type: file.content_type.clone(),
                size_bytes: i32::try_from(file.bytes.len()).unwrap_or(i32::MAX),
                bytes: file.bytes.clone(),
                created_at: proof.recorded_at,
            },
        )
        .await?;
    }
    Ok(())
}

/// Puts `courier_id` on the locked `job` (searching, assigned or in transit; a searching job
/// becomes `assigned`) and raises `job.courier_assigned`.
async fn put_on_courier(
    conn: &mut PgConnection,
    job: &JobRow,
    courier_id: Uuid,
    now: DateTime<Utc>,
) -> Result<JobRow, FulfilmentError> {
    let from = job.status;
    let refused = InvalidTransition {
        from,
        to: JobStatus::Assigned,
    };
    if !transitions::can_reassign(from) {
        return Err(refused.into());
    }
    let mut next = job.clone();
    next.courier_id = Some(courier_id);
    next.assigned_at = Some(now);
    if from == JobStatus::Searching {
        next.status = JobStatus::Assigned;
    }
    let details = EventDetails {
        courier: Some(courier_id.to_string()),
        ..EventDetails::default()
    };
    let event = job_event(&next, EventName::JobCourierAssigned, details, now);
    let along = store::AlongWithMove {
        offers_withdrawn_at: (from == JobStatus::Searching).then_some(now),
        event: Some(&event),
        settlement: None,
    };
    Ok(store::move_job_along(conn, &next, from, along)
        .await?
        .ok_or(refused)?)
}

/// A route's offers in the order of its stops' drop-offs (the order they were offered in
/// when the route has no stops recorded).
fn route_order(route: &[OfferRow]) -> Vec<&OfferRow> {
    let dropoffs: Vec<Uuid> = route
        .first()
        .and_then(|first| first.stops.as_ref())
        .and_then(|stops| stops.as_array())
        .map(|stops| {
            stops
                .iter()
                .filter(|s| s["stop"] == "dropoff")
                .filter_map(|s| s["job_id"].as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut ordered: Vec<&OfferRow> = route.iter().collect();
    ordered.sort_by_key(|o| dropoffs.iter().position(|j| *j == o.job_id));
    ordered
}

/// Records the courier's `key` (if it gave one) for `action` on `target` in the move's
/// transaction: true when a move was already made under it, which the caller answers as it
/// is now rather than make again; a key first used for another move is refused.
async fn made_before(
    conn: &mut PgConnection,
    courier_id: Uuid,
    key: Option<&str>,
    action: &'static str,
    target_id: Uuid,
) -> Result<bool, FulfilmentError> {
    let Some(key) = key else {
        return Ok(false);
    };
    let key = crate::idempotency::check_key(Some(key))?;
    let action = courier_actions::KeyedAction {
        action: action.to_owned(),
        target_id,
    };
    match courier_actions::record(conn, courier_id, key, &action, now()).await? {
        None => Ok(false),
        Some(first) if first == action => Ok(true),
        Some(_) => Err(FulfilmentError::KeyReused),
    }
}

/// The jobs an accept made before put on the courier (those still on it), in route order.
async fn accepted_before(
    conn: &mut PgConnection,
    courier_id: Uuid,
    offer_id: Uuid,
) -> Result<Vec<JobRow>, FulfilmentError> {
    // Jobs, then offers: the order of every move's locks.
    let mut job_ids = offers::route_jobs(conn, offer_id, courier_id).await?;
    job_ids.sort_unstable();
    let mut held = Vec::with_capacity(job_ids.len());
    for job_id in job_ids {
        if let Some(job) = store::lock_job(conn, job_id).await? {
            held.push(job);
        }
    }
    let route = offers::lock_route(conn, offer_id, courier_id).await?;
    Ok(route_order(&route)
        .into_iter()
        .filter(|offer| offer.status == OfferStatus::Accepted)
        .filter_map(|offer| held.iter().find(|j| j.id == offer.job_id))
        .filter(|job| job.courier_id == Some(courier_id))
        .cloned()
        .collect())
}

/// The courier's own job under way, locked; anyone else's is not found.
async fn courier_job(
    conn: &mut PgConnection,
    courier_id: Uuid,
    job_id: Uuid,
) -> Result<JobRow, FulfilmentError> {
    store::lock_job(conn, job_id)
        .await?
        .filter(|j| j.courier_id == Some(courier_id))
        .ok_or(FulfilmentError::JobNotFound)
}

/// Applies `step` to the locked `job` on `conn`: job row, offers, event, settlement owed.
async fn apply(
    conn: &mut PgConnection,
    job: &JobRow,
    step: &Move<'_>,
) -> Result<JobRow, FulfilmentError> {
    use JobStatus::*;
    let from = job.status;
    transitions::check(step.actor, from, step.to)?;
    let now = now();
    let mut next = job.clone();
    next.status = step.to;
    match step.to {
        Assigned => {
            next.courier_id = step.courier;
            next.assigned_at = Some(now);
        }
        // Back to searching: the courier is released and the deadline starts again.
        Searching => {
            next.courier_id = None;
            next.assigned_at = None;
            next.search_opened_at = Some(now);
        }
        Delivered | Returned => {
            next.completed_at = Some(now);
            next.proof = step.proof.map(Proof::stored);
        }
        Cancelled => next.cancellation_reason = step.reason.map(str::to_owned),
        Pending | InTransit | Failed => {}
    }
    let event = transitions::event(step.actor, step.to).map(|name| {
        let courier = next.courier_id.map(|c| c.to_string());
        let reason = step.reason.map(str::to_owned);
        let details = match name {
            EventName::JobStatusChanged => EventDetails {
                from: Some(from.as_str().to_owned()),
                to: Some(step.to.as_str().to_owned()),
                reason,
                ..EventDetails::default()
            },
            EventName::JobCourierAssigned | EventName::JobPickedUp => EventDetails {
                courier,
                ..EventDetails::default()
            },
            EventName::JobDelivered => EventDetails {
                courier,
                proof: step.proof.map(Proof::facts),
                ..EventDetails::default()
            },
            EventName::JobReturned => EventDetails {
                courier,
                reason,
                ..EventDetails::default()
            },
            // Someone was on the way only once a courier had taken the job.
            EventName::JobCancelled => EventDetails {
                reason,
                assigned_courier: (from == Assigned)
                    .then(|| job.courier_id.map(|c| c.to_string()))
                    .flatten(),
                ..EventDetails::default()
            },
            _ => EventDetails {
                reason,
                ..EventDetails::default()
            },
        };
        job_event(&next, name, details, now)
    });
    let along = store::AlongWithMove {
        offers_withdrawn_at: (from == Searching).then_some(now),
        event: event.as_ref(),
        settlement: transitions::settlement(step.to).map(|s| (s, now + SETTLEMENT_GRACE)),
    };
    // One statement: the job's row, its offers, its event and the settlement it owes.
    Ok(store::move_job_along(conn, &next, from, along)
        .await?
        .ok_or(InvalidTransition { from, to: step.to })?)
}

/// The event `name` of `job`, with the facts about it that events carry.
pub fn job_event(
    job: &JobRow,
    name: EventName,
    details: EventDetails,
    at: DateTime<Utc>,
) -> NewEvent {
    NewEvent {
        name,
        merchant_id: job.merchant_id,
        environment: job.environment,
        occurred_at: at,
        job: Some(facts(job)),
        details,
    }
}

/// The facts about a job its events carry.
pub fn facts(job: &JobRow) -> JobFacts {
    JobFacts {
        id: job.id,
        reference: job.reference.clone(),
        market: job.market_id.clone(),
        currency: job.currency.clone(),
        price_amount_minor: job.price_amount_minor,
        tax_amount_minor: job.tax_amount_minor,
        scheduled_for: job.scheduled_for,
    }
}

fn optional_reason(reason: Option<&str>) -> Result<Option<&str>, FulfilmentError> {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) if r.chars().count() > MAX_REASON_CHARS => Err(FulfilmentError::ReasonRequired),
        other => Ok(other),
    }
}

fn required_reason(reason: Option<&str>) -> Result<&str, FulfilmentError> {
    optional_reason(reason)?.ok_or(FulfilmentError::ReasonRequired)
}
