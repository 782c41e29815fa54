//! A payment adapter for the host's tests, never for production: it
//! declares `allowed.example` (and `localhost`, to prove the address check
//! runs after DNS) as its hosts, and `authorise` sends a GET to whatever
//! URL it finds in the hold's `card-ref`, so tests can point it anywhere.
//! The host's answer comes back as the outcome: `approved("<status>")`, or
//! `unreachable("<error>")` with the HTTP error's debug text. `config.get`
//! is exposed through `setup-card-form`: the client secret is the value of
//! the config key named by the merchant argument. A config key `refuse`
//! makes `describe` refuse the configuration with its value.

#[cfg(target_family = "wasm")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit/payments",
        world: "payment-adapter",
    });

    use courier::payments::outbound_http::{self, Method, Request};
    use courier::payments::types::{
        AdapterInfo, AttachRefusal, CaptureRequest, Card, CardForm, HoldRequest, LookupFailure,
        Outcome, PaymentPage, PaymentState, RefundRequest, VoidRequest,
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
            })
        }

        fn setup_card_form(merchant: String) -> Result<CardForm, String> {
            let secret = courier::payments::config::get(&merchant).ok_or("no such key")?;
            Ok(CardForm {
                client_secret: secret,
                customer_id: "cus_probe".into(),
            })
        }

        fn attach_card(_customer: String, card_ref: String) -> Result<Card, AttachRefusal> {
            Err(AttachRefusal::UnknownReference(card_ref))
        }

        fn authorise(hold: HoldRequest) -> Outcome {
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

        fn capture(_c: CaptureRequest) -> Outcome {
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
    }
}
