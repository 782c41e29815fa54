//! Which job moves are legal, for whom, and what each one raises and does to the money. Pure:
//! the function that applies a move is in the host's fulfilment feature.
//!
//! ```text
//!  (booked) ──> pending ──> searching ──> assigned ──> in_transit ──> delivered
//!                  │            │  ▲          │             └───────> returned
//!                  │            │  └──────────┤ (operator releases)
//!                  │            ├──> failed   │
//!                  └────────────┴────────────>┴──> cancelled
//! ```

use thiserror::Error;

use crate::JobStatus;
use crate::event::EventName;

use crate::error::Code;

pub const INVALID_TRANSITION: Code = Code::new(
    409,
    "job.invalid_transition",
    "A move the transition table does not allow (the message names both states).",
);

/// Who moves a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// The service itself: searches opening, the dispatch deadline.
    Dispatch,
    /// The courier on the job (or, for `assigned`, the courier accepting its offer).
    Courier,
    /// The job's merchant (cancellation).
    Merchant,
    /// Operations, by hand.
    Operator,
}

crate::names::named_enum! {
    /// What a job's ending does to its charge.
    pub enum Settlement {
        /// The money is taken: delivered or returned.
        Capture,
        /// The hold is released: cancelled or failed.
        Void,
    }
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[error("a job cannot move from {} to {}", from.as_str(), to.as_str())]
pub struct InvalidTransition {
    pub from: JobStatus,
    pub to: JobStatus,
}

/// Whether nothing more can happen to a job in `status`.
pub fn is_final(status: JobStatus) -> bool {
    use JobStatus::*;
    matches!(status, Delivered | Returned | Cancelled | Failed)
}

/// Whether `actor` may move a job from `from` to `to`.
pub fn check(actor: Actor, from: JobStatus, to: JobStatus) -> Result<(), InvalidTransition> {
    use JobStatus::*;
    let allowed = match actor {
        Actor::Dispatch => matches!((from, to), (Pending, Searching) | (Searching, Failed)),
        Actor::Courier => matches!(
            (from, to),
            (Searching, Assigned)
                | (Assigned, InTransit)
                | (InTransit, Delivered)
                | (InTransit, Returned)
        ),
        // Until collection: after it, the goods are with a courier and only a return or a
        // delivery can end the job.
        Actor::Merchant => matches!((from, to), (Pending | Searching | Assigned, Cancelled)),
        // Courier assignment by hand is a reassignment (see `can_reassign`), not a status.
        Actor::Operator => matches!(
            (from, to),
            (Pending, Searching | Cancelled | Failed)
                | (Searching, Cancelled | Failed)
                | (
                    Assigned,
                    Searching | InTransit | Delivered | Cancelled | Failed
                )
                | (InTransit, Delivered | Returned)
        ),
    };
    if allowed {
        Ok(())
    } else {
        Err(InvalidTransition { from, to })
    }
}

/// Whether an operator may put a (new) courier on a job in `status`: while it is searching
/// (an assignment by hand), and until it is handed over (a handover to another courier).
pub fn can_reassign(status: JobStatus) -> bool {
    matches!(
        status,
        JobStatus::Searching | JobStatus::Assigned | JobStatus::InTransit
    )
}

/// The event a legal move raises, if any. Operators' moves raise `job.status_changed` only.
pub fn event(actor: Actor, to: JobStatus) -> Option<EventName> {
    use JobStatus::*;
    if actor == Actor::Operator {
        return Some(EventName::JobStatusChanged);
    }
    match to {
        Pending | Searching => None,
        Assigned => Some(EventName::JobCourierAssigned),
        InTransit => Some(EventName::JobPickedUp),
        Delivered => Some(EventName::JobDelivered),
        Returned => Some(EventName::JobReturned),
        Cancelled => Some(EventName::JobCancelled),
        Failed => Some(EventName::JobFailed),
    }
}

/// What reaching `to` does to the charge, whoever made the move.
pub fn settlement(to: JobStatus) -> Option<Settlement> {
    use JobStatus::*;
    match to {
        Delivered | Returned => Some(Settlement::Capture),
        Cancelled | Failed => Some(Settlement::Void),
        Pending | Searching | Assigned | InTransit => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use JobStatus::*;

    const ACTORS: [Actor; 4] = [
        Actor::Dispatch,
        Actor::Courier,
        Actor::Merchant,
        Actor::Operator,
    ];

    /// Every legal move, written out; everything else must be refused.
    const LEGAL: &[(Actor, JobStatus, JobStatus)] = &[
        (Actor::Dispatch, Pending, Searching),
        (Actor::Dispatch, Searching, Failed),
        (Actor::Courier, Searching, Assigned),
        (Actor::Courier, Assigned, InTransit),
        (Actor::Courier, InTransit, Delivered),
        (Actor::Courier, InTransit, Returned),
        (Actor::Merchant, Pending, Cancelled),
        (Actor::Merchant, Searching, Cancelled),
        (Actor::Merchant, Assigned, Cancelled),
        (Actor::Operator, Pending, Searching),
        (Actor::Operator, Pending, Cancelled),
        (Actor::Operator, Pending, Failed),
        (Actor::Operator, Searching, Cancelled),
        (Actor::Operator, Searching, Failed),
        (Actor::Operator, Assigned, Searching),
        (Actor::Operator, Assigned, InTransit),
        (Actor::Operator, Assigned, Delivered),
        (Actor::Operator, Assigned, Cancelled),
        (Actor::Operator, Assigned, Failed),
        (Actor::Operator, InTransit, Delivered),
        (Actor::Operator, InTransit, Returned),
    ];

    #[test]
    fn exactly_the_listed_moves_are_legal() {
        for actor in ACTORS {
            for from in JobStatus::ALL {
                for to in JobStatus::ALL {
                    let legal = LEGAL.contains(&(actor, from, to));
                    assert_eq!(
                        check(actor, from, to).is_ok(),
                        legal,
                        "{actor:?}: {} -> {}",
                        from.as_str(),
                        to.as_str()
                    );
                }
            }
        }
    }

    #[test]
    fn nothing_leaves_a_final_state_and_nothing_stays_put() {
        for actor in ACTORS {
            for from in JobStatus::ALL {
                for to in JobStatus::ALL {
                    if is_final(from) || from == to {
                        assert_eq!(check(actor, from, to), Err(InvalidTransition { from, to }));
                    }
                }
            }
        }
    }

    #[test]
    fn merchants_cannot_cancel_after_collection() {
        for from in [InTransit, Delivered, Returned, Failed, Cancelled] {
            assert!(check(Actor::Merchant, from, Cancelled).is_err());
        }
    }

    #[test]
    fn money_follows_the_ending() {
        assert_eq!(settlement(Delivered), Some(Settlement::Capture));
        assert_eq!(settlement(Returned), Some(Settlement::Capture));
        assert_eq!(settlement(Cancelled), Some(Settlement::Void));
        assert_eq!(settlement(Failed), Some(Settlement::Void));
        for status in [Pending, Searching, Assigned, InTransit] {
            assert_eq!(settlement(status), None);
        }
        for s in [Settlement::Capture, Settlement::Void] {
            assert_eq!(Settlement::parse(s.as_str()), Some(s));
        }
    }

    #[test]
    fn each_legal_move_raises_the_spec_event() {
        for &(actor, _, to) in LEGAL {
            let expected = match (actor, to) {
                (Actor::Operator, _) => Some(EventName::JobStatusChanged),
                (_, Searching) => None,
                (_, Assigned) => Some(EventName::JobCourierAssigned),
                (_, InTransit) => Some(EventName::JobPickedUp),
                (_, Delivered) => Some(EventName::JobDelivered),
                (_, Returned) => Some(EventName::JobReturned),
                (_, Cancelled) => Some(EventName::JobCancelled),
                (_, Failed) => Some(EventName::JobFailed),
                (_, Pending) => unreachable!("nothing moves back to pending"),
            };
            assert_eq!(event(actor, to), expected, "{actor:?} -> {}", to.as_str());
        }
    }

    #[test]
    fn reassignment_is_possible_until_handover() {
        for status in JobStatus::ALL {
            assert_eq!(
                can_reassign(status),
                matches!(status, Searching | Assigned | InTransit)
            );
        }
    }

    #[test]
    fn refusals_name_both_states() {
        let error = check(Actor::Merchant, InTransit, Cancelled).unwrap_err();
        assert_eq!(
            error.to_string(),
            "a job cannot move from in_transit to cancelled"
        );
    }
}
