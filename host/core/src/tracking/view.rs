//! The page's content as data: rendered into the HTML page and served as the state the page
//! polls, so both always say the same. Areas only, never contact names, phones or the courier.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::map::MapView;
use courier_domain::JobStatus;
use courier_domain::tracking::eta::{self, TravelTimes};
use courier_domain::tracking::timeline::{self, Milestones, StepState};
use courier_domain::tracking::wording;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TrackingState {
    pub reference: String,
    #[schema(value_type = courier_domain::JobStatus)]
    pub status: String,
    pub headline: &'static str,
    pub detail: &'static str,
    /// True once the job has ended: the page stops polling.
    pub ended: bool,
    pub pickup_area: String,
    pub dropoff_area: String,
    pub estimate: Option<EstimateView>,
    pub timeline: Vec<StepView>,
    pub map: MapView,
    /// Delivered or returned: what the proof says happened (the outcome only).
    pub proof_outcome: Option<String>,
    /// When to ask again; null once the job has ended.
    pub poll_after_ms: Option<u64>,
    pub updated_at: DateTime<Utc>,
    pub updated_text: String,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = TrackingEstimate)]
pub struct EstimateView {
    pub arrive_at: DateTime<Utc>,
    /// "Around 14:32".
    pub text: String,
    /// "in about 12 minutes".
    pub remaining: String,
    pub note: Option<&'static str>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = TrackingStep)]
pub struct StepView {
    /// `booked`, `assigned`, `picked_up`, then `delivered`, `returned`, `cancelled` or `failed`.
    pub key: &'static str,
    pub label: &'static str,
    pub state: StepState,
    /// The state in words, for screen readers.
    pub spoken: &'static str,
    pub at: Option<DateTime<Utc>>,
    pub at_text: Option<String>,
}

impl StepView {
    /// The step's state as the page's class names it.
    pub fn state_class(&self) -> &'static str {
        match self.state {
            StepState::Done => "done",
            StepState::Current => "current",
            StepState::Upcoming => "upcoming",
        }
    }

    pub fn is_current(&self) -> bool {
        self.state == StepState::Current
    }
}

/// Everything known about a job that the page shows.
pub struct Facts {
    pub reference: String,
    pub status_name: String,
    pub status: Option<JobStatus>,
    pub milestones: Milestones,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub pickup_area: String,
    pub dropoff_area: String,
    pub travel: TravelTimes,
    pub proof_outcome: Option<String>,
    pub zone: Tz,
}

pub fn is_ended(status: Option<JobStatus>) -> bool {
    matches!(
        status,
        Some(JobStatus::Delivered | JobStatus::Returned | JobStatus::Cancelled | JobStatus::Failed)
    )
}

pub fn build(
    facts: Facts,
    map: MapView,
    poll_interval_ms: u64,
    now: DateTime<Utc>,
) -> TrackingState {
    let words = wording::status_words(facts.status);
    let ended = is_ended(facts.status);
    let local = |at: DateTime<Utc>| wording::local_time(at, facts.zone, now);
    let estimate = eta::arrival(facts.status, now, facts.scheduled_for, facts.travel).map(|at| {
        let remaining = u32::try_from((at - now).num_seconds().max(0)).unwrap_or(u32::MAX);
        EstimateView {
            arrive_at: at,
            text: format!("Around {}", local(at)),
            remaining: format!("in {}", wording::duration(remaining)),
            note: matches!(
                facts.status,
                Some(JobStatus::Pending | JobStatus::Searching)
            )
            .then_some("Counted from when a courier collects it."),
        }
    });
    let timeline = timeline::steps(facts.status, &facts.milestones)
        .into_iter()
        .map(|step| StepView {
            key: step.key,
            label: step.label,
            state: step.state,
            spoken: step.state.spoken(),
            at: step.at,
            at_text: step.at.map(local),
        })
        .collect();
    let proof_outcome = matches!(
        facts.status,
        Some(JobStatus::Delivered | JobStatus::Returned)
    )
    .then_some(facts.proof_outcome)
    .flatten();
    TrackingState {
        reference: facts.reference,
        status: facts.status_name,
        headline: words.headline,
        detail: words.detail,
        ended,
        pickup_area: facts.pickup_area,
        dropoff_area: facts.dropoff_area,
        estimate,
        timeline,
        map,
        proof_outcome,
        poll_after_ms: (!ended).then_some(poll_interval_ms),
        updated_at: now,
        updated_text: local(now),
    }
}
