//! The scenarios made from a set of cassettes, and the checks each one runs.

use serde_json::Value;

use super::player::{Fault, Player, Sent};
use crate::adapter::cassette::{Cassette, Loaded, MONEY_MOVES, RecordedExchange};
use crate::adapter::run::{call, operation_named};
use courier_domain::charge::{contains_card_number, json_card_number_pointer};
use courier_plugins::PaymentAdapter;

/// What the cassettes must hold between them: each operation with one of its answers. A move
/// the provider confirms later answers `pending`; a provider without a payment lookup answers
/// `retrieve` unreachable, sending nothing.
const COVERAGE: [(&str, &[&str]); 10] = [
    ("setup-card-form", &["ok"]),
    ("attach-card", &["ok"]),
    ("attach-card", &["refused unknown-reference"]),
    ("hold", &["approved"]),
    ("hold", &["declined"]),
    ("capture", &SETTLED),
    ("void", &SETTLED),
    ("refund", &SETTLED),
    ("retrieve", &["ok", "refused unreachable"]),
    ("retrieve", &["refused not-found", "refused unreachable"]),
];

/// The answers of a money move the provider accepted: done, or to be confirmed.
const SETTLED: [&str; 2] = ["approved", "pending"];

const UNREACHABLE: &[&str] = &["unreachable"];
const IN_FLIGHT: &[&str] = &["in-flight"];
const UNREACHABLE_OR_IN_FLIGHT: &[&str] = &["unreachable", "in-flight"];

pub(super) struct Suite<'a> {
    pub adapter: &'a PaymentAdapter,
    pub player: &'a Player,
    pub bytes: &'a [u8],
    pub cassettes: &'a [Loaded],
    /// The configuration's values (its secrets among them): text the operator wrote, never a
    /// card number the adapter was given, wherever the adapter sends or says it.
    pub configured: &'a [String],
}

pub(super) struct Scenario {
    pub name: String,
    check: Check,
}

enum Check {
    /// The component imports nothing outside its world.
    Imports,
    /// The cassettes hold every operation and answer the suite needs.
    Coverage,
    /// The recording, replayed: the recorded answer.
    Replay(usize),
    /// The same call twice: the same answer, the same key.
    Repeat(usize),
    /// The money move's answer faulted: `expect` is the only right outcome.
    Fault {
        cassette: usize,
        fault: Fault,
        /// The outcomes that are right.
        expect: &'static [&'static str],
    },
    /// The connection drops after the provider acted; the host's retry gets the first answer.
    DroppedThenRetried(usize),
    /// A verified notification with one byte of its body changed: refused as unverified.
    Tampered(usize),
}

impl Suite<'_> {
    pub fn scenarios(&self) -> Vec<Scenario> {
        let mut scenarios = vec![
            Scenario {
                name: "the component imports only its world".into(),
                check: Check::Imports,
            },
            Scenario {
                name: "the cassettes cover the contract".into(),
                check: Check::Coverage,
            },
        ];
        for (index, loaded) in self.cassettes.iter().enumerate() {
            let named = |what: &str| format!("{}: {what}", loaded.name);
            scenarios.push(Scenario {
                name: named(&format!(
                    "replayed, answers {}",
                    loaded.cassette.answer_kind()
                )),
                check: Check::Replay(index),
            });
            let cassette = &loaded.cassette;
            if cassette.operation == "verify-event" && cassette.answer_kind() == "ok" {
                scenarios.push(Scenario {
                    name: named("sent again, the same events with the same ids"),
                    check: Check::Repeat(index),
                });
                scenarios.push(Scenario {
                    name: named("a byte of the body changed: refused unverified"),
                    check: Check::Tampered(index),
                });
            }
            if !MONEY_MOVES.contains(&cassette.operation.as_str())
                || !SETTLED.contains(&cassette.answer_kind().as_str())
            {
                continue;
            }
            scenarios.push(Scenario {
                name: named("asked twice, the same key and the same answer"),
                check: Check::Repeat(index),
            });
            scenarios.push(Scenario {
                name: named("the connection drops after the provider acted: unreachable, then the retry's answer"),
                check: Check::DroppedThenRetried(index),
            });
            let money = cassette
                .money_exchange()
                .and_then(|i| cassette.exchanges[i].money.clone())
                .unwrap_or_default();
            let key_in_use = cassette
                .exchanges
                .iter()
                .find_map(|e| e.key_in_use.as_ref());
            // A provider that answers 429 while the same key is still being processed
            // (Checkout.com) says so in its `key_in_use`: a 429 may then be either.
            let too_many = if key_in_use.is_some_and(|r| r.status == 429) {
                UNREACHABLE_OR_IN_FLIGHT
            } else {
                UNREACHABLE
            };
            let faults = [
                (Fault::Status(500), UNREACHABLE, true),
                (Fault::Status(503), UNREACHABLE, true),
                (Fault::Status(429), too_many, true),
                (Fault::Hang, UNREACHABLE, true),
                (Fault::Malformed, UNREACHABLE, true),
                (Fault::Oversize, UNREACHABLE, true),
                (Fault::OtherAmount, UNREACHABLE, money.amount.is_some()),
                (Fault::OtherCurrency, UNREACHABLE, money.currency.is_some()),
                (Fault::KeyInUse, IN_FLIGHT, key_in_use.is_some()),
            ];
            for (fault, expect, applies) in faults {
                if applies {
                    scenarios.push(Scenario {
                        name: named(&format!("{}: {}", describe(fault), expect.join(" or "))),
                        check: Check::Fault {
                            cassette: index,
                            fault,
                            expect,
                        },
                    });
                }
            }
        }
        scenarios
    }

    /// Ok, or what was wrong.
    pub async fn run(&self, scenario: &Scenario) -> Result<(), String> {
        match scenario.check {
            Check::Imports => self.imports(),
            Check::Coverage => self.coverage(),
            Check::Replay(index) => {
                let cassette = self.load(index, None);
                let answer = self.call(cassette).await?;
                self.checked(cassette, &[&answer])?;
                same_as_recorded(&answer, cassette)
            }
            Check::Repeat(index) => {
                let cassette = self.load(index, None);
                let first = self.call(cassette).await?;
                self.player.next_call(None);
                let second = self.call(cassette).await?;
                self.checked(cassette, &[&first, &second])?;
                same_as_recorded(&first, cassette)?;
                same_as_recorded(&second, cassette).map_err(|why| format!("asked again: {why}"))
            }
            Check::DroppedThenRetried(index) => {
                let cassette = self.load(index, Some(Fault::DroppedAfterActing));
                let first = self.call(cassette).await?;
                outcome_is(&first, UNREACHABLE)?;
                self.player.next_call(None);
                let retried = self.call(cassette).await?;
                self.checked(cassette, &[&first, &retried])?;
                same_as_recorded(&retried, cassette).map_err(|why| format!("retried: {why}"))
            }
            Check::Tampered(index) => {
                let cassette = self.load(index, None);
                let mut tampered = cassette.clone();
                let body = tampered.args["body"].as_str().unwrap_or_default();
                tampered.args["body"] = Value::String(tamper(body));
                let answer = self.call(&tampered).await?;
                self.checked(cassette, &[&answer])?;
                match answer["refused"]["outcome"].as_str() {
                    Some("unverified") => Ok(()),
                    _ => Err(format!("a tampered notification was read: {answer}")),
                }
            }
            Check::Fault {
                cassette: index,
                fault,
                expect,
            } => {
                let cassette = self.load(index, Some(fault));
                let answer = self.call(cassette).await?;
                self.checked(cassette, &[&answer])?;
                outcome_is(&answer, expect)?;
                let wrong_hold = cassette.operation == "hold"
                    && matches!(fault, Fault::OtherAmount | Fault::OtherCurrency);
                if wrong_hold {
                    self.released(cassette)?;
                }
                Ok(())
            }
        }
    }

    /// Plays cassette `index` (a hold with a void's exchanges to release it) with `fault`.
    fn load(&self, index: usize, fault: Option<Fault>) -> &Cassette {
        let cassette = &self.cassettes[index].cassette;
        let mut exchanges = cassette.exchanges.clone();
        if cassette.operation == "hold" {
            exchanges.extend(self.release_of(cassette));
        }
        self.player.load(exchanges, fault);
        // What earlier scenarios left: the player keeps the requests, these are not needed.
        self.adapter.take_exchanges();
        self.adapter.take_logged();
        cassette
    }

    /// How the provider answers the release of this hold: a recorded void's exchanges, with the
    /// void's authorisation replaced by the hold's reference; no money marked, so no fault.
    fn release_of(&self, hold: &Cassette) -> Vec<RecordedExchange> {
        let (Some(reference), Some(void)) = (
            hold.answer.get("detail").and_then(Value::as_str),
            self.cassettes
                .iter()
                .map(|l| &l.cassette)
                .find(|c| c.operation == "void" && SETTLED.contains(&c.answer_kind().as_str())),
        ) else {
            return Vec::new();
        };
        let Some(voided) = void.args.get("authorisation").and_then(Value::as_str) else {
            return Vec::new();
        };
        void.exchanges
            .iter()
            .filter_map(|exchange| {
                let text = serde_json::to_string(exchange)
                    .ok()?
                    .replace(voided, reference);
                let mut exchange: RecordedExchange = serde_json::from_str(&text).ok()?;
                exchange.money = None;
                exchange.key_in_use = None;
                Some(exchange)
            })
            .collect()
    }

    async fn call(&self, cassette: &Cassette) -> Result<Value, String> {
        let operation = operation_named(&cassette.operation).map_err(|e| e.to_string())?;
        call(self.adapter, operation, cassette.args.clone())
            .await
            .map_err(|e| e.to_string())
    }

    /// Text that is never a card number the adapter was given: the card reference the host
    /// passed when it matches the adapter's declared pattern (older Adyen ids are 16 digits,
    /// some Luhn-valid: the host leaves them alone, and so does the suite), and the values of
    /// the configuration (a test key may be mostly zeros).
    fn known<'c>(&'c self, cassette: &'c Cassette) -> Vec<&'c str> {
        let own = cassette
            .args
            .get("card_ref")
            .and_then(Value::as_str)
            .filter(|r| self.adapter.is_own_reference(r));
        own.into_iter()
            .chain(self.configured.iter().map(String::as_str))
            .collect()
    }

    /// What every scenario checks of the requests sent, the lines logged and the `answers`
    /// given (a refusal's or an outage's text may not hold a card number either).
    fn checked(&self, cassette: &Cassette, answers: &[&Value]) -> Result<(), String> {
        let sent = self.player.sent();
        if let Some(unknown) = sent.iter().find(|s| s.matched.is_none()) {
            return Err(format!(
                "the adapter sent {} {}, which no exchange of the cassette answers",
                unknown.method, unknown.path
            ));
        }
        let known = self.known(cassette);
        if let Some((request, at)) = sent
            .iter()
            .find_map(|s| card_number_in(s, &known).map(|at| (s, at)))
        {
            return Err(format!(
                "{} {}: {at} holds a card number",
                request.method, request.path
            ));
        }
        if let Some((nth, line)) = self
            .adapter
            .take_logged()
            .iter()
            .enumerate()
            .find(|(_, line)| holds(&line.message, &known))
        {
            return Err(format!(
                "line {} the adapter logged (at {:?}) holds a card number",
                nth + 1,
                line.level
            ));
        }
        if let Some(at) = answers
            .iter()
            .find_map(|answer| json_card_number_pointer(answer, &|text: &str| holds(text, &known)))
        {
            return Err(format!(
                "the adapter's answer holds a card number at {}",
                pointer_or_whole(&at)
            ));
        }
        if let (Some(key), Some(money)) = (cassette.idempotency_key(), cassette.money_exchange())
            && let Some(request) = sent
                .iter()
                .find(|s| s.matched == Some(money) && !carries(s, key, cassette.key_header()))
        {
            return Err(format!(
                "{} {} moves money without the host's idempotency key {key:?}",
                request.method, request.path
            ));
        }
        Ok(())
    }

    /// A hold answered for the wrong amount or currency was released.
    fn released(&self, hold: &Cassette) -> Result<(), String> {
        let release_from = hold.exchanges.len();
        if self.release_of(hold).is_empty() {
            return Err(
                "no approved or pending void cassette shows how this provider releases a hold"
                    .into(),
            );
        }
        if self
            .player
            .sent()
            .iter()
            .any(|s| s.matched.is_some_and(|i| i >= release_from))
        {
            Ok(())
        } else {
            Err(
                "the hold the provider made for the wrong amount or currency was not released"
                    .into(),
            )
        }
    }

    fn imports(&self) -> Result<(), String> {
        let info = courier_plugins::inspect(self.bytes).map_err(|e| e.to_string())?;
        let outside: Vec<&str> = info
            .imports
            .iter()
            .filter(|i| !i.granted)
            .map(|i| i.name.as_str())
            .collect();
        if outside.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "imports outside the payment-adapter world (each traps when called): {}",
                outside.join(", ")
            ))
        }
    }

    fn coverage(&self) -> Result<(), String> {
        let mut missing: Vec<String> = COVERAGE
            .iter()
            .filter(|(operation, kinds)| {
                !self.cassettes.iter().any(|l| {
                    l.cassette.operation == *operation
                        && kinds.contains(&l.cassette.answer_kind().as_str())
                })
            })
            .map(|(operation, kinds)| format!("{operation} answering {}", kinds.join(" or ")))
            .collect();
        // A pending move ends by the provider's notification: the suite must see one read.
        let pends = self
            .cassettes
            .iter()
            .any(|l| l.cassette.answer_kind() == "pending");
        let notifies = self
            .cassettes
            .iter()
            .any(|l| l.cassette.operation == "verify-event" && l.cassette.answer_kind() == "ok");
        if pends && !notifies {
            missing.push(
                "verify-event answering ok (a move answers pending: the provider's notification \
                 ends it)"
                    .into(),
            );
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("no cassette of {}", missing.join("; ")))
        }
    }
}

/// `body` with one byte changed and its shape kept: the first digit moved on by one (a JSON
/// body stays JSON), else the last byte.
fn tamper(body: &str) -> String {
    let mut bytes = body.as_bytes().to_vec();
    match bytes.iter().position(u8::is_ascii_digit) {
        Some(at) => bytes[at] = b'0' + (bytes[at] - b'0' + 1) % 10,
        None => match bytes.last_mut() {
            Some(last) => *last = if *last == b'x' { b'y' } else { b'x' },
            None => bytes.push(b'x'),
        },
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// How a fault reads in a scenario's name.
fn describe(fault: Fault) -> String {
    match fault {
        Fault::Status(status) => format!("the provider answers {status}"),
        Fault::Hang => "the provider hangs past the deadline".into(),
        Fault::DroppedAfterActing => "the connection drops after the provider acted".into(),
        Fault::Malformed => "the answer is cut short".into(),
        Fault::Oversize => "the answer is larger than the host accepts".into(),
        Fault::OtherAmount => "the answer is for another amount".into(),
        Fault::OtherCurrency => "the answer is in another currency".into(),
        Fault::KeyInUse => "the key is still in use at the provider".into(),
    }
}

fn same_as_recorded(answer: &Value, cassette: &Cassette) -> Result<(), String> {
    if answer == &cassette.answer {
        Ok(())
    } else {
        Err(format!(
            "answered {answer}, the recording answered {}",
            cassette.answer
        ))
    }
}

fn outcome_is(answer: &Value, expect: &[&str]) -> Result<(), String> {
    match answer.get("outcome").and_then(Value::as_str) {
        Some(outcome) if expect.contains(&outcome) => Ok(()),
        _ => Err(format!(
            "answered {answer}; only {} is right",
            expect.join(" or ")
        )),
    }
}

/// Whether the request carries `key` where the recording had it: as the value of `header`, or
/// (with none) in its body.
fn carries(sent: &Sent, key: &str, header: Option<&str>) -> bool {
    match header {
        Some(header) => sent
            .headers
            .iter()
            .any(|(name, value)| name.eq_ignore_ascii_case(header) && value == key),
        None => String::from_utf8_lossy(&sent.body).contains(key),
    }
}

/// Where the request holds a card number, if it does: its URL, the header it is in (named), or
/// its body (the field, when the body is JSON or a form). Text in `known` is left out.
fn card_number_in(sent: &Sent, known: &[&str]) -> Option<String> {
    let found = |text: &str| holds(text, known);
    if found(&sent.url) {
        return Some("the URL".into());
    }
    if let Some((name, _)) = sent
        .headers
        .iter()
        .find(|(name, value)| found(name) || found(value))
    {
        return Some(format!("the header `{name}`"));
    }
    let body = String::from_utf8_lossy(&sent.body);
    if !found(&body) {
        return None;
    }
    if let Ok(json) = serde_json::from_slice::<Value>(&sent.body) {
        if let Some(at) = json_card_number_pointer(&json, &found) {
            return Some(format!("the body at {}", pointer_or_whole(&at)));
        }
    } else if let Some((field, _)) =
        url::form_urlencoded::parse(&sent.body).find(|(field, value)| found(field) || found(value))
    {
        return Some(format!("the body's field `{field}`"));
    }
    Some("the body".into())
}

fn pointer_or_whole(pointer: &str) -> String {
    if pointer.is_empty() {
        "the whole of it".into()
    } else {
        format!("`{pointer}`")
    }
}

/// Whether `text` holds a card number once every occurrence of `known` is taken out.
fn holds(text: &str, known: &[&str]) -> bool {
    let mut text = text.to_owned();
    for known in known.iter().filter(|k| !k.is_empty()) {
        text = text.replace(known, " ");
    }
    contains_card_number(&text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sent(url: &str, body: &str) -> Sent {
        Sent {
            method: "POST",
            url: url.to_owned(),
            path: String::new(),
            headers: vec![("Idempotency-Key".into(), "job_1_hold".into())],
            body: body.as_bytes().to_vec(),
            matched: None,
        }
    }

    #[test]
    fn a_card_number_is_found_in_the_url_or_the_body_however_it_is_spaced() {
        let plain = "https://api.example/v1/x";
        assert_eq!(
            card_number_in(&sent(plain, "number=4000 0566 5566 5556&cvc=123"), &[]),
            Some("the body's field `number`".into())
        );
        assert_eq!(
            card_number_in(
                &sent("https://api.example/v1/cards/4000056655665556", ""),
                &[]
            ),
            Some("the URL".into())
        );
        // The adapter's own reference is left alone; any other number is still found.
        let own = ["4000056655665556"];
        assert_eq!(
            card_number_in(
                &sent("https://api.example/v1/cards/4000056655665556", ""),
                &own
            ),
            None
        );
        assert_eq!(
            card_number_in(
                &sent(plain, "ref=4000056655665556&number=4242424242424242"),
                &own
            ),
            Some("the body's field `number`".into())
        );
        // One digit off fails the Luhn check; amounts and timestamps are not card numbers.
        assert_eq!(
            card_number_in(&sent(plain, "number=4000056655665557"), &[]),
            None
        );
        assert_eq!(
            card_number_in(&sent(plain, "amount=1290&created=1764300000"), &[]),
            None
        );
    }

    #[test]
    fn a_card_number_in_json_is_named_by_its_pointer_and_in_a_header_by_its_name() {
        let plain = "https://api.example/v1/x";
        let body = r#"{"amount": 1290, "source": {"card": {"number": "4242424242424242"}}}"#;
        assert_eq!(
            card_number_in(&sent(plain, body), &[]),
            Some("the body at `/source/card/number`".into())
        );
        let whole = r#"{"pan": 4242424242424242}"#;
        assert_eq!(
            card_number_in(&sent(plain, whole), &[]),
            Some("the body at `/pan`".into())
        );
        let mut request = sent(plain, "");
        request
            .headers
            .push(("X-Card".into(), "4242 4242 4242 4242".into()));
        assert_eq!(
            card_number_in(&request, &[]),
            Some("the header `X-Card`".into())
        );
    }

    #[test]
    fn a_configured_secret_is_never_taken_for_a_card_number() {
        // A test key of nineteen zeros passes the Luhn check.
        let key = "sk_test_0000000000000000000";
        let mut request = sent("https://api.example/v1/x", "");
        request
            .headers
            .push(("Authorization".into(), format!("Bearer {key}")));
        assert_eq!(
            card_number_in(&request, &[]),
            Some("the header `Authorization`".into())
        );
        assert_eq!(card_number_in(&request, &[key]), None);
        // Other text around the secret is still scanned.
        request
            .headers
            .push(("X-Note".into(), format!("{key} 4242424242424242")));
        assert_eq!(
            card_number_in(&request, &[key]),
            Some("the header `X-Note`".into())
        );
    }

    #[test]
    fn an_answer_is_scanned_for_card_numbers_too() {
        let found = |text: &str| holds(text, &[]);
        let refusal = json!({"refused": {"outcome": "unreachable",
            "message": "the provider refused card 4111 1111 1111 1111"}});
        assert_eq!(
            json_card_number_pointer(&refusal, &found),
            Some("/refused/message".into())
        );
        let approved = json!({"outcome": "approved", "detail": "pi_3Nf0a2"});
        assert_eq!(json_card_number_pointer(&approved, &found), None);
    }

    #[test]
    fn the_key_is_looked_for_where_the_recording_had_it() {
        let request = sent(
            "https://api.example/v1/x",
            r#"{"metadata":{"hold_key":"job_2_hold"}}"#,
        );
        assert!(carries(&request, "job_1_hold", Some("idempotency-key")));
        assert!(carries(&request, "job_1_hold", Some("Idempotency-Key")));
        // In the body but not in the header the provider reads: not carried.
        assert!(!carries(&request, "job_2_hold", Some("idempotency-key")));
        assert!(carries(&request, "job_2_hold", None));
        assert!(!carries(&request, "job_3_hold", None));
    }
}
