//! The charge state machine: the one place that says which moves are allowed.
//!
//! ```text
//! pending ──hold placed──▶ authorised ──capture──▶ captured ──refund──▶ refunded ─┐
//!    │                        │  │ ◀─capture reversed─┘  (refund, until all given back) ◀┘
//!    └──── fail ──▶ failed ◀──┘  └──void──▶ voided
//! ```
//!
//! One move goes back: a capture the provider confirmed and then reports failed (Adyen's
//! `CAPTURE_FAILED` after `CAPTURE`, an order it documents) took nothing, and the hold stands.
//!
//! Asking for a move the charge has already made (a retried capture, a second void) is not an
//! error: it is [`Decision::AlreadyDone`], and nothing is sent to the provider again.

use crate::error::Code;

pub const INVALID_STATE: Code = Code::new(
    409,
    "charge.invalid_state",
    "Capture of a voided or failed charge, void of a captured one (fulfilment).",
);

crate::names::named_enum! {
    /// Where a charge is: held (`authorised`), taken (`captured`), released (`voided`), refused
    /// or given up (`failed`), some or all given back (`refunded`), or not yet answered
    /// (`pending`).
    pub enum ChargeStatus {
        Pending,
        Authorised,
        Captured,
        Voided,
        Failed,
        Refunded,
    }
}

impl ChargeStatus {
    pub const ALL: [ChargeStatus; 6] = [
        ChargeStatus::Pending,
        ChargeStatus::Authorised,
        ChargeStatus::Captured,
        ChargeStatus::Voided,
        ChargeStatus::Failed,
        ChargeStatus::Refunded,
    ];
}

crate::names::named_enum! {
    /// What is asked of a charge.
    pub enum Move {
        /// Place the hold (the provider approved the authorisation).
        Authorise,
        /// The provider refused for good, or retries gave up.
        Fail,
        /// Take the held money.
        Capture,
        /// Release the hold.
        Void,
        /// Give captured money back (in full or in part; amounts are checked separately).
        Refund,
        /// The provider reports a capture it had confirmed failed: nothing was taken.
        CaptureReversed,
    }
}

impl Move {
    pub const ALL: [Move; 6] = [
        Move::Authorise,
        Move::Fail,
        Move::Capture,
        Move::Void,
        Move::Refund,
        Move::CaptureReversed,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Make the move; the charge ends in this status.
    Apply(ChargeStatus),
    /// The charge has made this move already; do nothing.
    AlreadyDone,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a {} charge cannot {}", from.as_str(), requested.as_str())]
pub struct InvalidMove {
    pub from: ChargeStatus,
    pub requested: Move,
}

/// Whether `requested` may happen to a charge in `from`, and where it leads.
pub fn decide(from: ChargeStatus, requested: Move) -> Result<Decision, InvalidMove> {
    use ChargeStatus as S;
    use Decision::{AlreadyDone, Apply};
    let decision = match (requested, from) {
        (Move::Authorise, S::Pending) => Apply(S::Authorised),
        (Move::Authorise, S::Authorised | S::Captured | S::Refunded) => AlreadyDone,

        (Move::Fail, S::Pending | S::Authorised) => Apply(S::Failed),
        (Move::Fail, S::Failed) => AlreadyDone,

        (Move::Capture, S::Authorised) => Apply(S::Captured),
        (Move::Capture, S::Captured | S::Refunded) => AlreadyDone,

        (Move::Void, S::Authorised) => Apply(S::Voided),
        // Nothing is held on a failed charge: releasing it is already true.
        (Move::Void, S::Voided | S::Failed) => AlreadyDone,

        // Partial refunds follow one another until the captured amount is given back.
        (Move::Refund, S::Captured | S::Refunded) => Apply(S::Refunded),

        (Move::CaptureReversed, S::Captured) => Apply(S::Authorised),
        (Move::CaptureReversed, S::Authorised) => AlreadyDone,

        _ => return Err(InvalidMove { from, requested }),
    };
    Ok(decision)
}

#[cfg(test)]
mod tests {
    use super::ChargeStatus::*;
    use super::Decision::{AlreadyDone, Apply};
    use super::*;

    /// Every (move, status) pair, spelled out: the table of docs/payments-and-partners.md.
    fn expected(requested: Move, from: ChargeStatus) -> Option<Decision> {
        let table: &[(Move, ChargeStatus, Decision)] = &[
            (Move::Authorise, Pending, Apply(Authorised)),
            (Move::Authorise, Authorised, AlreadyDone),
            (Move::Authorise, Captured, AlreadyDone),
            (Move::Authorise, Refunded, AlreadyDone),
            (Move::Fail, Pending, Apply(Failed)),
            (Move::Fail, Authorised, Apply(Failed)),
            (Move::Fail, Failed, AlreadyDone),
            (Move::Capture, Authorised, Apply(Captured)),
            (Move::Capture, Captured, AlreadyDone),
            (Move::Capture, Refunded, AlreadyDone),
            (Move::Void, Authorised, Apply(Voided)),
            (Move::Void, Voided, AlreadyDone),
            (Move::Void, Failed, AlreadyDone),
            (Move::Refund, Captured, Apply(Refunded)),
            (Move::Refund, Refunded, Apply(Refunded)),
            (Move::CaptureReversed, Captured, Apply(Authorised)),
            (Move::CaptureReversed, Authorised, AlreadyDone),
        ];
        table
            .iter()
            .find(|(m, s, _)| *m == requested && *s == from)
            .map(|(_, _, d)| *d)
    }

    #[test]
    fn every_move_from_every_status_follows_the_table() {
        let mut allowed = 0;
        for from in ChargeStatus::ALL {
            for requested in Move::ALL {
                let got = decide(from, requested);
                match expected(requested, from) {
                    Some(decision) => {
                        allowed += 1;
                        assert_eq!(got, Ok(decision), "{from:?} {requested:?}");
                    }
                    None => assert_eq!(
                        got,
                        Err(InvalidMove { from, requested }),
                        "{from:?} {requested:?}"
                    ),
                }
            }
        }
        assert_eq!(allowed, 17);
    }

    #[test]
    fn applied_moves_are_exactly_the_spec_transitions() {
        let mut edges: Vec<(ChargeStatus, ChargeStatus)> = Vec::new();
        for from in ChargeStatus::ALL {
            for requested in Move::ALL {
                if let Ok(Apply(to)) = decide(from, requested)
                    && to != from
                {
                    edges.push((from, to));
                }
            }
        }
        edges.sort_by_key(|(a, b)| (a.as_str(), b.as_str()));
        let mut spec = vec![
            (Pending, Authorised),
            (Authorised, Captured),
            (Authorised, Voided),
            (Pending, Failed),
            (Authorised, Failed),
            (Captured, Refunded),
            // Not a move of the spec's: the provider's report that a capture failed.
            (Captured, Authorised),
        ];
        spec.sort_by_key(|(a, b)| (a.as_str(), b.as_str()));
        assert_eq!(edges, spec);
    }

    #[test]
    fn terminal_states_accept_nothing_but_repeats() {
        for requested in Move::ALL {
            for from in [Voided, Failed] {
                assert!(!matches!(decide(from, requested), Ok(Apply(_))));
            }
        }
    }

    #[test]
    fn statuses_round_trip() {
        for status in ChargeStatus::ALL {
            assert_eq!(ChargeStatus::parse(status.as_str()), Some(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
        assert_eq!(ChargeStatus::parse("held"), None);
    }
}
