//! The two providers' models the chaos run takes money through, and how each one's books are
//! compared with ours: Stripe's PaymentIntents by the hold key in their metadata, Adyen's
//! payments by their merchant reference (the hold key).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use uuid::Uuid;

use crate::support::adyen::AdyenStandIn;
use crate::support::process::reconcile_live_output;
use crate::support::stripe::StripeStandIn;

/// A charge as the database keeps it: job, status, authorisation reference, refunded amount.
pub type ChargeRow = (Uuid, String, Option<String>, i64);

pub enum Provider {
    Stripe(StripeStandIn),
    Adyen(AdyenStandIn),
}

impl Provider {
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Stripe(_) => "stripe",
            Provider::Adyen(_) => "adyen",
        }
    }

    /// The service's settings for its live adapter.
    pub fn service_env(&self) -> Vec<(String, String)> {
        match self {
            Provider::Stripe(stripe) => stripe.service_env(),
            Provider::Adyen(adyen) => {
                let mut env = adyen.service_env();
                env.push(("COURIER_CARD_FORM_CURRENCY".into(), "EUR".into()));
                env
            }
        }
    }

    /// Where the provider's notifications go: the instances' live event routes.
    pub fn notify(&self, urls: &[String]) {
        if let Provider::Adyen(adyen) = self {
            adyen.notify_any(
                urls.iter()
                    .map(|url| format!("{url}/v1/provider-events/live"))
                    .collect(),
            );
        }
    }

    /// Completes the card form `form` (the answer of `POST /v1/payment-methods/setup`) as the
    /// shopper would; answers the card's provider reference.
    pub fn complete_card_form(&self, form: &Value) -> String {
        match self {
            Provider::Stripe(stripe) => {
                stripe.complete_card_form(form["client_secret"].as_str().unwrap(), "pm_card_visa")
            }
            Provider::Adyen(adyen) => adyen.complete_card_form(
                form["card_form"]["session"]["id"].as_str().unwrap(),
                "4111111111111111",
                "Chaos Shopper",
            ),
        }
    }

    /// Faults from `seed`: a log-normal pause on every request (median 30 ms, p99 800 ms),
    /// 15% of them a fault; with Adyen also a third of the holds answered `received` and
    /// notifications up to 3 s late, reordered, a fifth of them twice.
    pub fn unleash(&self, seed: u64) {
        let (median, p99, rate, hang) = (
            Duration::from_millis(30),
            Duration::from_millis(800),
            0.15,
            Duration::from_millis(2000),
        );
        match self {
            Provider::Stripe(stripe) => stripe.unleash(seed, median, p99, rate, hang),
            Provider::Adyen(adyen) => {
                adyen.unleash(seed, median, p99, rate, hang, Duration::from_secs(3))
            }
        }
    }

    pub fn calm(&self) {
        match self {
            Provider::Stripe(stripe) => stripe.calm(),
            Provider::Adyen(adyen) => adyen.calm(),
        }
    }

    /// What the provider has yet to tell (Adyen's notifications not yet accepted).
    pub fn untold(&self) -> usize {
        match self {
            Provider::Stripe(_) => 0,
            Provider::Adyen(adyen) => adyen.undelivered(),
        }
    }

    /// What the provider did, for the run's log: its payments by status, and with Adyen the
    /// notifications accepted (repeats included) and how many of them were repeats.
    pub fn tally(&self) -> String {
        let mut statuses: std::collections::BTreeMap<String, usize> = Default::default();
        match self {
            Provider::Stripe(stripe) => {
                for intent in stripe.intents() {
                    *statuses.entry(intent.status).or_default() += 1;
                }
                format!("payments {statuses:?}")
            }
            Provider::Adyen(adyen) => {
                for payment in adyen.payments() {
                    *statuses.entry(payment.status).or_default() += 1;
                }
                let delivered = adyen.delivered();
                let distinct: std::collections::HashSet<String> = delivered
                    .iter()
                    .map(|item| format!("{}/{}", item["pspReference"], item["eventCode"]))
                    .collect();
                format!(
                    "payments {statuses:?}, {} holds answered received, {} notifications \
                     accepted, {} of them repeats",
                    adyen.holds_received(),
                    delivered.len(),
                    delivered.len() - distinct.len()
                )
            }
        }
    }

    /// Each booked job has exactly one payment at the provider, made with its hold key, in the
    /// state its charge says, with equal refunds; no payment holds money for anything else.
    pub fn check_books(&self, charges: &[ChargeRow]) {
        let charge_of: HashMap<String, &ChargeRow> = charges
            .iter()
            .map(|c| (format!("job_{}_hold", c.0), c))
            .collect();
        let payments: Vec<TheirPayment> = match self {
            Provider::Stripe(stripe) => stripe
                .intents()
                .into_iter()
                .map(|intent| TheirPayment {
                    holds_money: intent.status == "requires_capture"
                        || (intent.status == "succeeded"
                            && intent.amount_received > intent.amount_refunded),
                    hold_key: intent.metadata.get("courier_hold_key").cloned(),
                    status: intent.status,
                    id: intent.id,
                    refunded: intent.amount_refunded,
                })
                .collect(),
            Provider::Adyen(adyen) => adyen
                .payments()
                .into_iter()
                .map(|payment| TheirPayment {
                    holds_money: payment.status == "Authorised"
                        || (payment.status == "Captured" && payment.captured > payment.refunded),
                    hold_key: Some(payment.reference),
                    status: payment.status,
                    id: payment.psp,
                    refunded: payment.refunded,
                })
                .collect(),
        };
        let mut per_key: HashMap<&str, usize> = HashMap::new();
        for payment in &payments {
            let key = payment.hold_key.as_deref();
            let Some(charge) = key.and_then(|k| charge_of.get(k)) else {
                assert!(
                    !payment.holds_money,
                    "{} holds money for no charge ({key:?}, {})",
                    payment.id, payment.status
                );
                continue;
            };
            *per_key.entry(key.unwrap()).or_default() += 1;
            if charge.1 == "failed" {
                assert!(
                    !payment.holds_money,
                    "{key:?}: money held for a failed charge"
                );
                continue;
            }
            assert_eq!(
                payment.status,
                self.status_for(&charge.1),
                "{key:?}: ours {}",
                charge.1
            );
            assert_eq!(charge.2.as_deref(), Some(payment.id.as_str()), "{key:?}");
            assert_eq!(payment.refunded, charge.3, "{key:?}");
        }
        let twice: Vec<_> = per_key.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "held more than once: {twice:?}");
    }

    /// The provider's status of a payment whose charge is in `ours`.
    fn status_for(&self, ours: &str) -> &'static str {
        match (self, ours) {
            (Provider::Stripe(_), "authorised") => "requires_capture",
            (Provider::Stripe(_), "captured" | "refunded") => "succeeded",
            (Provider::Stripe(_), "voided") => "canceled",
            (Provider::Adyen(_), "authorised") => "Authorised",
            (Provider::Adyen(_), "captured" | "refunded") => "Captured",
            (Provider::Adyen(_), "voided") => "Cancelled",
            (_, other) => panic!("no charge should be left {other}"),
        }
    }

    /// `courier payments reconcile`, as an operator runs it, finds no mismatch. Stripe's
    /// payments are each read back; Adyen's cannot be (its API has no lookup), which the check
    /// says for each of our `charges`, and exits 2.
    pub async fn reconcile_clean(&self, database_url: &str, charges: usize) -> Value {
        let (code, printed, errors) = reconcile_live_output(self.service_env(), database_url).await;
        let last: Value = printed
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .unwrap_or_else(|| panic!("no summary: {printed:?} {errors}"));
        assert_eq!(last["mismatches"], 0, "{printed:?}");
        match self {
            Provider::Stripe(_) => assert_eq!(code, 0, "{printed:?} {errors}"),
            Provider::Adyen(_) => {
                assert_eq!(code, 2, "{printed:?} {errors}");
                assert_eq!(last["unread"], charges, "{last}");
                assert!(errors.contains("could not be read back"), "{errors}");
            }
        }
        last
    }
}

/// A payment at either provider, as the comparison needs it.
struct TheirPayment {
    id: String,
    hold_key: Option<String>,
    status: String,
    holds_money: bool,
    refunded: i64,
}
