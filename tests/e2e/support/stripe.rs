//! A local stand-in for Stripe's API over HTTPS, for the live payment adapter's tests. It
//! follows Stripe's published API reference for exactly the endpoints the adapter uses:
//! customers, SetupIntents (confirmed from the card form that its stand-in of Stripe.js, at
//! `/v3/`, draws in a frame, with Stripe's documented test card numbers), PaymentMethods
//! (Stripe's documented test ids such as
//! `pm_card_visa` and `pm_card_visa_chargeDeclinedInsufficientFunds`), manual-capture
//! PaymentIntents with capture and cancel, and refunds, with real state per object, Stripe's
//! error body (`{"error": {"type", "code", "decline_code", "message", …}}`) and idempotent
//! requests (same key and parameters: the saved answer again, with `Idempotent-Replayed`;
//! same key, other parameters: 400 `idempotency_error`; a key still in flight: 409).
//!
//! On command it injects faults: latency (fixed or spread), 5xx, hangs, malformed and oversize
//! bodies, holds for another amount or currency, and "act, then drop the connection" (the
//! provider did it and nobody heard). It records every PaymentIntent, so tests count holds.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use rand::Rng;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::chaos::{Drawn, RequestChaos, spread};
use super::tls::tls;

/// The secret key the stand-in accepts.
pub const SECRET_KEY: &str = "sk_test_courier_stand_in";
/// The publishable key the stand-in's Stripe.js confirms card forms with.
pub const PUBLISHABLE_KEY: &str = "pk_test_courier_stand_in";

/// How long the stand-in takes to answer.
#[derive(Clone, Copy, Debug)]
pub enum Latency {
    None,
    Fixed(Duration),
    /// Log-normal with this median and 99th percentile.
    Spread {
        median: Duration,
        p99: Duration,
    },
}

/// What a fault does to a request it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer this status with an `api_error`, without acting.
    Status(u16),
    /// Wait this long, then act and answer (the client has usually given up by then).
    Hang(Duration),
    /// Act (and save the idempotent result), then close the connection without answering.
    ActThenDrop,
    /// Act, then close the connection without answering, and forget the key: as if the
    /// request were sent again after Stripe stopped keeping its idempotent result (24 hours).
    ActForgetThenDrop,
    /// Answer 200 with a body that is not JSON, without acting.
    Malformed,
    /// Answer 200 with a 2 MiB body, without acting.
    Oversize,
    /// Act, but hold one unit more than asked.
    WrongAmount,
    /// Act, but hold in another currency.
    WrongCurrency,
    /// The issuer declines the PaymentIntent with this `code` and `decline_code` (a card that
    /// worked when it was saved, and has since been reported lost, expired, ...).
    Decline(&'static str, &'static str),
}

/// A PaymentIntent as the stand-in keeps it.
#[derive(Clone, Debug)]
pub struct Intent {
    pub id: String,
    pub amount: i64,
    pub currency: String,
    pub customer: String,
    pub payment_method: String,
    /// Stripe's statuses: `requires_capture` (a hold), `succeeded`, `canceled`,
    /// `requires_payment_method` (declined).
    pub status: String,
    pub amount_received: i64,
    pub amount_refunded: i64,
    pub idempotency_key: Option<String>,
    /// Unix seconds.
    pub created: i64,
    /// `metadata[…]` of the creating request.
    pub metadata: BTreeMap<String, String>,
    /// The Charge the confirmation made (its refunds are counted on it).
    pub latest_charge: Option<String>,
}

/// How a test card behaves when money is asked for (Stripe's test PaymentMethods).
#[derive(Clone, Copy, Debug)]
struct TestCard {
    brand: &'static str,
    last4: &'static str,
    /// `(code, decline_code, message)` of the decline, None when it works.
    decline: Option<(&'static str, &'static str, &'static str)>,
    /// Stripe's declining test cards "can't be attached to a Customer object": attaching one
    /// is declined, except `pm_card_chargeCustomerFail`, which attaches and then declines.
    attaches: bool,
}

/// Stripe's documented test PaymentMethod ids used by the tests.
fn test_card(id: &str) -> Option<TestCard> {
    let works = |brand, last4| {
        Some(TestCard {
            brand,
            last4,
            decline: None,
            attaches: true,
        })
    };
    let declined = |last4, code, decline_code, message| {
        Some(TestCard {
            brand: "visa",
            last4,
            decline: Some((code, decline_code, message)),
            attaches: false,
        })
    };
    match id {
        "pm_card_visa" => works("visa", "4242"),
        "pm_card_mastercard" => works("mastercard", "4444"),
        "pm_card_chargeCustomerFail" => Some(TestCard {
            brand: "visa",
            last4: "0341",
            decline: Some((
                "card_declined",
                "generic_decline",
                "Your card was declined.",
            )),
            attaches: true,
        }),
        "pm_card_visa_chargeDeclined" => declined(
            "0002",
            "card_declined",
            "generic_decline",
            "Your card was declined.",
        ),
        "pm_card_visa_chargeDeclinedInsufficientFunds" => declined(
            "9995",
            "card_declined",
            "insufficient_funds",
            "Your card has insufficient funds.",
        ),
        "pm_card_visa_chargeDeclinedLostCard" => declined(
            "9987",
            "card_declined",
            "lost_card",
            "Your card was declined.",
        ),
        "pm_card_visa_chargeDeclinedStolenCard" => declined(
            "9979",
            "card_declined",
            "stolen_card",
            "Your card was declined.",
        ),
        "pm_card_chargeDeclinedExpiredCard" => declined(
            "0069",
            "expired_card",
            "expired_card",
            "Your card has expired.",
        ),
        "pm_card_chargeDeclinedIncorrectCvc" => declined(
            "0127",
            "incorrect_cvc",
            "incorrect_cvc",
            "Your card's security code is incorrect.",
        ),
        "pm_card_chargeDeclinedProcessingError" => declined(
            "0119",
            "processing_error",
            "processing_error",
            "An error occurred while processing your card. Try again in a little bit.",
        ),
        _ => None,
    }
}

struct PaymentMethod {
    customer: Option<String>,
    card: TestCard,
}

struct SetupIntent {
    client_secret: String,
    customer: Option<String>,
    usage: String,
    /// `requires_payment_method` until a card form confirms it, then `succeeded`.
    status: &'static str,
    payment_method: Option<String>,
}

impl SetupIntent {
    fn json(&self, id: &str) -> Value {
        json!({"id": id, "object": "setup_intent", "client_secret": self.client_secret,
               "customer": self.customer, "usage": self.usage, "status": self.status,
               "payment_method": self.payment_method, "payment_method_types": ["card"]})
    }
}

/// Stripe's documented test card numbers, as a card form takes them, and the test
/// PaymentMethod that behaves the same.
fn test_card_by_number(number: &str) -> Option<TestCard> {
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    let id = match digits.as_str() {
        "4242424242424242" => "pm_card_visa",
        "5555555555554444" => "pm_card_mastercard",
        "4000000000000002" => "pm_card_visa_chargeDeclined",
        "4000000000009995" => "pm_card_visa_chargeDeclinedInsufficientFunds",
        "4000000000009987" => "pm_card_visa_chargeDeclinedLostCard",
        "4000000000000069" => "pm_card_chargeDeclinedExpiredCard",
        "4000000000000127" => "pm_card_chargeDeclinedIncorrectCvc",
        _ => return None,
    };
    test_card(id)
}

/// The answer to one idempotency key: None while its first request is still running.
struct Saved {
    fingerprint: String,
    answer: Option<(u16, Value)>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Customers by id: when made (Unix seconds, and as an instant for search) and their
    /// `metadata[courier_merchant]`.
    customers: HashMap<String, (i64, std::time::Instant, String)>,
    setup_intents: HashMap<String, SetupIntent>,
    payment_methods: HashMap<String, PaymentMethod>,
    intents: HashMap<String, Intent>,
    refunds: HashMap<String, Value>,
    saved: HashMap<String, Saved>,
    faults: Vec<(String, Fault, usize)>,
    latency: Option<Latency>,
    /// Random faults on every request, from a seeded generator ([`StripeStandIn::unleash`]).
    chaos: Option<RequestChaos>,
    /// The pause of every request so far (what the provider's latency really was).
    paused: Vec<Duration>,
    /// The account's key was rolled: every request is answered 401.
    key_revoked: bool,
}

impl State {
    /// An id in Stripe's shape: the object's prefix and 24 letters and digits (never a run
    /// of digits that reads as a card number). Sorted by creation through `next_id`.
    fn id(&mut self, prefix: &str) -> String {
        const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        self.next_id += 1;
        let mut rng = rand::rng();
        let tail: String = (0..18)
            .map(|_| char::from(LETTERS[rng.random_range(0..LETTERS.len())]))
            .collect();
        format!("{prefix}_{:06}{tail}", self.next_id)
    }

    /// A PaymentMethod by id: one made by a card form, or a test id (which, as at Stripe,
    /// makes a fresh PaymentMethod when attached).
    fn card_of(&self, id: &str) -> Option<(Option<String>, TestCard)> {
        match self.payment_methods.get(id) {
            Some(pm) => Some((pm.customer.clone(), pm.card)),
            None => test_card(id).map(|card| (None, card)),
        }
    }

    /// A random fault and pause for the next request when chaos is on.
    fn draw_chaos(&mut self) -> Option<(Option<Fault>, Duration)> {
        let (drawn, pause) = self.chaos.as_mut()?.draw();
        let fault = drawn.map(|drawn| match drawn {
            Drawn::Unavailable => Fault::Status(503),
            Drawn::ActThenDrop => Fault::ActThenDrop,
            Drawn::Hang(pause) => Fault::Hang(pause),
        });
        Some((fault, pause))
    }

    fn take_fault(&mut self, path: &str) -> Option<Fault> {
        let position = self
            .faults
            .iter()
            .position(|(prefix, _, left)| *left > 0 && matches_fault_path(prefix, path))?;
        let (_, fault, left) = &mut self.faults[position];
        *left -= 1;
        Some(*fault)
    }
}

/// Whether a fault injected for `pattern` meets a request to `path`: every path it begins,
/// or, ending with `$`, that path only (`/v1/payment_intents$`: the listing, not one intent).
fn matches_fault_path(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('$') {
        Some(exact) => path == exact,
        None => path.starts_with(pattern),
    }
}

pub struct StripeStandIn {
    pub port: u16,
    /// PEM of the certificate authority that issued the stand-in's certificate.
    pub ca_path: PathBuf,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl StripeStandIn {
    pub async fn start() -> Self {
        let (acceptor, ca_pem) = tls();
        let ca_path = std::env::temp_dir().join(format!("stripe-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&ca_path, ca_pem).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let serving = Arc::clone(&state);
        // Each request is handled in a task of its own, as a real provider finishes what it
        // received whether or not the client is still there.
        let task = super::tls::serve(listener, Some(acceptor), move |request| {
            let state = Arc::clone(&serving);
            async move {
                match tokio::spawn(handle(state, request)).await {
                    Ok(answer) => answer,
                    Err(e) => Err(std::io::Error::other(e)),
                }
            }
        });
        Self {
            port,
            ca_path,
            state,
            task,
        }
    }

    pub fn api_base(&self) -> String {
        format!("https://localhost:{}", self.port)
    }

    /// The live adapter's configuration file (`COURIER_LIVE_PAYMENT_CONFIG`) for this stand-in,
    /// removed with it.
    pub fn adapter_config(&self) -> PathBuf {
        let path = self.config_path();
        let config = json!({"secret_key": SECRET_KEY, "api_base": self.api_base()});
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }

    /// The service's environment for a live adapter talking to this stand-in.
    pub fn service_env(&self) -> Vec<(String, String)> {
        super::tls::live_adapter_env(
            &stripe_adapter_path(),
            &self.adapter_config(),
            &self.ca_path,
        )
    }

    /// The adapter's configuration with what a page needs to draw the card form: the
    /// publishable key, and Stripe.js from this stand-in.
    pub fn card_form_config(&self) -> Value {
        json!({"secret_key": SECRET_KEY, "api_base": self.api_base(),
               "publishable_key": PUBLISHABLE_KEY, "js_url": format!("{}/v3/", self.api_base())})
    }

    /// [`StripeStandIn::service_env`] with an adapter configuration of the test's own.
    pub fn service_env_configured(&self, config: &Value) -> Vec<(String, String)> {
        let path = self.config_path();
        std::fs::write(&path, config.to_string()).unwrap();
        super::tls::live_adapter_env(&stripe_adapter_path(), &path, &self.ca_path)
    }

    /// Rolls the account's key (`true`): from now on Stripe answers every request 401, as it
    /// does for a key that was revoked; `false` brings it back.
    #[allow(dead_code)]
    pub fn revoke_key(&self, revoked: bool) {
        self.state.lock().unwrap().key_revoked = revoked;
    }

    pub fn set_latency(&self, latency: Latency) {
        self.state.lock().unwrap().latency = Some(latency);
    }

    /// The next `times` requests whose path starts with `path` (is `path`, when it ends with
    /// `$`) meet `fault`.
    pub fn inject(&self, path: &str, fault: Fault, times: usize) {
        self.state
            .lock()
            .unwrap()
            .faults
            .push((path.to_owned(), fault, times));
    }

    /// Turns chaos on, drawn from `seed`: every request pauses log-normally (`median`, `p99`)
    /// and meets a fault with probability `fault_rate` (a 503, an answer lost after acting, or
    /// acting after `hang`). For the chaos run (`tests/chaos`).
    #[allow(dead_code)]
    pub fn unleash(
        &self,
        seed: u64,
        median: Duration,
        p99: Duration,
        fault_rate: f64,
        hang: Duration,
    ) {
        self.state.lock().unwrap().chaos =
            Some(RequestChaos::new(seed, median, p99, fault_rate, hang));
    }

    /// Turns chaos off: every request is answered at once, without faults.
    #[allow(dead_code)]
    pub fn calm(&self) {
        self.state.lock().unwrap().chaos = None;
    }

    /// Keeps `key` in use for `held`, as if a request with it were still being worked on
    /// (a process that sent it died; Stripe has not finished it): every request with the key
    /// meanwhile gets Stripe's 409 `idempotency_key_in_use`. Then the first request ends
    /// without having acted, and the key is free.
    pub fn keep_in_flight(&self, key: &str, held: Duration) {
        self.state.lock().unwrap().saved.insert(
            key.to_owned(),
            Saved {
                fingerprint: String::new(),
                answer: None,
            },
        );
        let (state, key) = (Arc::clone(&self.state), key.to_owned());
        tokio::spawn(async move {
            tokio::time::sleep(held).await;
            state.lock().unwrap().saved.remove(&key);
        });
    }

    /// A hold made at the provider by someone other than the service (another integration
    /// of the account, or a request whose charge was lost): `amount` minor units of
    /// `currency` on the account's first customer and card. Answers its id.
    pub fn hold_elsewhere(&self, amount: i64, currency: &str) -> String {
        let mut state = self.state.lock().unwrap();
        let (payment_method, customer) = state
            .payment_methods
            .iter()
            .find_map(|(id, pm)| Some((id.clone(), pm.customer.clone()?)))
            .expect("a card attached to a customer");
        let id = state.id("pi");
        let charge = state.id("ch");
        state.intents.insert(
            id.clone(),
            Intent {
                id: id.clone(),
                amount,
                currency: currency.to_lowercase(),
                customer,
                payment_method,
                status: "requires_capture".into(),
                amount_received: 0,
                amount_refunded: 0,
                idempotency_key: None,
                created: chrono_now(),
                metadata: BTreeMap::new(),
                latest_charge: Some(charge),
            },
        );
        id
    }

    /// Cancels a PaymentIntent as the account's dashboard would, behind the service's back.
    pub fn cancel_elsewhere(&self, id: &str) {
        let mut state = self.state.lock().unwrap();
        let intent = state.intents.get_mut(id).expect("a PaymentIntent");
        intent.status = "canceled".into();
    }

    /// What Stripe.js does in the merchant's browser when the card form is submitted with a
    /// test card: confirms the SetupIntent, which saves a new PaymentMethod to its customer.
    pub fn complete_card_form(&self, client_secret: &str, test_card_id: &str) -> String {
        let mut state = self.state.lock().unwrap();
        let card = test_card(test_card_id).expect("a test card");
        let setup = state
            .setup_intents
            .iter()
            .find(|(_, intent)| intent.client_secret == client_secret)
            .map(|(id, _)| id.clone())
            .expect("a SetupIntent with that client secret");
        let customer = state.setup_intents[&setup].customer.clone();
        let id = state.id("pm");
        state
            .payment_methods
            .insert(id.clone(), PaymentMethod { customer, card });
        let intent = state.setup_intents.get_mut(&setup).unwrap();
        intent.status = "succeeded";
        intent.payment_method = Some(id.clone());
        id
    }

    pub fn intents(&self) -> Vec<Intent> {
        let mut all: Vec<Intent> = self
            .state
            .lock()
            .unwrap()
            .intents
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// How long each request so far was made to wait (the latency the provider showed).
    pub fn pauses(&self) -> Vec<Duration> {
        self.state.lock().unwrap().paused.clone()
    }

    /// The PaymentIntent `id` as it is now.
    pub fn intent(&self, id: &str) -> Option<Intent> {
        self.state.lock().unwrap().intents.get(id).cloned()
    }

    /// The authorisations the provider holds now (PaymentIntents waiting for capture).
    pub fn holds(&self) -> Vec<Intent> {
        self.intents()
            .into_iter()
            .filter(|i| i.status == "requires_capture")
            .collect()
    }
}

impl StripeStandIn {
    fn config_path(&self) -> PathBuf {
        self.ca_path.with_extension("config.json")
    }
}

impl Drop for StripeStandIn {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.ca_path);
        let _ = std::fs::remove_file(self.config_path());
    }
}

/// The built Stripe adapter component.
pub fn stripe_adapter_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/dist/stripe-payments.wasm"
    ))
}

fn error(kind: &str, code: Option<&str>, message: &str) -> Value {
    let mut error = json!({"type": kind, "message": message});
    if let Some(code) = code {
        error["code"] = json!(code);
        error["doc_url"] = json!(format!("https://stripe.com/docs/error-codes/{code}"));
    }
    json!({ "error": error })
}

/// What handling a request came to: `Executed` answers are saved under their idempotency key;
/// `Rejected` ones (invalid parameters, unknown objects) are not, as at Stripe.
enum Handled {
    Executed(u16, Value),
    Rejected(u16, Value),
}

async fn handle(
    state: Arc<Mutex<State>>,
    request: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, std::io::Error> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let path = parts.uri.path().to_owned();
    let method = parts.method.as_str().to_owned();
    if let Some(asset) = stripe_js(&method, &path) {
        return Ok(asset);
    }
    let (latency, fault, chaos) = {
        let mut s = state.lock().unwrap();
        (s.latency, s.take_fault(&path), s.draw_chaos())
    };
    let (fault, pause) = match (fault, chaos) {
        (Some(fault), _) => (Some(fault), None),
        (None, Some((fault, pause))) => (fault, Some(pause)),
        (None, None) => (None, None),
    };
    let pause = match (pause, latency) {
        (Some(pause), _) => pause,
        (None, None | Some(Latency::None)) => Duration::ZERO,
        (None, Some(Latency::Fixed(d))) => d,
        (None, Some(Latency::Spread { median, p99 })) => spread(median, p99),
    };
    state.lock().unwrap().paused.push(pause);
    tokio::time::sleep(pause).await;
    match fault {
        Some(Fault::Status(status)) => {
            let body = error(
                "api_error",
                None,
                "An unexpected error occurred (stand-in fault).",
            );
            return Ok(respond(status, &body, false));
        }
        Some(Fault::Malformed) => return Ok(raw(200, b"<html>gateway</html>".to_vec())),
        Some(Fault::Oversize) => return Ok(raw(200, vec![b' '; 2 << 20])),
        Some(Fault::Hang(d)) => tokio::time::sleep(d).await,
        _ => {}
    }
    let form: &[u8] = match method.as_str() {
        "GET" => parts.uri.query().unwrap_or_default().as_bytes(),
        _ => &body,
    };
    let params: BTreeMap<String, String> = url::form_urlencoded::parse(form).into_owned().collect();
    let revoked = state.lock().unwrap().key_revoked;
    // Stripe.js confirms a card form with the publishable key; all else needs the secret one.
    let from_card_form = method == "POST"
        && path.starts_with("/v1/setup_intents/")
        && path.ends_with("/confirm")
        && params.get("key").map(String::as_str) == Some(PUBLISHABLE_KEY);
    let secret = header("authorization").as_deref() == Some(&format!("Bearer {SECRET_KEY}"));
    if revoked || !(secret || from_card_form) {
        let body = error(
            "invalid_request_error",
            None,
            "Invalid API Key provided: the stand-in accepts only its own key",
        );
        return Ok(respond(401, &body, false));
    }
    let key = header("idempotency-key").filter(|_| method == "POST");
    let fingerprint = format!("{method} {path} {params:?}");
    if let Some(key) = &key {
        let mut s = state.lock().unwrap();
        match s.saved.get(key) {
            // In flight: whatever its parameters, the key is in use.
            Some(Saved { answer: None, .. }) => {
                let body = error(
                    "invalid_request_error",
                    Some("idempotency_key_in_use"),
                    "There is currently another in-progress request using this Idempotent Key \
                     (that probably means you submitted twice, and the other request is still \
                     going through). Please try again later.",
                );
                return Ok(respond(409, &body, false));
            }
            Some(saved) if saved.fingerprint != fingerprint => {
                let body = error(
                    "idempotency_error",
                    None,
                    &format!(
                        "Keys for idempotent requests can only be used with the same parameters \
                         they were first used with. Try using a key other than '{key}' if you \
                         meant to execute a different request."
                    ),
                );
                return Ok(respond(400, &body, false));
            }
            Some(Saved {
                answer: Some((status, body)),
                ..
            }) => {
                let response = respond(*status, body, true);
                drop(s);
                if fault == Some(Fault::ActThenDrop) {
                    return Err(std::io::Error::other("dropped after acting"));
                }
                return Ok(response);
            }
            None => {
                s.saved.insert(
                    key.clone(),
                    Saved {
                        fingerprint,
                        answer: None,
                    },
                );
            }
        }
    }
    let handled = {
        let mut s = state.lock().unwrap();
        route(&mut s, &method, &path, &params, key.as_deref(), fault)
    };
    let (status, body) = {
        let mut s = state.lock().unwrap();
        match handled {
            Handled::Executed(status, body) => {
                if let Some(key) = &key {
                    s.saved.get_mut(key).unwrap().answer = Some((status, body.clone()));
                }
                (status, body)
            }
            Handled::Rejected(status, body) => {
                if let Some(key) = &key {
                    s.saved.remove(key);
                }
                (status, body)
            }
        }
    };
    if fault == Some(Fault::ActThenDrop) {
        return Err(std::io::Error::other("dropped after acting"));
    }
    if fault == Some(Fault::ActForgetThenDrop) {
        if let Some(key) = &key {
            state.lock().unwrap().saved.remove(key);
        }
        return Err(std::io::Error::other("dropped after acting"));
    }
    Ok(respond(status, &body, false))
}

/// Stripe.js (`/v3/`) and the frame its Payment Element draws the card's fields in.
fn stripe_js(method: &str, path: &str) -> Option<hyper::Response<Full<Bytes>>> {
    let (content_type, body) = match (method, path) {
        ("GET", "/v3/") => (
            "text/javascript; charset=utf-8",
            include_str!("stripe-js/stripe.js"),
        ),
        ("GET", "/v3/elements/payment") => (
            "text/html; charset=utf-8",
            include_str!("stripe-js/payment.html"),
        ),
        _ => return None,
    };
    Some(
        hyper::Response::builder()
            .status(200)
            .header("content-type", content_type)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap(),
    )
}

fn respond(status: u16, body: &Value, replayed: bool) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header(
            "request-id",
            format!("req_{}", uuid::Uuid::new_v4().simple()),
        );
    if replayed {
        response = response.header("idempotent-replayed", "true");
    }
    response
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn raw(status: u16, body: Vec<u8>) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

fn invalid(message: &str, param: &str) -> Handled {
    let mut body = error(
        "invalid_request_error",
        Some("parameter_invalid_empty"),
        message,
    );
    body["error"]["param"] = json!(param);
    Handled::Rejected(400, body)
}

fn missing(kind: &str, id: &str, param: &str) -> Handled {
    let mut body = error(
        "invalid_request_error",
        Some("resource_missing"),
        &format!("No such {kind}: '{id}'"),
    );
    body["error"]["param"] = json!(param);
    Handled::Rejected(404, body)
}

fn unexpected_state(intent: &Intent, action: &str) -> Handled {
    let mut body = error(
        "invalid_request_error",
        Some("payment_intent_unexpected_state"),
        &format!(
            "This PaymentIntent could not be {action} because it has a status of {}.",
            intent.status
        ),
    );
    body["error"]["payment_intent"] = intent_json(intent);
    Handled::Rejected(400, body)
}

fn intent_json(i: &Intent) -> Value {
    json!({
        "id": i.id,
        "object": "payment_intent",
        "amount": i.amount,
        "amount_capturable": if i.status == "requires_capture" { i.amount } else { 0 },
        "amount_received": i.amount_received,
        "capture_method": "manual",
        "created": i.created,
        "currency": i.currency,
        "customer": i.customer,
        "latest_charge": i.latest_charge,
        "metadata": i.metadata,
        "payment_method": i.payment_method,
        "status": i.status,
        "livemode": false,
    })
}

/// A PaymentIntent with its `latest_charge` expanded (`expand[]=latest_charge`): the Charge
/// carries what was captured and refunded.
fn intent_expanded(i: &Intent) -> Value {
    let mut body = intent_json(i);
    if let Some(charge) = &i.latest_charge {
        body["latest_charge"] = json!({
            "id": charge,
            "object": "charge",
            "amount": i.amount,
            "amount_captured": i.amount_received,
            "amount_refunded": i.amount_refunded,
            "captured": i.amount_received > 0,
            "refunded": i.amount_received > 0 && i.amount_refunded == i.amount_received,
            "currency": i.currency,
            "payment_intent": i.id,
            "status": if i.status == "requires_payment_method" { "failed" } else { "succeeded" },
        });
    }
    body
}

fn route(
    s: &mut State,
    method: &str,
    path: &str,
    params: &BTreeMap<String, String>,
    key: Option<&str>,
    fault: Option<Fault>,
) -> Handled {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let param = |name: &str| params.get(name).map(String::as_str).unwrap_or_default();
    match (method, segments.as_slice()) {
        ("POST", ["v1", "customers"]) => {
            let id = s.id("cus");
            let created = chrono_now();
            let merchant = param("metadata[courier_merchant]").to_owned();
            s.customers.insert(
                id.clone(),
                (created, std::time::Instant::now(), merchant.clone()),
            );
            Handled::Executed(
                200,
                json!({"id": id, "object": "customer", "created": created,
                       "metadata": {"courier_merchant": merchant}}),
            )
        }
        // Search supports the one query the adapter makes. As at Stripe, a new customer is
        // not searchable at once (Stripe: "within a minute"; here after a second).
        ("GET", ["v1", "customers", "search"]) => {
            let query = param("query");
            let Some(merchant) = query
                .strip_prefix("metadata['courier_merchant']:'")
                .and_then(|q| q.strip_suffix('\''))
            else {
                return invalid(
                    "the stand-in searches customers by courier_merchant only",
                    "query",
                );
            };
            let data: Vec<Value> = s
                .customers
                .iter()
                .filter(|(_, (_, made, m))| {
                    m == merchant && made.elapsed() >= Duration::from_secs(1)
                })
                .map(|(id, (created, _, m))| {
                    json!({"id": id, "object": "customer", "created": created,
                           "metadata": {"courier_merchant": m}})
                })
                .collect();
            Handled::Executed(
                200,
                json!({"object": "search_result", "data": data, "has_more": false}),
            )
        }
        ("POST", ["v1", "setup_intents"]) => {
            let customer = params.get("customer").cloned();
            if let Some(c) = &customer
                && !s.customers.contains_key(c)
            {
                return missing("customer", c, "customer");
            }
            let id = s.id("seti");
            let intent = SetupIntent {
                client_secret: format!("{id}_secret_{}", uuid::Uuid::new_v4().simple()),
                customer,
                usage: param("usage").to_owned(),
                status: "requires_payment_method",
                payment_method: None,
            };
            let body = intent.json(&id);
            s.setup_intents.insert(id, intent);
            Handled::Executed(200, body)
        }
        ("GET", ["v1", "setup_intents", id]) => match s.setup_intents.get(*id) {
            Some(intent) => Handled::Executed(200, intent.json(id)),
            None => missing("setup_intent", id, "intent"),
        },
        // What Stripe.js sends from the card form's frame: the publishable key (checked
        // before routing), the client secret and the card.
        ("POST", ["v1", "setup_intents", id, "confirm"]) => confirm_setup(s, id, params),
        ("GET", ["v1", "payment_methods", id]) => match s.card_of(id) {
            Some((customer, card)) => {
                Handled::Executed(200, pm_json(id, customer.as_deref(), card))
            }
            None => missing("PaymentMethod", id, "payment_method"),
        },
        ("POST", ["v1", "payment_methods", id, "attach"]) => {
            let customer = param("customer").to_owned();
            if !s.customers.contains_key(&customer) {
                return missing("customer", &customer, "customer");
            }
            let Some((owner, card)) = s.card_of(id) else {
                return missing("PaymentMethod", id, "payment_method");
            };
            if owner.is_some() {
                return invalid(
                    "The payment method you provided has already been attached to a customer.",
                    "payment_method",
                );
            }
            if !card.attaches
                && let Some((code, decline_code, message)) = card.decline
            {
                let mut body = error("card_error", Some(code), message);
                body["error"]["decline_code"] = json!(decline_code);
                return Handled::Executed(402, body);
            }
            // A test id attaches as a new PaymentMethod; one from a card form in place.
            let attached = if test_card(id).is_some() && !s.payment_methods.contains_key(*id) {
                s.id("pm")
            } else {
                (*id).to_owned()
            };
            s.payment_methods.insert(
                attached.clone(),
                PaymentMethod {
                    customer: Some(customer.clone()),
                    card,
                },
            );
            Handled::Executed(200, pm_json(&attached, Some(&customer), card))
        }
        ("POST", ["v1", "payment_intents"]) => create_intent(s, params, key, fault),
        ("GET", ["v1", "payment_intents", id]) => {
            let Some(intent) = s.intents.get(*id) else {
                return missing("payment_intent", id, "intent");
            };
            match param("expand[]") {
                "" => Handled::Executed(200, intent_json(intent)),
                "latest_charge" => Handled::Executed(200, intent_expanded(intent)),
                other => invalid(&format!("the stand-in cannot expand {other}"), "expand"),
            }
        }
        // Newest first, as at Stripe; `created[gte]`, `limit` (at most 100) and
        // `starting_after` (an id of the previous page) as documented.
        ("GET", ["v1", "payment_intents"]) => {
            let since = params
                .get("created[gte]")
                .map_or(Some(0), |v| v.parse::<i64>().ok());
            let limit = params
                .get("limit")
                .map_or(Some(10), |v| v.parse::<usize>().ok());
            let (Some(since), Some(limit @ 1..=100)) = (since, limit) else {
                return invalid("created[gte] or limit is invalid", "limit");
            };
            let expand = match param("expand[]") {
                "" => false,
                "data.latest_charge" => true,
                other => return invalid(&format!("the stand-in cannot expand {other}"), "expand"),
            };
            let mut listed: Vec<&Intent> =
                s.intents.values().filter(|i| i.created >= since).collect();
            // Ids are made in order (`State::id`): newest first is the ids in reverse.
            listed.sort_by(|a, b| b.id.cmp(&a.id));
            if let Some(after) = params.get("starting_after") {
                let Some(position) = listed.iter().position(|i| &i.id == after) else {
                    return missing("payment_intent", after, "starting_after");
                };
                listed.drain(..=position);
            }
            let has_more = listed.len() > limit;
            let data: Vec<Value> = listed
                .into_iter()
                .take(limit)
                .map(|i| {
                    if expand {
                        intent_expanded(i)
                    } else {
                        intent_json(i)
                    }
                })
                .collect();
            Handled::Executed(
                200,
                json!({"object": "list", "url": "/v1/payment_intents", "data": data,
                       "has_more": has_more}),
            )
        }
        ("POST", ["v1", "payment_intents", id, action @ ("capture" | "cancel")]) => {
            let Some(intent) = s.intents.get_mut(*id) else {
                return missing("payment_intent", id, "intent");
            };
            if *action == "capture" {
                if intent.status != "requires_capture" {
                    return unexpected_state(intent, "captured");
                }
                let amount = params
                    .get("amount_to_capture")
                    .map_or(Some(intent.amount), |a| a.parse().ok());
                match amount {
                    Some(a) if a > 0 && a <= intent.amount => intent.amount_received = a,
                    _ => return invalid("amount_to_capture is invalid", "amount_to_capture"),
                }
                intent.status = "succeeded".into();
            } else {
                if intent.status == "succeeded" || intent.status == "canceled" {
                    return unexpected_state(intent, "canceled");
                }
                intent.status = "canceled".into();
            }
            Handled::Executed(200, intent_json(intent))
        }
        ("POST", ["v1", "refunds"]) => {
            let pi = param("payment_intent").to_owned();
            let Some(intent) = s.intents.get(&pi).cloned() else {
                return missing("payment_intent", &pi, "payment_intent");
            };
            if intent.status != "succeeded" {
                return Handled::Rejected(
                    400,
                    error(
                        "invalid_request_error",
                        Some("charge_not_refundable"),
                        "This PaymentIntent has no successful charge to refund.",
                    ),
                );
            }
            let left = intent.amount_received - intent.amount_refunded;
            let amount = params.get("amount").map_or(Some(left), |a| a.parse().ok());
            let amount = match amount {
                Some(a) if a > 0 && a <= left => a,
                Some(a) if a > left => {
                    return Handled::Rejected(
                        400,
                        error(
                            "invalid_request_error",
                            Some("amount_too_large"),
                            &format!(
                                "Refund amount ({a}) is greater than unrefunded amount on charge ({left})"
                            ),
                        ),
                    );
                }
                _ => return invalid("amount must be a positive integer", "amount"),
            };
            let id = s.id("re");
            s.intents.get_mut(&pi).unwrap().amount_refunded += amount;
            let refund = json!({"id": id, "object": "refund", "amount": amount,
                                "currency": intent.currency, "payment_intent": pi,
                                "status": "succeeded"});
            s.refunds.insert(id, refund.clone());
            Handled::Executed(200, refund)
        }
        _ => Handled::Rejected(
            404,
            error(
                "invalid_request_error",
                None,
                &format!("Unrecognized request URL ({method}: {path})."),
            ),
        ),
    }
}

fn confirm_setup(s: &mut State, id: &str, params: &BTreeMap<String, String>) -> Handled {
    let Some(intent) = s.setup_intents.get(id) else {
        return missing("setup_intent", id, "intent");
    };
    if params.get("client_secret") != Some(&intent.client_secret) {
        return invalid(
            "The client_secret provided does not match the client_secret associated with the SetupIntent.",
            "client_secret",
        );
    }
    if intent.status == "succeeded" {
        return Handled::Rejected(
            400,
            error(
                "invalid_request_error",
                Some("setup_intent_unexpected_state"),
                "You cannot confirm this SetupIntent because it has already succeeded.",
            ),
        );
    }
    let number = params
        .get("payment_method_data[card][number]")
        .map_or("", String::as_str);
    let Some(card) = test_card_by_number(number) else {
        let mut body = error(
            "card_error",
            Some("incorrect_number"),
            "Your card number is incorrect.",
        );
        body["error"]["param"] = json!("payment_method_data[card][number]");
        return Handled::Executed(402, body);
    };
    if !card.attaches
        && let Some((code, decline_code, message)) = card.decline
    {
        let mut body = error("card_error", Some(code), message);
        body["error"]["decline_code"] = json!(decline_code);
        body["error"]["setup_intent"] = intent.json(id);
        return Handled::Executed(402, body);
    }
    let customer = intent.customer.clone();
    let method = s.id("pm");
    s.payment_methods
        .insert(method.clone(), PaymentMethod { customer, card });
    let intent = s.setup_intents.get_mut(id).unwrap();
    intent.status = "succeeded";
    intent.payment_method = Some(method);
    Handled::Executed(200, intent.json(id))
}

fn create_intent(
    s: &mut State,
    params: &BTreeMap<String, String>,
    key: Option<&str>,
    fault: Option<Fault>,
) -> Handled {
    let param = |name: &str| params.get(name).cloned().unwrap_or_default();
    let Some(mut amount) = param("amount").parse::<i64>().ok().filter(|a| *a > 0) else {
        return invalid("Missing required param: amount.", "amount");
    };
    let mut currency = param("currency");
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_lowercase()) {
        return invalid("Invalid currency", "currency");
    }
    let customer = param("customer");
    if !s.customers.contains_key(&customer) {
        return missing("customer", &customer, "customer");
    }
    let pm = param("payment_method");
    let Some((owner, card)) = s.card_of(&pm) else {
        return missing("payment_method", &pm, "payment_method");
    };
    if owner.as_deref().is_some_and(|o| o != customer) {
        return invalid(
            "The provided PaymentMethod belongs to another Customer.",
            "payment_method",
        );
    }
    if param("capture_method") != "manual"
        || param("confirm") != "true"
        || param("payment_method_types[]") != "card"
    {
        return invalid(
            "the stand-in models confirmed manual-capture intents only",
            "capture_method",
        );
    }
    match fault {
        Some(Fault::WrongAmount) => amount += 1,
        Some(Fault::WrongCurrency) => {
            currency = if currency == "eur" {
                "usd".into()
            } else {
                "eur".into()
            }
        }
        _ => {}
    }
    let id = s.id("pi");
    let mut intent = Intent {
        id: id.clone(),
        amount,
        currency,
        customer,
        payment_method: pm,
        status: "requires_capture".into(),
        amount_received: 0,
        amount_refunded: 0,
        idempotency_key: key.map(str::to_owned),
        created: chrono_now(),
        metadata: params
            .iter()
            .filter_map(|(name, value)| {
                let name = name.strip_prefix("metadata[")?.strip_suffix(']')?;
                Some((name.to_owned(), value.clone()))
            })
            .collect(),
        latest_charge: None,
    };
    let decline = match fault {
        Some(Fault::Decline(code, decline_code)) => {
            Some((code, decline_code, "Your card was declined."))
        }
        _ => card.decline,
    };
    let charge = s.id("ch");
    intent.latest_charge = Some(charge.clone());
    if let Some((code, decline_code, message)) = decline {
        intent.status = "requires_payment_method".into();
        let mut body = error("card_error", Some(code), message);
        body["error"]["decline_code"] = json!(decline_code);
        body["error"]["charge"] = json!(charge);
        body["error"]["payment_intent"] = intent_json(&intent);
        s.intents.insert(id, intent);
        // A decline is the result of executing the request: saved like a success.
        return Handled::Executed(402, body);
    }
    let body = intent_json(&intent);
    s.intents.insert(id, intent);
    Handled::Executed(200, body)
}

fn pm_json(id: &str, customer: Option<&str>, card: TestCard) -> Value {
    json!({
        "id": id,
        "object": "payment_method",
        "type": "card",
        "customer": customer,
        "card": {"brand": card.brand, "last4": card.last4, "exp_month": 12, "exp_year": 2034,
                 "funding": "credit", "country": "US"},
    })
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The spread latency is what the benchmark says it is: its median and 99th percentile.
#[test]
fn the_spread_latency_has_the_asked_median_and_tail() {
    let (median, p99) = (Duration::from_millis(300), Duration::from_secs(1));
    let mut samples: Vec<Duration> = (0..20_000).map(|_| spread(median, p99)).collect();
    samples.sort();
    let at = |q: f64| samples[(q * samples.len() as f64) as usize].as_secs_f64();
    assert!((at(0.5) - 0.3).abs() < 0.03, "median {}", at(0.5));
    assert!((at(0.99) - 1.0).abs() < 0.15, "p99 {}", at(0.99));
}
