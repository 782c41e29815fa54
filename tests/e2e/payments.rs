//! Cards on file (`/v1/payment-methods`), charges (`/v1/charges`), operator refunds, and the
//! charge functions bookings and fulfilment call (`courier_core::payments::Payments`), run against
//! the test's database and observed through the API.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use courier_api::ApiError;
use courier_core::auth::Merchant;
use courier_core::events::FanOutWakeup;
use courier_core::merchants::NewMerchant;
use courier_core::payments::refunds::RefundOutcome;
use courier_core::payments::{
    CallLimits, ChargeView, Gateway, GatewayError, Gateways, HoldError, PaymentError, Payments,
    RetryPolicy,
};
use courier_domain::Environment;
use courier_domain::charge::ChargeStatus;
use courier_plugins::{
    AdapterConfig, AttachRefusal, AttachedCard, CaptureRequest, CardForm, CardFormRequest, Decline,
    EngineConfig, EventKind, EventRefusal, HoldRequest, LookupFailure, Outcome, PaymentAdapter,
    PaymentPage, PaymentState, PaymentStatus, PluginEngine, PluginError, ProviderEvent,
    RefundRequest, VoidRequest,
};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually, status_and_json,
};

const WORKS: &str = "4242424242424242";
const DECLINED: &str = "4000000000000002";
const INSUFFICIENT: &str = "4000000000009995";
const EXPIRED: &str = "4000000000000069";
const LOST: &str = "4000000000009987";
const UNREACHABLE: &str = "4000000000000119";
const ALL_CARDS: [&str; 6] = [WORKS, DECLINED, INSUFFICIENT, EXPIRED, LOST, UNREACHABLE];

fn sandbox(number: &str) -> String {
    format!("pm_sandbox_{number}")
}

// ---- harness ---------------------------------------------------------------------------

/// The sandbox adapter, compiled once for every test.
async fn sandbox_adapter() -> PaymentAdapter {
    static ADAPTER: tokio::sync::OnceCell<PaymentAdapter> = tokio::sync::OnceCell::const_new();
    ADAPTER
        .get_or_init(|| async {
            let engine = PluginEngine::new(EngineConfig::default()).unwrap();
            PaymentAdapter::load(
                &engine,
                courier_plugins::defaults::SANDBOX_PAYMENTS,
                AdapterConfig::new(BTreeMap::new()),
            )
            .await
            .unwrap()
        })
        .await
        .clone()
}

fn quick_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(20),
        max_attempts,
        lease: Duration::from_secs(60),
    }
}

/// A merchant with one service, and the charge functions on the same database.
struct Shop {
    app: TestApp,
    merchant: NewMerchant,
    test: Credential,
    live: Credential,
    pool: PgPool,
    payments: Payments,
}

impl Shop {
    async fn open() -> Self {
        Self::open_with(|_| None, None).await
    }

    async fn open_with(
        extra: impl Fn(&str) -> Option<String>,
        gateway: Option<Arc<dyn Gateway>>,
    ) -> Self {
        let app = TestApp::spawn_with(extra).await;
        let merchant = app.create_merchant("Card Shop").await;
        let pool = app.pool().await;
        let gateway = match gateway {
            Some(gateway) => gateway,
            None => Arc::new(sandbox_adapter().await),
        };
        let payments = Payments::new(
            pool.clone(),
            Gateways::new(gateway, None),
            quick_retries(5),
            FanOutWakeup::default(),
        );
        Self {
            test: merchant.test(),
            live: merchant.live(),
            app,
            merchant,
            pool,
            payments,
        }
    }

    fn caller(&self, environment: Environment) -> Merchant {
        Merchant {
            merchant_id: self.merchant.merchant_id,
            environment,
            key_id: Uuid::nil(),
        }
    }

    async fn attach(&self, credential: &Credential, body: Value) -> (u16, Value) {
        status_and_json(
            self.app
                .request(Method::POST, "/v1/payment-methods")
                .auth(credential)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Attaches a sandbox card with the test key; answers the payment method.
    async fn card(&self, number: &str, make_default: bool) -> Value {
        let body = json!({"provider_ref": sandbox(number), "make_default": make_default});
        let (status, card) = self.attach(&self.test, body).await;
        assert_eq!(status, 201, "{card}");
        card
    }

    async fn get(&self, credential: &Credential, path: &str) -> Value {
        let (status, body) = status_and_json(
            self.app
                .request(Method::GET, path)
                .auth(credential)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    async fn cards(&self, credential: &Credential) -> Vec<Value> {
        let body = self.get(credential, "/v1/payment-methods").await;
        body.as_array().unwrap().clone()
    }

    async fn charges(&self, credential: &Credential) -> Vec<Value> {
        let body = self.get(credential, "/v1/charges").await;
        body.as_array().unwrap().clone()
    }

    async fn send(&self, credential: &Credential, method: Method, path: &str) -> reqwest::Response {
        self.app
            .request(method, path)
            .auth(credential)
            .send()
            .await
            .unwrap()
    }

    /// Holds `amount` for a new job the way a booking does: inside a transaction that is
    /// committed when the hold is placed (or pending) and rolled back when it is refused.
    async fn hold(&self, amount: i64) -> (Uuid, Result<ChargeView, HoldError>) {
        let caller = self.caller(Environment::Test);
        hold(&self.payments, &self.pool, &caller, amount).await
    }

    /// An operator's refund under a key of its own.
    async fn refund(&self, charge_id: &str, amount: Value) -> reqwest::Response {
        self.refund_keyed(charge_id, amount, &Uuid::new_v4().to_string())
            .await
    }

    async fn refund_keyed(&self, charge_id: &str, amount: Value, key: &str) -> reqwest::Response {
        self.app
            .admin(Method::POST, &format!("/charges/{charge_id}/refund"))
            .header("Idempotency-Key", key)
            .json(&json!({"amount_minor": amount}))
            .send()
            .await
            .unwrap()
    }

    async fn moves_to(&self, charge_id: Uuid, status: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM charge_moves WHERE charge_id = $1 AND to_status = $2",
        )
        .bind(charge_id)
        .bind(status)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    async fn dead_events(&self) -> Vec<Value> {
        sqlx::query_scalar(
            "SELECT details FROM events WHERE merchant_id = $1 AND name = 'payment_method.dead' \
             ORDER BY recorded_at",
        )
        .bind(self.merchant.merchant_id)
        .fetch_all(&self.pool)
        .await
        .unwrap()
    }
}

/// Holds `amount` for a new job the way a booking does: inside a transaction that is
/// committed when the hold is placed (or pending) and rolled back when it is refused.
async fn hold(
    payments: &Payments,
    pool: &PgPool,
    caller: &Merchant,
    amount: i64,
) -> (Uuid, Result<ChargeView, HoldError>) {
    let job_id = Uuid::new_v4();
    let mut tx = pool.begin().await.unwrap();
    let held = payments
        .hold_for_job(&mut tx, caller, job_id, amount, "USD")
        .await;
    if held.is_ok() {
        tx.commit().await.unwrap();
    } else {
        tx.rollback().await.unwrap();
    }
    (job_id, held)
}

/// The status and code the API gives an error the HTTP surface cannot provoke yet
/// (bookings are not built yet; the sandbox's capture and refund never fail).
fn api_code(error: impl Into<ApiError>) -> (u16, &'static str) {
    let (status, code) = error.into().status_and_code();
    (status.as_u16(), code)
}

/// The sandbox behind a provider that is down for the first `outages` authorisations (and
/// for every refund when `refunds_down`), counting the calls and keeping their keys. Once
/// up, the unreachable card's hold goes through as the working card's would.
struct Flaky {
    sandbox: PaymentAdapter,
    outages: AtomicUsize,
    refunds_down: bool,
    authorisations: Mutex<Vec<String>>,
    captures: AtomicUsize,
    /// Operations the provider refuses for good (`authorise`, `capture`, `refund`), as it
    /// does with a revoked API key.
    refusing: Mutex<Vec<&'static str>>,
    /// Captures are accepted and confirmed later (Adyen's `received`): taken at once, answered
    /// `pending`, shown as captured by `retrieve`. The amounts taken, by authorisation.
    captures_pending: std::sync::atomic::AtomicBool,
    taken: Mutex<BTreeMap<String, i64>>,
    /// Captures and refunds are confirmed only by the provider's events (as Adyen's are):
    /// `retrieve` knows nothing of them, and refunds answer `pending`.
    confirms_by_event: std::sync::atomic::AtomicBool,
    /// Holds are accepted and confirmed later: answered `pending` with `held_<key>`.
    holds_pending: std::sync::atomic::AtomicBool,
    /// Calls go over the network (each takes one of the service's places for calls).
    network: std::sync::atomic::AtomicBool,
    /// How long a release takes, in milliseconds.
    void_takes_ms: std::sync::atomic::AtomicU64,
    /// The idempotency keys of the captures asked for, in order.
    capture_keys: Mutex<Vec<String>>,
    /// The (authorisation, idempotency key) of the releases asked for, in order.
    voids: Mutex<Vec<(String, String)>>,
}

/// The signature Flaky's notifications carry.
const FLAKY_SIGNATURE: (&str, &str) = ("x-flaky-signature", "signed");

impl Flaky {
    async fn new(outages: usize, refunds_down: bool) -> Arc<Self> {
        Arc::new(Self {
            sandbox: sandbox_adapter().await,
            outages: AtomicUsize::new(outages),
            refunds_down,
            authorisations: Mutex::new(Vec::new()),
            captures: AtomicUsize::new(0),
            refusing: Mutex::new(Vec::new()),
            captures_pending: std::sync::atomic::AtomicBool::new(false),
            taken: Mutex::new(BTreeMap::new()),
            confirms_by_event: std::sync::atomic::AtomicBool::new(false),
            holds_pending: std::sync::atomic::AtomicBool::new(false),
            network: std::sync::atomic::AtomicBool::new(false),
            void_takes_ms: std::sync::atomic::AtomicU64::new(0),
            capture_keys: Mutex::new(Vec::new()),
            voids: Mutex::new(Vec::new()),
        })
    }

    fn refuse(&self, operations: &[&'static str]) {
        *self.refusing.lock().unwrap() = operations.to_vec();
    }

    /// The provider's refusal of `operation`, when it refuses it.
    fn refusal(&self, operation: &str) -> Option<Outcome> {
        self.refusing
            .lock()
            .unwrap()
            .contains(&operation)
            .then(|| Outcome::Refused("the API key is not valid".into()))
    }
}

#[async_trait::async_trait]
impl Gateway for Flaky {
    async fn setup_card_form(
        &self,
        request: &CardFormRequest,
    ) -> Result<Result<CardForm, String>, PluginError> {
        self.sandbox.setup_card_form(request).await
    }
    async fn attach_card(
        &self,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError> {
        self.sandbox.attach_card(customer_id, card_ref).await
    }
    async fn authorise(&self, request: &HoldRequest) -> Result<Outcome, PluginError> {
        self.authorisations
            .lock()
            .unwrap()
            .push(request.idempotency_key.clone());
        if let Some(refusal) = self.refusal("authorise") {
            return Ok(refusal);
        }
        let down = self
            .outages
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if down {
            return Ok(Outcome::Unreachable("provider is down".into()));
        }
        if self.holds_pending.load(Ordering::SeqCst) {
            return Ok(Outcome::Pending(format!(
                "held_{}",
                request.idempotency_key
            )));
        }
        let mut request = request.clone();
        request.card_ref = request.card_ref.replace(UNREACHABLE, WORKS);
        self.sandbox.authorise(&request).await
    }
    async fn capture(&self, request: &CaptureRequest) -> Result<Outcome, PluginError> {
        self.captures.fetch_add(1, Ordering::SeqCst);
        self.capture_keys
            .lock()
            .unwrap()
            .push(request.idempotency_key.clone());
        if let Some(refusal) = self.refusal("capture") {
            return Ok(refusal);
        }
        if self.captures_pending.load(Ordering::SeqCst) {
            self.taken
                .lock()
                .unwrap()
                .insert(request.authorisation.clone(), request.amount_minor);
            return Ok(Outcome::Pending(request.authorisation.clone()));
        }
        // Slow enough for two concurrent captures to overlap.
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.sandbox.capture(request).await
    }
    async fn void(&self, request: &VoidRequest) -> Result<Outcome, PluginError> {
        self.voids.lock().unwrap().push((
            request.authorisation.clone(),
            request.idempotency_key.clone(),
        ));
        let takes = self.void_takes_ms.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(takes)).await;
        if request.authorisation.starts_with("held_") {
            // A hold placed later (`holds_pending`): the sandbox never saw it.
            return Ok(Outcome::Approved(request.authorisation.clone()));
        }
        self.sandbox.void(request).await
    }
    async fn retrieve(
        &self,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError> {
        let Some(taken) = self.taken.lock().unwrap().get(reference).copied() else {
            return self.sandbox.retrieve(reference).await;
        };
        if self.confirms_by_event.load(Ordering::SeqCst) {
            return Ok(Err(LookupFailure::NotFound));
        }
        Ok(Ok(PaymentState {
            reference: reference.to_owned(),
            hold_key: None,
            status: PaymentStatus::Captured,
            amount_minor: taken,
            captured_minor: taken,
            refunded_minor: 0,
            currency: "USD".into(), // every hold of these tests is in dollars
            created_at: 0,
        }))
    }
    async fn list_payments(
        &self,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError> {
        self.sandbox.list_payments(since, after).await
    }
    async fn refund(&self, request: &RefundRequest) -> Result<Outcome, PluginError> {
        if self.refunds_down {
            return Ok(Outcome::Unreachable("provider is down".into()));
        }
        if let Some(refusal) = self.refusal("refund") {
            return Ok(refusal);
        }
        if self.confirms_by_event.load(Ordering::SeqCst) {
            return Ok(Outcome::Pending(format!(
                "refund_of_{}_{}",
                request.payment, request.amount_minor
            )));
        }
        self.sandbox.refund(request).await
    }
    /// Lines of `id reference kind [amount]`, under [`FLAKY_SIGNATURE`].
    async fn verify_event(
        &self,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Result<Vec<ProviderEvent>, EventRefusal>, PluginError> {
        let (name, value) = FLAKY_SIGNATURE;
        if !headers.iter().any(|(n, v)| n == name && v == value) {
            return Ok(Err(EventRefusal::Unverified("not signed".into())));
        }
        let events = String::from_utf8_lossy(body)
            .lines()
            .map(|line| {
                let words: Vec<&str> = line.split_whitespace().collect();
                let kind = match words[2] {
                    "held" => EventKind::Held,
                    "hold-failed" => EventKind::HoldFailed(Decline {
                        code: "do_not_honor".into(),
                        card_finished: None,
                    }),
                    "captured" => EventKind::Captured,
                    "capture-failed" => EventKind::CaptureFailed("acquirer error".into()),
                    "released" => EventKind::Released,
                    "refunded" => EventKind::Refunded,
                    "refund-failed" => EventKind::RefundFailed("acquirer error".into()),
                    other => panic!("unknown kind {other}"),
                };
                ProviderEvent {
                    id: words[0].into(),
                    reference: words[1].into(),
                    kind,
                    amount_minor: words.get(3).map(|a| a.parse().unwrap()),
                    currency: None,
                    request_key: None,
                }
            })
            .collect();
        Ok(Ok(events))
    }
    fn uses_network(&self) -> bool {
        self.network.load(Ordering::SeqCst)
    }
}

/// Flaky's signed notification of `lines`.
fn flaky_notification(lines: &[String]) -> (Vec<(String, String)>, Vec<u8>) {
    let (name, value) = FLAKY_SIGNATURE;
    (
        vec![(name.to_owned(), value.to_owned())],
        lines.join("\n").into_bytes(),
    )
}

/// Sends Flaky's signed notification of `lines` to `payments`, `times` times; answers the
/// last receipt.
async fn tell(
    payments: &Payments,
    lines: &[String],
    times: usize,
) -> courier_core::payments::events::EventsReceived {
    let (headers, body) = flaky_notification(lines);
    let mut last = None;
    for _ in 0..times {
        last = Some(
            payments
                .receive_provider_events(Environment::Test, headers.clone(), body.clone())
                .await
                .unwrap(),
        );
    }
    last.expect("sent at least once")
}

// ---- cards on file ---------------------------------------------------------------------

#[tokio::test]
async fn setup_answers_the_providers_client_secret_and_customer() {
    let shop = Shop::open().await;
    let (status, body) = status_and_json(
        shop.send(&shop.test, Method::POST, "/v1/payment-methods/setup")
            .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["client_secret"]
            .as_str()
            .unwrap()
            .starts_with("seti_sandbox_")
    );
    assert!(
        body["customer_id"]
            .as_str()
            .unwrap()
            .starts_with("cus_sandbox_")
    );
    // The provider's document for its form, whose client secret is the one above.
    assert_eq!(
        body["card_form"],
        json!({"client_secret": body["client_secret"]})
    );
}

#[tokio::test]
async fn a_card_form_is_set_up_for_what_the_merchant_says_and_nothing_else() {
    let shop = Shop::open().await;
    let setup = |body: &str| {
        shop.app
            .request(Method::POST, "/v1/payment-methods/setup")
            .auth(&shop.test)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    let options = r#"{"currency": "CHF", "country": "CH", "locale": "de-CH",
        "return_url": "https://shop.example/cards/done"}"#;
    let (status, body) = status_and_json(setup(options).await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["card_form"]["client_secret"].is_string());
    for (wrong, named) in [
        (r#"{"currency": "chf"}"#, "currency"),
        (r#"{"country": "Switzerland"}"#, "country"),
        (r#"{"locale": "de_CH"}"#, "locale"),
        (
            r#"{"return_url": "http://shop.example/cards"}"#,
            "return_url",
        ),
        (r#"{"return_url": "/cards"}"#, "return_url"),
    ] {
        let refusal = assert_refusal(
            setup(wrong).await.unwrap(),
            422,
            "payment.invalid_card_form",
        )
        .await;
        assert!(
            refusal["message"].as_str().unwrap().contains(named),
            "{wrong}: {refusal}"
        );
    }
    assert_refusal(
        setup(r#"{"currency": "EUR", "colour": "red"}"#)
            .await
            .unwrap(),
        422,
        "request.invalid_body",
    )
    .await;
    assert_refusal(
        setup("{not json").await.unwrap(),
        422,
        "request.malformed_json",
    )
    .await;
}

#[tokio::test]
async fn a_provider_s_own_references_are_not_taken_for_card_numbers() {
    // A live adapter that declares sixteen digits as its references (the tests' HTTP probe).
    let probe = crate::support::stripe::stripe_adapter_path().with_file_name("http-probe.wasm");
    let app = TestApp::spawn_with(move |name| {
        (name == "COURIER_LIVE_PAYMENT_ADAPTER").then(|| probe.display().to_string())
    })
    .await;
    let merchant = app.create_merchant("Digits Ltd").await;
    let attach = |credential: Credential, body: Value| {
        app.request(Method::POST, "/v1/payment-methods")
            .auth(&credential)
            .json(&body)
            .send()
    };
    // Sixteen digits that pass the Luhn check: in live, one of the provider's references, so
    // it reaches the adapter (the probe then cannot set up a customer for this merchant).
    let own = json!({"provider_ref": "4111111111111111"});
    assert_refusal(
        attach(merchant.live(), own.clone()).await.unwrap(),
        503,
        "payment.provider_unreachable",
    )
    .await;
    // The same number anywhere else in the body, written otherwise, or with a test key (the
    // sandbox declares no pattern) is a card number.
    for (credential, body) in [
        (
            merchant.live(),
            json!({"provider_ref": "4111111111111111", "make_default": "4000056655665556"}),
        ),
        (
            merchant.live(),
            json!({"provider_ref": "4111 1111 1111 1111"}),
        ),
        (merchant.test(), own),
    ] {
        assert_refusal(
            attach(credential, body).await.unwrap(),
            422,
            "payment.raw_card_number",
        )
        .await;
    }
}

#[tokio::test]
async fn every_sandbox_card_attaches_and_the_first_becomes_the_default() {
    let shop = Shop::open().await;
    for (i, number) in ALL_CARDS.iter().enumerate() {
        let card = shop.card(number, false).await;
        assert_eq!(card["brand"], "visa");
        assert_eq!(card["last_four"], number[12..]);
        assert_eq!(card["expiry_month"], 12);
        assert_eq!(card["expiry_year"], 2034);
        assert_eq!(card["status"], "active");
        assert_eq!(card["dead_reason"], Value::Null);
        assert!(card["attached_at"].is_string());
        assert_eq!(card["is_default"], i == 0, "only the first card: {card}");
    }
    let cards = shop.cards(&shop.test).await;
    assert_eq!(cards.len(), 6);
    let defaults: Vec<&Value> = cards.iter().filter(|c| c["is_default"] == true).collect();
    assert_eq!(defaults.len(), 1);
    assert_eq!(defaults[0]["last_four"], "4242");
}

#[tokio::test]
async fn the_default_card_can_be_chosen() {
    let shop = Shop::open().await;
    let first = shop.card(WORKS, false).await;
    let second = shop.card(INSUFFICIENT, true).await;
    assert_eq!(second["is_default"], true);
    let default_of = |cards: Vec<Value>| {
        cards
            .into_iter()
            .filter(|c| c["is_default"] == true)
            .map(|c| c["id"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        default_of(shop.cards(&shop.test).await),
        [second["id"].clone()]
    );
    let path = format!(
        "/v1/payment-methods/{}/default",
        first["id"].as_str().unwrap()
    );
    let response = shop.send(&shop.test, Method::POST, &path).await;
    assert_eq!(response.status(), 204);
    assert_eq!(
        default_of(shop.cards(&shop.test).await),
        [first["id"].clone()]
    );
    // The same card attached again is the card on file, not a second one.
    let again = shop.card(WORKS, false).await;
    assert_eq!(again["id"], first["id"]);
    let again = shop.card(INSUFFICIENT, true).await;
    assert_eq!(again["id"], second["id"]);
    assert_eq!(again["is_default"], true);
    assert_eq!(shop.cards(&shop.test).await.len(), 2);
    assert_eq!(
        default_of(shop.cards(&shop.test).await),
        [second["id"].clone()]
    );
    let response = shop.send(&shop.test, Method::POST, &path).await;
    assert_eq!(response.status(), 204);
    // Deliveries are charged to the default.
    let (_, held) = shop.hold(700).await;
    let held = held.unwrap();
    assert_eq!(held.status, ChargeStatus::Authorised);

    for unknown in [Uuid::new_v4().to_string(), "not-a-uuid".to_owned()] {
        let path = format!("/v1/payment-methods/{unknown}/default");
        let response = shop.send(&shop.test, Method::POST, &path).await;
        assert_refusal(response, 404, "payment_method.not_found").await;
    }
}

#[tokio::test]
async fn raw_card_numbers_are_refused_in_every_field_in_both_environments() {
    let shop = Shop::open().await;
    let bodies = [
        json!({"provider_ref": "4242424242424242"}),
        json!({"provider_ref": "4242 4242 4242 4242"}),
        json!({"provider_ref": "4242-4242-4242-4242"}),
        json!({"provider_ref": "pm_live_5555555555554444"}),
        json!({"provider_ref": "pm_sandbox_4111111111111111"}),
        json!({"provider_ref": "pm_sandbox_4242424242424242", "make_default": "4111111111111111"}),
        json!({"provider_ref": "pm_sandbox_4242424242424242", "note": "card 4111 1111 1111 1111"}),
        json!({"provider_ref": "pm_sandbox_4242424242424242", "extra": {"deep": [4242424242424242_u64]}}),
        json!({"provider_ref": "pm_sandbox_4242424242424242", "4111111111111111": true}),
    ];
    for credential in [&shop.test, &shop.live] {
        for body in &bodies {
            let (status, refusal) = shop.attach(credential, body.clone()).await;
            assert_eq!(status, 422, "{body}: {refusal}");
            assert_eq!(refusal["code"], "payment.raw_card_number", "{body}");
            let text = refusal.to_string();
            for digits in ["4242424242424242", "4111", "5555", "4242 4242"] {
                assert!(!text.contains(digits), "the number is echoed: {text}");
            }
        }
        let response = shop
            .app
            .request(Method::POST, "/v1/payment-methods/setup")
            .auth(credential)
            .json(&json!({"card": "4242424242424242"}))
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, "payment.raw_card_number").await;
        for path in [
            "/v1/payment-methods/4242424242424242/default",
            "/v1/payment-methods/4242-4242-4242-4242",
        ] {
            let method = if path.ends_with("default") {
                Method::POST
            } else {
                Method::DELETE
            };
            let response = shop.send(credential, method, path).await;
            let body = assert_refusal(response, 422, "payment.raw_card_number").await;
            assert!(!body.to_string().contains("4242"));
        }
        assert!(shop.cards(credential).await.is_empty());
    }
}

#[tokio::test]
async fn references_must_belong_to_the_environment() {
    let shop = Shop::open().await;
    let (status, body) = shop
        .attach(&shop.test, json!({"provider_ref": "pm_live_abc"}))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("payment.reference_wrong_environment"))
    );
    let (status, body) = shop
        .attach(&shop.live, json!({"provider_ref": sandbox(WORKS)}))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("payment.reference_wrong_environment"))
    );
    let (status, body) = shop
        .attach(&shop.test, json!({"provider_ref": "pm_sandbox_1234"}))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("payment.unknown_reference"))
    );
    assert!(
        !body.to_string().contains("1234"),
        "the reference is not echoed: {body}"
    );
    let (status, body) = shop.attach(&shop.test, json!({"make_default": true})).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("request.invalid_body"))
    );
    assert!(shop.cards(&shop.test).await.is_empty());
}

#[tokio::test]
async fn live_is_refused_until_a_live_provider_is_configured() {
    let shop = Shop::open().await;
    let (status, body) = shop
        .attach(&shop.live, json!({"provider_ref": "pm_live_abc"}))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("payment.live_unavailable")),
        "{body}"
    );
    let response = shop
        .send(&shop.live, Method::POST, "/v1/payment-methods/setup")
        .await;
    assert_refusal(response, 422, "payment.live_unavailable").await;
    // A live hold is refused the same way (a booking answers the same code).
    let mut tx = shop.pool.begin().await.unwrap();
    let refused = shop
        .payments
        .hold_for_job(
            &mut tx,
            &shop.caller(Environment::Live),
            Uuid::new_v4(),
            100,
            "USD",
        )
        .await
        .unwrap_err();
    assert!(matches!(refused, HoldError::LiveUnavailable));
    assert_eq!(api_code(refused), (422, "payment.live_unavailable"));
}

#[tokio::test]
async fn a_configured_live_adapter_is_used_for_live_and_never_the_sandbox() {
    let dir = std::env::temp_dir().join(format!("courier-live-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = dir.join("probe.wasm");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::copy(repo.join("plugins/dist/http-probe.wasm"), &probe).unwrap();
    let config = dir.join("live.json");
    std::fs::write(&config, r#"{"unused": "value"}"#).unwrap();
    let (adapter, settings) = (probe.clone(), config.clone());
    let shop = Shop::open_with(
        move |name| match name {
            "COURIER_LIVE_PAYMENT_ADAPTER" => Some(adapter.to_string_lossy().into_owned()),
            "COURIER_LIVE_PAYMENT_CONFIG" => Some(settings.to_string_lossy().into_owned()),
            _ => None,
        },
        None,
    )
    .await;
    // The test adapter's card form needs a configured key this merchant has not got: it
    // answers as a provider that cannot be reached (the sandbox would have answered).
    let response = shop
        .send(&shop.live, Method::POST, "/v1/payment-methods/setup")
        .await;
    assert_refusal(response, 503, "payment.provider_unreachable").await;
    let (status, body) = shop
        .attach(&shop.live, json!({"provider_ref": "pm_live_abc"}))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("payment.provider_unreachable")),
        "{body}"
    );
    // Sandbox cards still attach with the test key.
    shop.card(WORKS, false).await;

    // The sandbox itself is refused as the live adapter.
    let sandbox_file = dir.join("sandbox.wasm");
    std::fs::write(&sandbox_file, courier_plugins::defaults::SANDBOX_PAYMENTS).unwrap();
    let engine = PluginEngine::new(EngineConfig::default()).unwrap();
    let refused = Gateways::load(
        &engine,
        Some(&sandbox_file),
        None,
        &courier_core::payments::TestNetwork::default(),
    )
    .await;
    assert!(matches!(refused, Err(GatewayError::LiveIsSandbox)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn each_environment_sees_only_its_own_cards_and_charges() {
    let shop = Shop::open().await;
    let test_card = shop.card(WORKS, false).await;
    // No live provider exists in tests: a live card is put on file the way attach would.
    let live_id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO payment_methods (id, merchant_id, environment, provider_ref, customer_id, \
         brand, last_four, expiry_month, expiry_year, status, is_default, attached_at) \
         VALUES ($1, $2, 'live', 'pm_live_x', 'cus_live', 'mastercard', '4444', 1, 2030, \
         'active', true, now())",
    )
    .bind(live_id)
    .bind(shop.merchant.merchant_id)
    .execute(&shop.pool)
    .await
    .unwrap();
    let test_cards = shop.cards(&shop.test).await;
    assert_eq!(test_cards.len(), 1);
    assert_eq!(test_cards[0]["id"], test_card["id"]);
    let live_cards = shop.cards(&shop.live).await;
    assert_eq!(live_cards.len(), 1);
    assert_eq!(live_cards[0]["id"], live_id.to_string());
    assert_eq!(live_cards[0]["is_default"], true);

    // Neither key can touch the other's card.
    let test_id = test_card["id"].as_str().unwrap();
    for (credential, id) in [
        (&shop.live, test_id.to_owned()),
        (&shop.test, live_id.to_string()),
    ] {
        let path = format!("/v1/payment-methods/{id}/default");
        let response = shop.send(credential, Method::POST, &path).await;
        assert_refusal(response, 404, "payment_method.not_found").await;
        let path = format!("/v1/payment-methods/{id}");
        let response = shop.send(credential, Method::DELETE, &path).await;
        assert_refusal(response, 404, "payment_method.not_found").await;
    }
    // Charges too.
    let (_, held) = shop.hold(900).await;
    held.unwrap();
    assert_eq!(shop.charges(&shop.test).await.len(), 1);
    assert!(shop.charges(&shop.live).await.is_empty());
}

#[tokio::test]
async fn removing_cards_hands_the_default_on_and_open_charges_complete() {
    let shop = Shop::open().await;
    let first = shop.card(INSUFFICIENT, false).await;
    let second = shop.card(DECLINED, false).await;
    let third = shop.card(WORKS, false).await;
    // Removing the default: the most recently attached working card takes over.
    let path = format!("/v1/payment-methods/{}", first["id"].as_str().unwrap());
    assert_eq!(
        shop.send(&shop.test, Method::DELETE, &path).await.status(),
        204
    );
    let cards = shop.cards(&shop.test).await;
    assert_eq!(cards.len(), 2);
    let default: Vec<&Value> = cards.iter().filter(|c| c["is_default"] == true).collect();
    assert_eq!(default.len(), 1);
    assert_eq!(default[0]["id"], third["id"]);
    // Removed twice: gone.
    assert_refusal(
        shop.send(&shop.test, Method::DELETE, &path).await,
        404,
        "payment_method.not_found",
    )
    .await;

    // A card with an open charge is removed; the charge still completes on it.
    let (job_id, held) = shop.hold(1_000).await;
    assert_eq!(held.unwrap().status, ChargeStatus::Authorised);
    let path = format!("/v1/payment-methods/{}", third["id"].as_str().unwrap());
    assert_eq!(
        shop.send(&shop.test, Method::DELETE, &path).await.status(),
        204
    );
    let captured = shop.payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(captured.status, ChargeStatus::Captured);

    // Removing the last card leaves none to charge.
    let path = format!("/v1/payment-methods/{}", second["id"].as_str().unwrap());
    assert_eq!(
        shop.send(&shop.test, Method::DELETE, &path).await.status(),
        204
    );
    assert!(shop.cards(&shop.test).await.is_empty());
    let (_, held) = shop.hold(1_000).await;
    let refused = held.unwrap_err();
    assert!(matches!(refused, HoldError::NoPaymentMethod), "{refused:?}");
    assert_eq!(api_code(refused), (422, "payment.no_payment_method"));
}

// ---- holds, by sandbox card ---------------------------------------------------------------

#[tokio::test]
async fn the_working_card_is_held_captured_once_and_refunded() {
    let shop = Shop::open().await;
    shop.card(WORKS, false).await;
    let (job_id, held) = shop.hold(1_250).await;
    let held = held.unwrap();
    assert_eq!(held.status, ChargeStatus::Authorised);
    assert_eq!((held.amount_minor, held.currency.as_str()), (1_250, "USD"));
    // Holding again for the same job answers the same charge.
    let mut tx = shop.pool.begin().await.unwrap();
    let again = shop
        .payments
        .hold_for_job(
            &mut tx,
            &shop.caller(Environment::Test),
            job_id,
            1_250,
            "USD",
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(again.id, held.id);

    let captured = shop.payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(captured.status, ChargeStatus::Captured);
    let captured_at = captured.captured_at.unwrap();
    let again = shop.payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(
        (again.status, again.captured_at),
        (ChargeStatus::Captured, Some(captured_at))
    );
    assert_eq!(shop.moves_to(held.id, "captured").await, 1);
    // A captured charge is not released.
    let refused = shop.payments.void_for_job(job_id).await.unwrap_err();
    assert!(matches!(refused, PaymentError::InvalidMove(_)));
    assert_eq!(api_code(refused), (409, "charge.invalid_state"));

    let charges = shop.charges(&shop.test).await;
    assert_eq!(charges.len(), 1);
    let charge = &charges[0];
    assert_eq!(charge["id"], held.id.to_string());
    assert_eq!(charge["job_id"], job_id.to_string());
    assert_eq!(charge["status"], "captured");
    assert_eq!(charge["amount_minor"], 1_250);
    assert_eq!(charge["refunded_amount_minor"], 0);
    assert!(charge["raised_at"].is_string() && charge["captured_at"].is_string());
    assert_eq!(charge["decline_code"], Value::Null);
    assert_eq!(charge["last_error"], Value::Null);

    // Operator refunds: in part, then the rest; never more than was taken.
    let id = held.id.to_string();
    let (status, body) =
        status_and_json(shop.refund_keyed(&id, json!(500), "first-refund").await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["status"].as_str(),
            body["refunded_amount_minor"].as_i64()
        ),
        (Some("refunded"), Some(500))
    );
    // The same request again answers the first refund; its key for anything else is refused.
    let (status, again) =
        status_and_json(shop.refund_keyed(&id, json!(500), "first-refund").await).await;
    assert_eq!((status, &again), (200, &body));
    assert_refusal(
        shop.refund_keyed(&id, json!(400), "first-refund").await,
        409,
        "idempotency.key_reused",
    )
    .await;
    assert_refusal(
        shop.refund(&id, json!(751)).await,
        422,
        "charge.refund_exceeds_captured",
    )
    .await;
    assert_refusal(
        shop.refund(&id, json!(0)).await,
        422,
        "charge.invalid_amount",
    )
    .await;
    let (status, body) = status_and_json(shop.refund(&id, json!("750")).await).await;
    assert_eq!(
        (status, body["refunded_amount_minor"].as_i64()),
        (200, Some(1_250)),
        "{body}"
    );
    assert_refusal(
        shop.refund(&id, json!(1)).await,
        422,
        "charge.refund_exceeds_captured",
    )
    .await;
    assert_eq!(shop.moves_to(held.id, "refunded").await, 2);
    let operator: Vec<String> = sqlx::query_scalar(
        "SELECT actor FROM charge_moves WHERE charge_id = $1 AND to_status = 'refunded'",
    )
    .bind(held.id)
    .fetch_all(&shop.pool)
    .await
    .unwrap();
    assert_eq!(operator, ["admin", "admin"]);
    assert_refusal(
        shop.refund(&Uuid::new_v4().to_string(), json!(1)).await,
        404,
        "charge.not_found",
    )
    .await;
    let unauthenticated = shop
        .app
        .request(Method::POST, &format!("/admin/v1/charges/{id}/refund"))
        .json(&json!({"amount_minor": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
}

#[tokio::test]
async fn a_held_charge_is_voided_once_and_cannot_be_refunded() {
    let shop = Shop::open().await;
    shop.card(WORKS, false).await;
    let (job_id, held) = shop.hold(800).await;
    let held = held.unwrap();
    assert_refusal(
        shop.refund(&held.id.to_string(), json!(100)).await,
        409,
        "charge.not_refundable",
    )
    .await;
    let voided = shop.payments.void_for_job(job_id).await.unwrap();
    assert_eq!(voided.status, ChargeStatus::Voided);
    assert_eq!(
        shop.payments.void_for_job(job_id).await.unwrap().status,
        ChargeStatus::Voided
    );
    assert_eq!(shop.moves_to(held.id, "voided").await, 1);
    let refused = shop.payments.capture_for_job(job_id).await.unwrap_err();
    assert_eq!(api_code(refused), (409, "charge.invalid_state"));
    let refused = shop
        .payments
        .capture_for_job(Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!(api_code(refused), (404, "charge.not_found"));
    assert_eq!(shop.charges(&shop.test).await[0]["status"], "voided");
}

/// A decline refuses the hold; the booking rolls back, so no charge is left behind.
async fn declined(shop: &Shop, number: &str) -> String {
    shop.card(number, true).await;
    let (job_id, held) = shop.hold(1_000).await;
    let refused = held.unwrap_err();
    let HoldError::Declined { decline_code } = &refused else {
        panic!("{number}: {refused:?}");
    };
    let decline_code = decline_code.clone();
    let (status, code) = api_code(refused);
    assert_eq!((status, code), (422, "payment.card_declined"));
    assert!(shop.payments.charge_of_job(job_id).await.unwrap().is_none());
    assert!(shop.charges(&shop.test).await.is_empty());
    decline_code
}

#[tokio::test]
async fn declined_and_insufficient_funds_leave_the_card_active() {
    for (number, code) in [
        (DECLINED, "card_declined"),
        (INSUFFICIENT, "insufficient_funds"),
    ] {
        let shop = Shop::open().await;
        assert_eq!(declined(&shop, number).await, code);
        let cards = shop.cards(&shop.test).await;
        assert_eq!(cards[0]["status"], "active", "{number}");
        assert_eq!(cards[0]["is_default"], true);
        assert_eq!(cards[0]["dead_reason"], Value::Null);
        assert!(shop.dead_events().await.is_empty());
        // Never retried: nothing is queued.
        let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM charge_retries")
            .fetch_one(&shop.pool)
            .await
            .unwrap();
        assert_eq!(queued, 0);
        // The moment passes: the same card is tried again on the next booking.
        let (_, again) = shop.hold(1_000).await;
        assert!(matches!(again, Err(HoldError::Declined { .. })));
    }
}

#[tokio::test]
async fn expired_and_lost_cards_die_and_raise_payment_method_dead() {
    for (number, code, reason) in [
        (EXPIRED, "expired_card", "expired"),
        (LOST, "lost_card", "lost"),
    ] {
        let shop = Shop::open().await;
        let spare = shop.card(WORKS, false).await;
        assert_eq!(declined(&shop, number).await, code);
        let cards = shop.cards(&shop.test).await;
        let dead = cards
            .iter()
            .find(|c| c["last_four"] == number[12..])
            .unwrap();
        assert_eq!(dead["status"], "dead", "{number}");
        assert_eq!(dead["dead_reason"], reason);
        assert_eq!(dead["is_default"], false);
        // The working card took over as the default.
        let spare_now = cards.iter().find(|c| c["id"] == spare["id"]).unwrap();
        assert_eq!(spare_now["is_default"], true);
        // The event survived the booking's rollback.
        let events = shop.dead_events().await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["payment_method_id"], dead["id"]);
        assert_eq!(events[0]["brand"], "visa");
        assert_eq!(events[0]["last_four"], number[12..]);
        assert_eq!(events[0]["reason"], reason);
        // A dead card is not made the default again, and is not charged.
        let path = format!(
            "/v1/payment-methods/{}/default",
            dead["id"].as_str().unwrap()
        );
        assert_refusal(
            shop.send(&shop.test, Method::POST, &path).await,
            422,
            "payment.card_dead",
        )
        .await;
        let (_, held) = shop.hold(1_000).await;
        assert_eq!(held.unwrap().status, ChargeStatus::Authorised);
        // With the spare removed, nothing usable is left.
        let path = format!("/v1/payment-methods/{}", spare["id"].as_str().unwrap());
        assert_eq!(
            shop.send(&shop.test, Method::DELETE, &path).await.status(),
            204
        );
        let (_, held) = shop.hold(1_000).await;
        assert!(matches!(held, Err(HoldError::NoPaymentMethod)));
        assert_eq!(shop.dead_events().await.len(), 1);
    }
}

#[tokio::test]
async fn the_unreachable_card_stays_pending_and_the_service_worker_gives_up() {
    let shop = Shop::open_with(
        |name| match name {
            "COURIER_CHARGE_RETRY_BASE_MS" => Some("20".into()),
            "COURIER_CHARGE_RETRY_ATTEMPTS" => Some("3".into()),
            _ => None,
        },
        None,
    )
    .await;
    shop.card(UNREACHABLE, false).await;
    let (job_id, held) = shop.hold(1_000).await;
    let held = held.unwrap();
    assert_eq!(held.status, ChargeStatus::Pending);
    // The adapter's words ("card 0119: provider unreachable") stay out of what merchants read.
    assert_eq!(
        held.last_error.as_deref(),
        Some(
            "payment.provider_unreachable: no usable answer from the provider to the hold; trying again"
        )
    );
    // Released while pending: done once the hold resolves (here, never).
    assert_eq!(
        shop.payments.void_for_job(job_id).await.unwrap().status,
        ChargeStatus::Pending
    );
    // The service's own worker retries and gives up after the third attempt.
    let charge = eventually(
        "the service's worker to give the charge up",
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            let charge = shop.charges(&shop.test).await[0].clone();
            (charge["status"] == "failed").then_some(charge)
        },
    )
    .await;
    let last_error = charge["last_error"].as_str().unwrap();
    assert_eq!(
        last_error,
        "payment.provider_unreachable: no usable answer from the provider to the hold after 3 attempts"
    );
    assert_eq!(charge["decline_code"], Value::Null);
    assert_eq!(shop.cards(&shop.test).await[0]["status"], "active");
    assert_eq!(shop.moves_to(held.id, "failed").await, 1);
}

#[tokio::test]
async fn the_unreachable_card_recovers_when_the_provider_answers() {
    let flaky = Flaky::new(2, true).await;
    let shop = Shop::open_with(|_| None, Some(flaky.clone())).await;
    shop.card(UNREACHABLE, false).await;
    // The service's own worker would retry against the real sandbox: stop it, so that only
    // this test's worker (in front of the recovering provider) runs.
    let caller = shop.caller(Environment::Test);
    let Shop {
        app,
        pool,
        payments,
        ..
    } = shop;
    app.stop().await;
    let (job_id, held) = hold(&payments, &pool, &caller, 1_000).await;
    let held = held.unwrap();
    assert_eq!(held.status, ChargeStatus::Pending);
    assert_eq!(
        held.last_error.as_deref(),
        Some(
            "payment.provider_unreachable: no usable answer from the provider to the hold; trying again"
        )
    );
    // Delivered before the hold was placed: captured as soon as it is.
    assert_eq!(
        payments.capture_for_job(job_id).await.unwrap().status,
        ChargeStatus::Pending
    );
    let charge = eventually(
        "the retried charge to be captured",
        Duration::from_secs(3),
        Duration::from_millis(30),
        || async {
            payments.run_due_retries().await.unwrap();
            let charge = payments.charge_of_job(job_id).await.unwrap();
            charge.filter(|c| c.status == ChargeStatus::Captured)
        },
    )
    .await;
    assert_eq!(charge.last_error, None);
    // Three calls (two outages, then the answer), all with the charge's one key.
    let keys = flaky.authorisations.lock().unwrap().clone();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|k| *k == keys[0]));
    assert_eq!(flaky.captures.load(Ordering::SeqCst), 1);
    // A refund with the provider down is refused; nothing is given back.
    let refused = payments
        .refund(charge.id, 100, "ops", "refund-down")
        .await
        .unwrap_err();
    assert!(matches!(refused, PaymentError::ProviderUnreachable));
    assert_eq!(api_code(refused), (503, "payment.provider_unreachable"));
    let after = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(
        (after.status, after.refunded_amount_minor),
        (ChargeStatus::Captured, 0)
    );
}

#[tokio::test]
async fn a_refusal_for_good_is_neither_a_decline_nor_an_outage() {
    let flaky = Flaky::new(0, false).await;
    // A retry falls due long after the test is done.
    let policy = RetryPolicy {
        base: Duration::from_millis(1500),
        ..quick_retries(5)
    };
    let (payments, pool, caller) = without_server(&flaky, policy).await;
    let retry_row = |charge_id: Uuid| {
        sqlx::query_as::<_, (i32, chrono::DateTime<chrono::Utc>)>(
            "SELECT attempts, due_at FROM charge_retries WHERE charge_id = $1",
        )
        .bind(charge_id)
        .fetch_optional(&pool)
    };

    // A hold refused: nothing is held, no charge is raised, and the card is not blamed.
    flaky.refuse(&["authorise"]);
    let (job_id, held) = hold(&payments, &pool, &caller, 2_000).await;
    let refused = held.unwrap_err();
    assert_eq!(api_code(refused), (503, "payment.provider_refused"));
    assert!(payments.charge_of_job(job_id).await.unwrap().is_none());
    let cards = payments.cards(&caller).await.unwrap();
    assert!(cards.iter().all(|c| c.dead_reason.is_none()), "{cards:?}");

    // A capture refused: the money stays held, the charge authorised, and the move is shown
    // to operators at once (past the retry count), asked again only at the longest wait.
    flaky.refuse(&[]);
    let (job_id, held) = hold(&payments, &pool, &caller, 2_000).await;
    let held = held.unwrap();
    flaky.refuse(&["capture"]);
    let asked = chrono::Utc::now();
    let after = payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(after.status, ChargeStatus::Authorised);
    assert!(
        after
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("payment.provider_refused")),
        "{after:?}"
    );
    let (attempts, due) = retry_row(held.id).await.unwrap().expect("a retry row");
    assert_eq!(attempts, 5, "counted as past the retry count");
    let longest = chrono::Duration::from_std(policy.delay_after(5)).unwrap();
    assert!(due >= asked + longest, "due {due}, asked {asked}");

    // A refund refused: kept, shown to operators (past the retry count), nothing paid.
    flaky.refuse(&[]);
    let (job_id, _) = hold(&payments, &pool, &caller, 1_000).await;
    let captured = payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(captured.status, ChargeStatus::Captured);
    flaky.refuse(&["refund"]);
    let refused = payments
        .refund(captured.id, 400, "ops", "refund-refused")
        .await
        .unwrap_err();
    assert_eq!(api_code(refused), (503, "payment.provider_refused"));
    let (attempts, status): (i32, String) =
        sqlx::query_as("SELECT attempts, status FROM refunds WHERE charge_id = $1")
            .bind(captured.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((attempts, status.as_str()), (5, "requested"));
    let after = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(after.refunded_amount_minor, 0);
}

#[tokio::test]
async fn a_pending_capture_is_recorded_once_the_provider_shows_it_taken() {
    let (flaky, payments, pool, caller) = captures_pending(false).await;
    let (job_id, held) = hold(&payments, &pool, &caller, 2_000).await;
    let held = held.unwrap();
    // Accepted, not confirmed: the charge stays authorised, saying so.
    let after = payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(after.status, ChargeStatus::Authorised);
    assert!(
        after
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("awaiting the provider's confirmation of the capture")),
        "{after:?}"
    );
    // The retry reads the payment back and records what it shows, capturing nothing again.
    let captured = eventually(
        "the pending capture to be recorded",
        Duration::from_secs(3),
        Duration::from_millis(30),
        || async {
            payments.run_due_retries().await.unwrap();
            let charge = payments.charge_of_job(job_id).await.unwrap();
            charge.filter(|c| c.status == ChargeStatus::Captured)
        },
    )
    .await;
    assert_eq!(captured.last_error, None);
    assert_eq!(
        flaky.captures.load(Ordering::SeqCst),
        1,
        "asked to capture once"
    );
    let moves: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM charge_moves WHERE charge_id = $1 AND to_status = 'captured'",
    )
    .bind(held.id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(moves, 1);
}

/// A shop whose provider answers captures `pending` (and, `confirms_by_event`, confirms
/// captures and refunds only by its events), with a working card and the charge functions on
/// the test's database, and no server.
async fn captures_pending(confirms_by_event: bool) -> (Arc<Flaky>, Payments, PgPool, Merchant) {
    let flaky = Flaky::new(0, false).await;
    flaky.captures_pending.store(true, Ordering::SeqCst);
    flaky
        .confirms_by_event
        .store(confirms_by_event, Ordering::SeqCst);
    let (payments, pool, caller) = without_server(&flaky, quick_retries(5)).await;
    (flaky, payments, pool, caller)
}

/// A shop on `flaky` with a working card, its server stopped, so that only the returned
/// charge functions (on the test's database, retrying by `policy`) work on its charges.
async fn without_server(flaky: &Arc<Flaky>, policy: RetryPolicy) -> (Payments, PgPool, Merchant) {
    let shop = Shop::open_with(|_| None, Some(flaky.clone())).await;
    shop.card(WORKS, false).await;
    let caller = shop.caller(Environment::Test);
    let Shop { app, pool, .. } = shop;
    app.stop().await;
    let payments = Payments::new(
        pool.clone(),
        Gateways::new(flaky.clone(), None),
        policy,
        FanOutWakeup::default(),
    );
    (payments, pool, caller)
}

/// The provider's reference for the charge's payment.
async fn authorisation_of(pool: &PgPool, charge_id: Uuid) -> String {
    sqlx::query_scalar("SELECT authorisation_ref FROM charges WHERE id = $1")
        .bind(charge_id)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn count(pool: &PgPool, sql: &str, id: Uuid) -> i64 {
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_pending_capture_is_recorded_once_by_the_provider_s_event_however_often_it_comes() {
    let (flaky, payments, pool, caller) = captures_pending(true).await;
    let (job_id, held) = hold(&payments, &pool, &caller, 2_000).await;
    let held = held.unwrap();
    let reference = authorisation_of(&pool, held.id).await;
    let pending = payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(pending.status, ChargeStatus::Authorised);
    // Retries find nothing at the provider to read back: the charge keeps waiting.
    payments.run_due_retries().await.unwrap();
    assert_eq!(
        payments
            .charge_of_job(job_id)
            .await
            .unwrap()
            .unwrap()
            .status,
        ChargeStatus::Authorised
    );

    // Unsigned: refused, nothing kept.
    let (_, body) = flaky_notification(&[format!("evt_1 {reference} captured 2000")]);
    let refused = payments
        .receive_provider_events(Environment::Test, vec![], body)
        .await;
    assert!(
        matches!(refused, Err(PaymentError::EventUnverified)),
        "{refused:?}"
    );
    assert_eq!(
        api_code(refused.unwrap_err()),
        (401, "provider_event.unverified")
    );

    let (headers, body) = flaky_notification(&[format!("evt_1 {reference} captured 2000")]);
    for round in 0..3 {
        let received = payments
            .receive_provider_events(Environment::Test, headers.clone(), body.clone())
            .await
            .unwrap();
        assert_eq!(
            (received.received, received.duplicates),
            (1, usize::from(round > 0))
        );
    }
    let captured = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(captured.status, ChargeStatus::Captured);
    assert_eq!(captured.last_error, None);
    let moves = "SELECT count(*) FROM charge_moves WHERE charge_id = $1 AND to_status = 'captured'";
    assert_eq!(count(&pool, moves, held.id).await, 1);
    let retries = "SELECT count(*) FROM charge_retries WHERE charge_id = $1";
    assert_eq!(
        count(&pool, retries, held.id).await,
        0,
        "the retry is settled"
    );
    assert_eq!(
        flaky.captures.load(Ordering::SeqCst),
        1,
        "asked to capture once"
    );
}

/// A charge of `amount` held and captured (confirmed by the provider's event); its payment's
/// reference.
async fn captured_by_event(
    payments: &Payments,
    pool: &PgPool,
    caller: &Merchant,
    amount: i64,
) -> (Uuid, Uuid, String) {
    let (job_id, held) = hold(payments, pool, caller, amount).await;
    let charge_id = held.unwrap().id;
    let reference = authorisation_of(pool, charge_id).await;
    payments.capture_for_job(job_id).await.unwrap();
    tell(
        payments,
        &[format!("evt_cap_{charge_id} {reference} captured")],
        1,
    )
    .await;
    (job_id, charge_id, reference)
}

#[tokio::test]
async fn a_pending_refund_is_paid_by_the_provider_s_event_even_sent_before_its_answer() {
    let (_flaky, payments, pool, caller) = captures_pending(true).await;
    let (job_id, charge_id, reference) = captured_by_event(&payments, &pool, &caller, 3_000).await;
    assert_eq!(
        payments
            .charge_of_job(job_id)
            .await
            .unwrap()
            .unwrap()
            .status,
        ChargeStatus::Captured
    );
    // The refund's confirmation comes before the refund's answer is recorded, beside one for
    // a refund the service never asked for: both are kept, neither applies yet.
    let refund_ref = format!("refund_of_{reference}_1000");
    let early = format!("evt_ref_{charge_id}");
    let stranger = format!("evt_other_{charge_id}");
    let lines = [
        format!("{stranger} refund_unknown refunded 1000"),
        format!("{early} {refund_ref} refunded 1000"),
    ];
    let received = tell(&payments, &lines, 1).await;
    assert_eq!((received.received, received.duplicates), (2, 0));
    assert_eq!(
        payments
            .charge_of_job(job_id)
            .await
            .unwrap()
            .unwrap()
            .refunded_amount_minor,
        0
    );
    // The provider accepts the refund: pending, never taken for paid by its answer.
    let refunded = payments
        .refund(charge_id, 1_000, "ops@example.com", "refund-pending")
        .await;
    assert!(
        matches!(
            refunded,
            Ok(RefundOutcome::AwaitingProvider(ref c)) if c.refunded_amount_minor == 0
        ),
        "{refunded:?}"
    );
    // The retry worker applies the kept confirmation now that the refund names it.
    let charge = eventually(
        "the kept refund event to apply",
        Duration::from_secs(5),
        Duration::from_millis(30),
        || async {
            payments.run_due_retries().await.unwrap();
            let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
            (charge.status == ChargeStatus::Refunded).then_some(charge)
        },
    )
    .await;
    assert_eq!(charge.refunded_amount_minor, 1_000);
    let status: String = sqlx::query_scalar("SELECT status FROM refunds WHERE charge_id = $1")
        .bind(charge_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(status, "succeeded");
    let unapplied: Vec<String> = sqlx::query_scalar(
        "SELECT event_id FROM provider_events WHERE applied_at IS NULL AND event_id = ANY($1)",
    )
    .bind(vec![early, stranger.clone()])
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(unapplied, [stranger]);
}

#[tokio::test]
async fn a_capture_the_provider_reports_failed_keeps_the_hold_and_is_shown_to_operators() {
    let (_flaky, payments, pool, caller) = captures_pending(true).await;
    let (job_id, held) = hold(&payments, &pool, &caller, 2_500).await;
    let charge_id = held.unwrap().id;
    let reference = authorisation_of(&pool, charge_id).await;
    payments.capture_for_job(job_id).await.unwrap();
    tell(
        &payments,
        &[format!("evt_fail_{charge_id} {reference} capture-failed")],
        1,
    )
    .await;
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(charge.status, ChargeStatus::Authorised);
    assert!(
        charge
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("the provider reports the capture failed")),
        "{charge:?}"
    );
    let attempts: i32 =
        sqlx::query_scalar("SELECT attempts FROM charge_retries WHERE charge_id = $1")
            .bind(charge_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        attempts, 5,
        "past the retry count: among the payments needing a decision"
    );
}

/// Adyen documents `CAPTURE_FAILED` after `CAPTURE`: a capture confirmed and recorded is then
/// reported failed. Nothing was taken, so the charge is `authorised` again (the move says why),
/// shown to operators, and the capture is asked for again under a key of its own (under the
/// first, the provider would only replay its first answer).
#[tokio::test]
async fn a_capture_reported_failed_after_its_confirmation_is_taken_back_and_asked_again() {
    let (flaky, payments, pool, caller) = captures_pending(true).await;
    let (job_id, charge_id, reference) = captured_by_event(&payments, &pool, &caller, 2_400).await;
    let captured = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(captured.status, ChargeStatus::Captured);

    let failed = format!("evt_capfail_{charge_id} {reference} capture-failed");
    tell(&payments, &[failed], 2).await;
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(charge.status, ChargeStatus::Authorised, "{charge:?}");
    assert_eq!(charge.captured_at, None);
    assert!(
        charge
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("the provider reports the capture failed")),
        "{charge:?}"
    );
    let back: (String, String) = sqlx::query_as(
        "SELECT to_status, detail FROM charge_moves WHERE charge_id = $1 \
         AND from_status = 'captured'",
    )
    .bind(charge_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(back.0, "authorised");
    assert!(back.1.contains("acquirer error"), "{back:?}");

    // Asked again at the longest wait, under a new key.
    eventually(
        "the capture to be asked for again",
        Duration::from_secs(5),
        Duration::from_millis(30),
        || async {
            payments.run_due_retries().await.unwrap();
            (flaky.capture_keys.lock().unwrap().len() == 2).then_some(())
        },
    )
    .await;
    let keys = flaky.capture_keys.lock().unwrap().clone();
    assert_eq!(
        keys,
        [
            format!("charge_{charge_id}_capture"),
            format!("charge_{charge_id}_capture_1")
        ]
    );
    // Its confirmation records it once more.
    tell(
        &payments,
        &[format!("evt_cap2_{charge_id} {reference} captured")],
        1,
    )
    .await;
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(
        (charge.status, charge.last_error),
        (ChargeStatus::Captured, None)
    );
}

/// Adyen documents `REFUND_FAILED` after `REFUND`: a refund confirmed and recorded is then
/// reported failed. Nothing was given back: the refund is declined, the charge's refunded
/// amount goes back down (to `captured`), and the move says why.
#[tokio::test]
async fn a_refund_reported_failed_after_its_confirmation_is_taken_back_from_the_books() {
    let (_flaky, payments, pool, caller) = captures_pending(true).await;
    let (job_id, charge_id, reference) = captured_by_event(&payments, &pool, &caller, 3_000).await;
    let refunded = payments
        .refund(charge_id, 1_000, "ops@example.com", "refund-then-failed")
        .await;
    assert!(
        matches!(refunded, Ok(RefundOutcome::AwaitingProvider(_))),
        "{refunded:?}"
    );
    let refund_ref = format!("refund_of_{reference}_1000");
    tell(
        &payments,
        &[format!("evt_refund_{charge_id} {refund_ref} refunded 1000")],
        1,
    )
    .await;
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(
        (charge.status, charge.refunded_amount_minor),
        (ChargeStatus::Refunded, 1_000)
    );

    let failed = format!("evt_refund_failed_{charge_id} {refund_ref} refund-failed");
    tell(&payments, &[failed], 2).await;
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(
        (charge.status, charge.refunded_amount_minor),
        (ChargeStatus::Captured, 0),
        "{charge:?}"
    );
    let (status, decline): (String, Option<String>) =
        sqlx::query_as("SELECT status, decline_code FROM refunds WHERE charge_id = $1")
            .bind(charge_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), decline.as_deref()),
        ("declined", Some("processing_error"))
    );
    let back = "SELECT count(*) FROM charge_moves WHERE charge_id = $1 \
                AND from_status = 'refunded' AND to_status = 'captured'";
    assert_eq!(count(&pool, back, charge_id).await, 1);
    // What is left to give back counts the failed refund's amount again.
    let again = payments
        .refund(charge_id, 3_000, "ops@example.com", "refund-all-now")
        .await;
    assert!(
        matches!(again, Ok(RefundOutcome::AwaitingProvider(_))),
        "{again:?}"
    );
}

/// A capture asked for while the hold was pending is durable work from the moment the hold is
/// placed: here the hold's confirmation arrives while every place for a provider call is taken
/// (a slow release of another job's hold), so the follow-up cannot start; the retry worker
/// makes the capture once a place is free.
#[tokio::test]
async fn a_capture_asked_for_while_the_hold_was_pending_is_made_even_when_its_follow_up_fails() {
    let flaky = Flaky::new(0, false).await;
    flaky.captures_pending.store(true, Ordering::SeqCst);
    flaky.network.store(true, Ordering::SeqCst);
    let (payments, pool, caller) = without_server(&flaky, quick_retries(5)).await;
    let payments = Arc::new(payments.with_call_limits(CallLimits {
        max_calls: 1,
        ..CallLimits::default()
    }));
    // Another job's hold, placed; then this job's hold, pending, and its capture asked for.
    let (other_job, other) = hold(&payments, &pool, &caller, 900).await;
    assert_eq!(other.unwrap().status, ChargeStatus::Authorised);
    flaky.holds_pending.store(true, Ordering::SeqCst);
    let (job_id, held) = hold(&payments, &pool, &caller, 1_900).await;
    let charge_id = held.unwrap().id;
    assert_eq!(
        payments.capture_for_job(job_id).await.unwrap().status,
        ChargeStatus::Pending
    );
    let reference = authorisation_of(&pool, charge_id).await;

    // The other hold's release takes the only place for a call for a while.
    flaky.void_takes_ms.store(1_500, Ordering::SeqCst);
    let releasing = {
        let payments = Arc::clone(&payments);
        tokio::spawn(async move { payments.void_for_job(other_job).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The hold is confirmed meanwhile: checked in a place of its own, and recorded; the
    // capture that follows finds no place.
    let received = tell(
        &payments,
        &[format!("evt_held_{charge_id} {reference} held")],
        1,
    )
    .await;
    assert_eq!(received.received, 1);
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(charge.status, ChargeStatus::Authorised);
    assert_eq!(flaky.captures.load(Ordering::SeqCst), 0);
    releasing.await.unwrap().unwrap();

    // The retry worker (of any instance) makes the capture.
    eventually(
        "the capture to be asked for",
        Duration::from_secs(5),
        Duration::from_millis(30),
        || async {
            payments.run_due_retries().await.unwrap();
            (flaky.captures.load(Ordering::SeqCst) >= 1).then_some(())
        },
    )
    .await;
    payments.run_due_retries().await.unwrap();
    assert_eq!(
        flaky.captures.load(Ordering::SeqCst),
        1,
        "asked once: the capture's own retry waits for the provider's confirmation"
    );
    // Then it awaits the provider's confirmation, or, on a slow machine, a retry has already
    // asked the provider how it stands and found it captured.
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert!(
        charge.status == ChargeStatus::Captured
            || charge
                .last_error
                .as_deref()
                .is_some_and(|e| e.starts_with("awaiting the provider's confirmation")),
        "{charge:?}"
    );
}

#[tokio::test]
async fn concurrent_and_repeated_captures_capture_once() {
    let flaky = Flaky::new(0, false).await;
    let shop = Shop::open_with(|_| None, Some(flaky.clone())).await;
    shop.card(WORKS, false).await;
    let (job_id, held) = shop.hold(2_000).await;
    let held = held.unwrap();
    let (a, b) = tokio::join!(
        shop.payments.capture_for_job(job_id),
        shop.payments.capture_for_job(job_id)
    );
    // One of them calls the provider and records the capture; the other finds that call in
    // flight and leaves it to its caller (its answer: the charge as it was, or captured).
    let statuses = [a.unwrap().status, b.unwrap().status];
    assert!(statuses.contains(&ChargeStatus::Captured), "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| matches!(s, ChargeStatus::Captured | ChargeStatus::Authorised)),
        "{statuses:?}"
    );
    let again = shop.payments.capture_for_job(job_id).await.unwrap();
    assert_eq!(again.status, ChargeStatus::Captured);
    assert_eq!(flaky.captures.load(Ordering::SeqCst), 1);
    assert_eq!(shop.moves_to(held.id, "captured").await, 1);
}

#[tokio::test]
async fn two_instances_share_due_retries_without_doing_any_twice() {
    let first = Flaky::new(usize::MAX, false).await;
    let shop = Shop::open_with(|_| None, Some(first.clone())).await;
    shop.card(UNREACHABLE, false).await;
    let caller = shop.caller(Environment::Test);
    let Shop { app, pool, .. } = shop;
    // Only the two instances of this test work on the retries.
    app.stop().await;
    // A retry that fails falls due again only after the test is done with it, however slow
    // the machine: each instance's one pass can then only find what is due once.
    let patient = RetryPolicy {
        base: Duration::from_millis(1500),
        ..quick_retries(5)
    };
    let payments = Payments::new(
        pool.clone(),
        Gateways::new(first.clone(), None),
        patient,
        FanOutWakeup::default(),
    );
    let second = Flaky::new(usize::MAX, false).await;
    let other = Payments::new(
        pool.clone(),
        Gateways::new(second.clone(), None),
        patient,
        FanOutWakeup::default(),
    );
    for _ in 0..5 {
        let (_, held) = hold(&payments, &pool, &caller, 1_000).await;
        assert_eq!(held.unwrap().status, ChargeStatus::Pending);
    }
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let (a, b) = tokio::join!(payments.run_due_retries(), other.run_due_retries());
    assert_eq!(a.unwrap() + b.unwrap(), 5);
    let calls = |flaky: &Flaky| flaky.authorisations.lock().unwrap().len();
    assert_eq!(
        calls(&first) - 5 + calls(&second),
        5,
        "each retry made once"
    );
    let attempts: Vec<i32> = sqlx::query_scalar("SELECT attempts FROM charge_retries")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, [2; 5]);
}

/// A hold the provider places after its charge failed (its `held` event after the charge was
/// given up) holds money no job takes: it is released under the charge's release key, by the
/// retry worker, once; the charge stays `failed` and its moves say the hold was released.
#[tokio::test]
async fn a_hold_placed_after_its_charge_failed_is_released() {
    let flaky = Flaky::new(0, false).await;
    flaky.holds_pending.store(true, Ordering::SeqCst);
    let (payments, pool, caller) = without_server(&flaky, quick_retries(5)).await;
    let (job_id, held) = hold(&payments, &pool, &caller, 1_700).await;
    let charge_id = held.unwrap().id;
    let reference = authorisation_of(&pool, charge_id).await;
    tell(
        &payments,
        &[format!("evt_hf_{charge_id} {reference} hold-failed")],
        1,
    )
    .await;
    let failed = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(failed.status, ChargeStatus::Failed);

    // The provider places it all the same, and says so (twice).
    tell(
        &payments,
        &[format!("evt_h_{charge_id} {reference} held")],
        2,
    )
    .await;
    eventually(
        "the late hold to be released",
        Duration::from_secs(5),
        Duration::from_millis(30),
        || async {
            payments.run_due_retries().await.unwrap();
            let released = "SELECT count(*) FROM charge_moves WHERE charge_id = $1 \
                            AND from_status = 'failed' AND to_status = 'failed'";
            (count(&pool, released, charge_id).await == 1).then_some(())
        },
    )
    .await;
    payments.run_due_retries().await.unwrap();
    assert_eq!(
        *flaky.voids.lock().unwrap(),
        [(reference, format!("charge_{charge_id}_void"))],
        "released once"
    );
    let charge = payments.charge_of_job(job_id).await.unwrap().unwrap();
    assert_eq!(charge.status, ChargeStatus::Failed);
    let retries = "SELECT count(*) FROM charge_retries WHERE charge_id = $1";
    assert_eq!(count(&pool, retries, charge_id).await, 0);
}
