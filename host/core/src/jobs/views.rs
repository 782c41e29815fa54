//! How jobs read through the API: the booking response, the detail, the list item. The
//! courier's name and phone and the offer history are in none of them.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use courier_domain::{JobStatus, Vehicle};
use courier_store::jobs::JobRow;

/// The booking response (spec: "Job").
#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    pub id: Uuid,
    pub reference: String,
    #[schema(value_type = courier_domain::JobStatus)]
    pub status: JobStatus,
    pub currency: String,
    pub price_amount_minor: i64,
    #[schema(value_type = courier_domain::VehicleName)]
    pub vehicle: Vehicle,
    pub tracking_url: String,
    pub booked_at: DateTime<Utc>,
    pub scheduled_for: Option<DateTime<Utc>>,
    /// When the parcel will be ready at the pickup; absent when the booking gave none and
    /// the account sets no preparation time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pickup_ready_at: Option<DateTime<Utc>>,
}

impl JobView {
    pub fn new(job: &JobRow, public_url: &str) -> Self {
        Self {
            id: job.id,
            reference: job.reference.clone(),
            status: job.status,
            currency: job.currency.clone(),
            price_amount_minor: job.price_amount_minor,
            vehicle: job.vehicle,
            tracking_url: tracking_url(public_url, &job.tracking_token),
            booked_at: job.booked_at,
            scheduled_for: job.scheduled_for,
            pickup_ready_at: job.pickup_ready_at,
        }
    }
}

pub fn tracking_url(public_url: &str, token: &str) -> String {
    format!("{}/track/{token}", public_url.trim_end_matches('/'))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProofRequirement {
    pub photo_required: bool,
    pub signature_required: bool,
}

/// `GET /v1/jobs/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobDetail {
    #[serde(flatten)]
    pub job: JobView,
    pub tax_amount_minor: i64,
    #[schema(value_type = courier_domain::booking::Contact)]
    pub pickup: Value,
    #[schema(value_type = courier_domain::booking::Contact)]
    pub dropoff: Value,
    pub assigned_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub cancellation_reason: Option<String>,
    #[schema(value_type = Vec<courier_domain::booking::Item>)]
    pub items: Value,
    pub items_subtotal_minor: i64,
    pub discount_minor: i64,
    pub items_total_minor: i64,
    pub proof_requirement: ProofRequirement,
    #[schema(value_type = Option<courier_domain::job::proof::ProofView>)]
    pub proof: Option<Value>,
    pub notify_customer: bool,
    pub customer_notified_at: Option<DateTime<Utc>>,
}

impl JobDetail {
    pub fn new(job: &JobRow, public_url: &str) -> Self {
        Self {
            job: JobView::new(job, public_url),
            tax_amount_minor: job.tax_amount_minor,
            pickup: job.pickup.clone(),
            dropoff: job.dropoff.clone(),
            assigned_at: job.assigned_at,
            completed_at: job.completed_at,
            cancellation_reason: job.cancellation_reason.clone(),
            items: job.items.clone(),
            items_subtotal_minor: job.items_subtotal_minor,
            discount_minor: job.discount_minor,
            items_total_minor: job.items_total_minor,
            proof_requirement: ProofRequirement {
                photo_required: job.proof_photo_required,
                signature_required: job.proof_signature_required,
            },
            proof: job
                .proof
                .as_ref()
                .map(|stored| courier_domain::job::proof::view(stored, job.id, public_url)),
            notify_customer: job.notify_customer,
            customer_notified_at: job.customer_notified_at,
        }
    }
}

/// An entry of `GET /v1/jobs`: no contact names or phones.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobListItem {
    pub id: Uuid,
    pub reference: String,
    #[schema(value_type = courier_domain::JobStatus)]
    pub status: JobStatus,
    pub currency: String,
    pub price_amount_minor: i64,
    #[schema(value_type = courier_domain::VehicleName)]
    pub vehicle: Vehicle,
    pub pickup_address: String,
    pub dropoff_address: String,
    pub booked_at: DateTime<Utc>,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub assigned_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    /// As in the job; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pickup_ready_at: Option<DateTime<Utc>>,
}

impl From<&JobRow> for JobListItem {
    fn from(job: &JobRow) -> Self {
        let address = |stop: &Value| stop["address"].as_str().unwrap_or_default().to_owned();
        Self {
            id: job.id,
            reference: job.reference.clone(),
            status: job.status,
            currency: job.currency.clone(),
            price_amount_minor: job.price_amount_minor,
            vehicle: job.vehicle,
            pickup_address: address(&job.pickup),
            dropoff_address: address(&job.dropoff),
            booked_at: job.booked_at,
            scheduled_for: job.scheduled_for,
            assigned_at: job.assigned_at,
            completed_at: job.completed_at,
            pickup_ready_at: job.pickup_ready_at,
        }
    }
}
