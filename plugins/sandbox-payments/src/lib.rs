//! The sandbox payment adapter (`courier:payments/payment-adapter@2.3.0`).
//!
//! No network and no configuration: every answer is a pure function of the
//! arguments, so retries with the same idempotency key return the same
//! provider reference.
//!
//! A card reference is `pm_sandbox_` followed by one of the designated test
//! numbers. Attaching succeeds for every designated number (brand visa, the
//! last four digits, expiry 12/2034), because the outcomes describe what
//! the bank says when money is asked for: they surface at `authorise`.
//!
//! | number           | attach | authorise                                        |
//! |------------------|--------|--------------------------------------------------|
//! | 4242424242424242 | card   | approved                                         |
//! | 4000000000000002 | card   | declined `card_declined`, card stays active      |
//! | 4000000000009995 | card   | declined `insufficient_funds`, card stays active |
//! | 4000000000000069 | card   | declined `expired_card`, card finished: expired  |
//! | 4000000000009987 | card   | declined `lost_card`, card finished: lost        |
//! | 4000000000000119 | card   | unreachable (not a decline; the host retries)    |
//!
//! Any other reference is refused at attach as an unknown reference (a raw
//! card number with a specific message), and declined at authorise with
//! `unknown_card`.
//!
//! Capture, void and refund approve references this adapter issued, with the
//! amounts checked: capture at most the held amount, refund at most the
//! captured amount (both carried inside the reference, since the adapter
//! keeps no state). Anything else is declined (`unknown_authorisation`,
//! `unknown_payment`, `amount_too_large`, `invalid_amount`).
//!
//! `retrieve` and `list-payments` answer that nothing is kept
//! ([`KEEPS_NOTHING`]): with no state, there is nothing to read back.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

#[cfg(target_family = "wasm")]
mod component;

/// Why the sandbox cannot read a payment back.
pub const KEEPS_NOTHING: &str = "the sandbox keeps no payments to read back";

use alloc::format;
use alloc::string::String;

/// What the bank says when asked to hold money on a designated card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    Works,
    Declined,
    InsufficientFunds,
    Expired,
    Lost,
    Unreachable,
}

const PREFIX: &str = "pm_sandbox_";

/// The designated numbers, exactly the spec's table.
const CARDS: [(&str, Behaviour); 6] = [
    ("4242424242424242", Behaviour::Works),
    ("4000000000000002", Behaviour::Declined),
    ("4000000000009995", Behaviour::InsufficientFunds),
    ("4000000000000069", Behaviour::Expired),
    ("4000000000009987", Behaviour::Lost),
    ("4000000000000119", Behaviour::Unreachable),
];

pub const EXPIRY_MONTH: u8 = 12;
pub const EXPIRY_YEAR: u16 = 2034;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub number: &'static str,
    pub behaviour: Behaviour,
}

impl Card {
    pub fn last_four(&self) -> &'static str {
        &self.number[self.number.len() - 4..]
    }
}

/// Looks a card reference up; the error is the refusal message.
pub fn card(reference: &str) -> Result<Card, String> {
    if reference.len() >= 12 && reference.chars().all(|c| c.is_ascii_digit() || c == ' ') {
        return Err("raw card numbers are not accepted; send the provider's reference".into());
    }
    let number = reference
        .strip_prefix(PREFIX)
        .ok_or_else(|| format!("{reference:?} is not a sandbox card reference"))?;
    CARDS
        .iter()
        .find(|(n, _)| *n == number)
        .map(|&(number, behaviour)| Card { number, behaviour })
        .ok_or_else(|| format!("{number:?} is not a designated sandbox card number"))
}

/// FNV-1a: deterministic ids from idempotency keys without any dependency.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// A provider reference: `{kind}_sandbox_{amount}_{hash}`, so the amount a
/// later operation may take travels with it.
fn reference(kind: &str, amount: i64, key: &str) -> String {
    format!("{kind}_sandbox_{amount}_{:016x}", fnv(&[kind, key]))
}

/// The amount carried by a reference of `kind`, if it is one of ours.
fn amount_in(kind: &str, reference: &str) -> Option<i64> {
    let rest = reference.strip_prefix(kind)?.strip_prefix("_sandbox_")?;
    let (amount, hash) = rest.split_once('_')?;
    (hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| amount.parse().ok())
        .flatten()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    Expired,
    Lost,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Approved(String),
    Declined {
        code: &'static str,
        finished: Option<Finished>,
    },
    Unreachable(String),
}

fn declined(code: &'static str) -> Outcome {
    Outcome::Declined {
        code,
        finished: None,
    }
}

/// The card form's document: what a browser needs to show the form (here, its client secret).
pub fn card_form_document(client_secret: &str) -> String {
    format!("{{\"client_secret\":\"{client_secret}\"}}")
}

pub fn setup_card_form(merchant: &str) -> (String, String) {
    let h = fnv(&["setup", merchant]);
    (
        format!("seti_sandbox_{h:016x}_secret"),
        format!("cus_sandbox_{h:016x}"),
    )
}

pub fn authorise(card_ref: &str, amount: i64, key: &str) -> Outcome {
    if amount <= 0 {
        return declined("invalid_amount");
    }
    let Ok(card) = card(card_ref) else {
        return declined("unknown_card");
    };
    match card.behaviour {
        Behaviour::Works => Outcome::Approved(reference("auth", amount, key)),
        Behaviour::Declined => declined("card_declined"),
        Behaviour::InsufficientFunds => declined("insufficient_funds"),
        Behaviour::Expired => Outcome::Declined {
            code: "expired_card",
            finished: Some(Finished::Expired),
        },
        Behaviour::Lost => Outcome::Declined {
            code: "lost_card",
            finished: Some(Finished::Lost),
        },
        Behaviour::Unreachable => {
            Outcome::Unreachable("sandbox provider did not answer (card 0119)".into())
        }
    }
}

pub fn capture(authorisation: &str, amount: i64, key: &str) -> Outcome {
    match amount_in("auth", authorisation) {
        None => declined("unknown_authorisation"),
        Some(_) if amount <= 0 => declined("invalid_amount"),
        Some(held) if amount > held => declined("amount_too_large"),
        Some(_) => Outcome::Approved(reference("pay", amount, key)),
    }
}

pub fn void(authorisation: &str, key: &str) -> Outcome {
    match amount_in("auth", authorisation) {
        None => declined("unknown_authorisation"),
        Some(held) => Outcome::Approved(reference("void", held, key)),
    }
}

pub fn refund(payment: &str, amount: i64, key: &str) -> Outcome {
    match amount_in("pay", payment) {
        None => declined("unknown_payment"),
        Some(_) if amount <= 0 => declined("invalid_amount"),
        Some(captured) if amount > captured => declined("amount_too_large"),
        Some(_) => Outcome::Approved(reference("re", amount, key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(number: &str) -> Outcome {
        authorise(&format!("pm_sandbox_{number}"), 1_250, "job-1")
    }

    #[test]
    fn designated_cards_attach_with_their_last_four() {
        for (number, _) in CARDS {
            let c = card(&format!("pm_sandbox_{number}")).unwrap();
            assert_eq!(c.last_four(), &number[12..]);
        }
    }

    #[test]
    fn other_references_are_refused() {
        for r in [
            "pm_sandbox_4111111111111111",
            "pm_sandbox_",
            "pm_live_4242424242424242",
            "",
        ] {
            assert!(card(r).is_err(), "{r}");
        }
        assert!(card("4242424242424242").unwrap_err().contains("raw card"));
        assert_eq!(
            authorise("pm_sandbox_1", 100, "k"),
            declined("unknown_card")
        );
    }

    #[test]
    fn authorise_follows_the_table() {
        assert!(matches!(auth("4242424242424242"), Outcome::Approved(_)));
        assert_eq!(auth("4000000000000002"), declined("card_declined"));
        assert_eq!(auth("4000000000009995"), declined("insufficient_funds"));
        assert_eq!(
            auth("4000000000000069"),
            Outcome::Declined {
                code: "expired_card",
                finished: Some(Finished::Expired)
            }
        );
        assert_eq!(
            auth("4000000000009987"),
            Outcome::Declined {
                code: "lost_card",
                finished: Some(Finished::Lost)
            }
        );
        assert!(matches!(auth("4000000000000119"), Outcome::Unreachable(_)));
    }

    #[test]
    fn references_are_deterministic_per_idempotency_key() {
        let a = auth("4242424242424242");
        assert_eq!(a, auth("4242424242424242"));
        let other = authorise("pm_sandbox_4242424242424242", 1_250, "job-2");
        assert_ne!(a, other);
    }

    #[test]
    fn capture_refund_and_void_check_references_and_amounts() {
        let Outcome::Approved(hold) = auth("4242424242424242") else {
            panic!("hold refused")
        };
        assert_eq!(capture(&hold, 1_251, "c"), declined("amount_too_large"));
        assert_eq!(capture(&hold, 0, "c"), declined("invalid_amount"));
        assert_eq!(
            capture("auth_sandbox_5_xyz", 1, "c"),
            declined("unknown_authorisation")
        );
        let Outcome::Approved(payment) = capture(&hold, 1_000, "c") else {
            panic!("capture refused")
        };
        assert!(matches!(void(&hold, "v"), Outcome::Approved(_)));
        assert_eq!(void(&payment, "v"), declined("unknown_authorisation"));
        assert_eq!(refund(&payment, 1_001, "r"), declined("amount_too_large"));
        assert!(matches!(refund(&payment, 400, "r"), Outcome::Approved(_)));
        assert_eq!(refund(&hold, 400, "r"), declined("unknown_payment"));
    }
}
