//! The timeline: the steps of a delivery, which are done, which is under way, and when each
//! happened (from the job's events, else its own timestamps).

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::JobStatus;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = TrackingStepState)]
pub enum StepState {
    Done,
    Current,
    Upcoming,
}

impl StepState {
    /// What a screen reader says after the step's label (colour alone must not tell).
    pub fn spoken(self) -> &'static str {
        match self {
            StepState::Done => "done",
            StepState::Current => "in progress",
            StepState::Upcoming => "not yet",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub key: &'static str,
    pub label: &'static str,
    pub state: StepState,
    pub at: Option<DateTime<Utc>>,
}

/// When each step happened, as far as is known.
#[derive(Clone, Copy, Debug, Default)]
pub struct Milestones {
    pub booked_at: Option<DateTime<Utc>>,
    pub assigned_at: Option<DateTime<Utc>>,
    pub picked_up_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
}

pub fn steps(status: Option<JobStatus>, at: &Milestones) -> Vec<Step> {
    use StepState::{Current, Done, Upcoming};
    let (last_key, last_label) = match status {
        Some(JobStatus::Returned) => ("returned", "Returned to sender"),
        Some(JobStatus::Cancelled) => ("cancelled", "Cancelled"),
        Some(JobStatus::Failed) => ("failed", "No courier found"),
        _ => ("delivered", "Delivered"),
    };
    let step = |key, label, state, at| Step {
        key,
        label,
        state,
        at,
    };
    let booked = step("booked", "Booked", Done, at.booked_at);
    let assigned = |state| step("assigned", "Courier assigned", state, at.assigned_at);
    let picked_up = |state| step("picked_up", "Picked up", state, at.picked_up_at);
    let last = |state| {
        let when = if state == Done { at.ended_at } else { None };
        step(last_key, last_label, state, when)
    };
    match status {
        None | Some(JobStatus::Pending | JobStatus::Searching) => vec![
            booked,
            assigned(Current),
            picked_up(Upcoming),
            last(Upcoming),
        ],
        Some(JobStatus::Assigned) => {
            vec![booked, assigned(Done), picked_up(Current), last(Upcoming)]
        }
        Some(JobStatus::InTransit) => vec![booked, assigned(Done), picked_up(Done), last(Current)],
        Some(JobStatus::Delivered | JobStatus::Returned) => {
            vec![booked, assigned(Done), picked_up(Done), last(Done)]
        }
        // Ended early: only the steps that happened, then the end.
        Some(JobStatus::Cancelled | JobStatus::Failed) => {
            let mut steps = vec![booked];
            if at.assigned_at.is_some() {
                steps.push(assigned(Done));
            }
            if at.picked_up_at.is_some() {
                steps.push(picked_up(Done));
            }
            steps.push(last(Done));
            steps
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_and_states(steps: &[Step]) -> Vec<(&str, StepState)> {
        steps.iter().map(|s| (s.key, s.state)).collect()
    }

    fn time(minute: u32) -> Option<DateTime<Utc>> {
        Some(format!("2026-11-21T10:{minute:02}:00Z").parse().unwrap())
    }

    #[test]
    fn a_delivery_under_way_shows_the_step_in_progress() {
        use StepState::*;
        let at = Milestones {
            booked_at: time(0),
            assigned_at: time(3),
            ..Milestones::default()
        };
        let steps = steps(Some(JobStatus::Assigned), &at);
        assert_eq!(
            keys_and_states(&steps),
            [
                ("booked", Done),
                ("assigned", Done),
                ("picked_up", Current),
                ("delivered", Upcoming)
            ]
        );
        assert_eq!(steps[1].at, time(3));
        assert_eq!(steps[3].at, None);
    }

    #[test]
    fn an_ended_delivery_shows_how_it_ended_and_when() {
        use StepState::*;
        let at = Milestones {
            booked_at: time(0),
            assigned_at: time(3),
            picked_up_at: time(9),
            ended_at: time(20),
        };
        let returned = steps(Some(JobStatus::Returned), &at);
        assert_eq!(returned[3].label, "Returned to sender");
        assert_eq!(returned[3].at, time(20));
        assert!(returned.iter().all(|s| s.state == Done));
        let failed = steps(
            Some(JobStatus::Failed),
            &Milestones {
                booked_at: time(0),
                ended_at: time(30),
                ..Milestones::default()
            },
        );
        assert_eq!(
            keys_and_states(&failed),
            [("booked", Done), ("failed", Done)]
        );
        let cancelled = steps(Some(JobStatus::Cancelled), &at);
        assert_eq!(cancelled.len(), 4);
        assert_eq!(cancelled[3].label, "Cancelled");
    }

    #[test]
    fn waiting_for_a_courier_is_the_step_in_progress() {
        let steps = steps(Some(JobStatus::Searching), &Milestones::default());
        assert_eq!(steps[1].state, StepState::Current);
        assert_eq!(steps[1].label, "Courier assigned");
        assert_eq!(StepState::Current.spoken(), "in progress");
    }
}
