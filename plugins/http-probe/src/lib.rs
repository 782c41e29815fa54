//! A payment adapter for the host's tests, never for production: it
//! declares `allowed.example` (and `localhost`, to prove the address check
//! runs after DNS) as its hosts, and `authorise` sends a GET to whatever
//! URL it finds in the hold's `card-ref`, so tests can point it anywhere.
//! The host's answer comes back as the outcome: `approved("<status>")`, or
//! `unreachable("<error>")` with the HTTP error's debug text. `config.get`
//! is exposed through `setup-card-form`: the client secret is the value of
//! the config key named by the merchant argument (with the merchant's
//! `contact_email` beside it when the host gave one), unless the config key
//! `card_form_document` is set, which is then the document as it is (a
//! third provider's card form for the console's tests); `attach-card` takes
//! a reference `card_probe_` and four digits as a Visa ending in them. A config key `refuse`
//! makes `describe` refuse the configuration with its value. It declares
//! sixteen digits as its reference pattern, logs each URL it sends to, and
//! reads notifications signed with the config key `event_secret` (header
//! `x-probe-signature`), one event per line: `<id> <reference> <kind>`.

#[cfg(target_family = "wasm")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit/payments",
        world: "payment-adapter",
    });

    use courier::payments::log::{Level, log};
    use courier::payments::outbound_http::{self, Method, Request};
    use courier::payments::types::{
        AdapterInfo, AttachRefusal, AttachedCard, CaptureRequest, Card, CardForm, CardFormRequest,
        EventKind, HoldRequest, LookupFailure, Outcome, PaymentPage, PaymentState, ProviderEvent,
        RefundRequest, VoidRequest,
    };

    struct Component;

    export!(Component);

    impl exports::courier::payments::adapter::Guest for Component {
        fn describe() -> Result<AdapterInfo, String> {
            // The configuration key `refuse` makes the probe refuse its configuration.
            if let Some(reason) = courier::payments::config::get("refuse") {
                return Err(reason);
            }
            Ok(AdapterInfo {
                name: "http-probe".into(),
                version: "1.0.0".into(),
                allowed_hosts: vec!["allowed.example".into(), "localhost".into()],
                reference_pattern: Some("[0-9]{16}".into()),
            })
        }

        fn setup_card_form(request: CardFormRequest) -> Result<CardForm, String> {
            if let Some(document) = courier::payments::config::get("card_form_document") {
                return Ok(CardForm {
                    document,
                    customer_id: "cus_probe".into(),
                });
            }
            let secret = courier::payments::config::get(&request.merchant).ok_or("no such key")?;
            let document = match request.contact_email {
                Some(email) => {
                    format!("{{\"client_secret\":{secret:?},\"contact_email\":{email:?}}}")
                }
                None => format!("{{\"client_secret\":{secret:?}}}"),
            };
            Ok(CardForm {
                document,
                customer_id: "cus_probe".into(),
            })
        }

        fn attach_card(_customer: String, card_ref: String) -> Result<AttachedCard, AttachRefusal> {
            match card_ref.strip_prefix("card_probe_") {
                Some(last) if last.len() == 4 && last.bytes().all(|b| b.is_ascii_digit()) => {
                    Ok(AttachedCard {
                        reference: card_ref.clone(),
                        card: Card {
                            brand: "visa".into(),
                            last_four: last.into(),
                            expiry_month: 12,
                            expiry_year: 2034,
                        },
                    })
                }
                _ => Err(AttachRefusal::UnknownReference(card_ref)),
            }
        }

        fn authorise(hold: HoldRequest) -> Outcome {
            log(Level::Info, &format!("sending to {}", hold.card_ref));
            let request = Request {
                method: Method::Get,
                url: hold.card_ref,
                headers: vec![("accept".into(), "application/json".into())],
                body: Vec::new(),
            };
            match outbound_http::send(&request) {
                Ok(r) => Outcome::Approved(r.status.to_string()),
                Err(e) => Outcome::Unreachable(format!("{e:?}")),
            }
        }

        fn capture(c: CaptureRequest) -> Outcome {
            // A call that computes and never answers: the host must stop it at its deadline
            // and keep its thread for others meanwhile.
            if c.idempotency_key == "spin" {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            Outcome::Unreachable("not implemented by the probe".into())
        }

        fn void(_r: VoidRequest) -> Outcome {
            Outcome::Unreachable("not implemented by the probe".into())
        }

        fn refund(_r: RefundRequest) -> Outcome {
            Outcome::Unreachable("not implemented by the probe".into())
        }

        fn retrieve(_reference: String) -> Result<PaymentState, LookupFailure> {
            Err(LookupFailure::Unreachable(
                "not implemented by the probe".into(),
            ))
        }

        fn list_payments(_since: i64, _after: Option<String>) -> Result<PaymentPage, String> {
            Err("not implemented by the probe".into())
        }

        fn verify_event(
            headers: Vec<(String, String)>,
            body: Vec<u8>,
        ) -> Result<Vec<ProviderEvent>, String> {
            let secret = courier::payments::config::get("event_secret").ok_or("no event_secret")?;
            let signed = headers
                .iter()
                .any(|(name, value)| name == "x-probe-signature" && *value == secret);
            if !signed {
                return Err("the signature does not match".into());
            }
            let text = String::from_utf8(body).map_err(|_| "not text")?;
            text.lines()
                .map(|line| {
                    let mut words = line.split_whitespace();
                    let (Some(id), Some(reference), Some(kind)) =
                        (words.next(), words.next(), words.next())
                    else {
                        return Err(format!("cannot read {line:?}"));
                    };
                    let kind = match kind {
                        "held" => EventKind::Held,
                        "captured" => EventKind::Captured,
                        "released" => EventKind::Released,
                        "refunded" => EventKind::Refunded,
                        "capture-failed" => EventKind::CaptureFailed("refused".into()),
                        "refund-failed" => EventKind::RefundFailed("refused".into()),
                        other => return Err(format!("unknown kind {other:?}")),
                    };
                    Ok(ProviderEvent {
                        id: id.into(),
                        reference: reference.into(),
                        kind,
                        amount_minor: None,
                        currency: None,
                        request_key: None,
                    })
                })
                .collect()
        }
    }
}
