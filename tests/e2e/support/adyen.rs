//! A local stand-in for Adyen's Checkout API (v71) over HTTPS, and for its standard
//! notifications, for the Adyen adapter's tests. It follows Adyen's published API reference
//! for the endpoints the adapter uses, with state per object:
//!
//! - `POST /v71/sessions` (the Drop-in's session), completed as a shopper would, in a browser
//!   through the stand-in's Adyen Web (`/checkoutshopper/sdk/adyen.js`, which draws the
//!   Drop-in and calls `/checkoutshopper/v1/sessions/{id}/payments`) or by
//!   [`AdyenStandIn::complete_card_form`]: the card is stored for the session's
//!   `shopperReference`, and an `AUTHORISATION` notification with its
//!   `recurring.recurringDetailReference` is sent;
//! - `GET /v71/storedPaymentMethods`;
//! - `POST /v71/payments` with a stored card: `Authorised` (or, on command, `Received`, the
//!   outcome then said only by notification), or `Refused` with Adyen's
//!   `refusalReason` and `refusalReasonCode`, chosen as Adyen's test platform does by the
//!   card holder's name (`NOT_ENOUGH_BALANCE`, `CARD_EXPIRED`, `BLOCKED_CARD`, `DECLINED`,
//!   `CVC_DECLINED`, `FRAUD`);
//! - `POST /v71/payments/{pspReference}/captures`, `/cancels`, `/refunds`: `received`, then a
//!   notification (`CAPTURE`, `CANCELLATION`, `REFUND`, or a failure) signed with the
//!   webhook's HMAC key, sent to the configured address and sent again until it is accepted
//!   with a 2xx;
//! - Adyen's error body (`status`, `errorCode`, `message`, `errorType`), 401 for a wrong key,
//!   and idempotency: the same key and body answer the first answer again; a key still in use
//!   is 409, and one used with another body 422, both with errorCode `704`.
//!
//! Faults on command: a status without acting, acting then dropping the connection, and
//! acting only after a pause. Chaos on command ([`AdyenStandIn::unleash`]): every request
//! pauses and meets random faults, some holds are answered `Received`, and notifications come
//! late, out of order and some of them twice, to any of the service's instances.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use rand::Rng;
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::net::TcpListener;

use super::chaos::{Drawn, RequestChaos};
use super::tls::tls;

pub const API_KEY: &str = "AQE_courier_stand_in";
pub const MERCHANT_ACCOUNT: &str = "CourierECOM";
pub const CLIENT_KEY: &str = "test_COURIERSTANDIN";
/// The webhook's HMAC key, as Adyen's Customer Area shows it.
pub const HMAC_KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
/// The webhook's Basic authentication, as set beside the HMAC key in the Customer Area.
pub const NOTIFICATION_USER: &str = "courier-webhook";
pub const NOTIFICATION_PASSWORD: &str = "stand-in-webhook-password";

/// What a fault does to a request it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer this status with Adyen's error body, without acting.
    Status(u16),
    /// Act (and save the idempotent answer), then close the connection without answering.
    ActThenDrop,
    /// Act only after this pause (the caller has usually given up by then).
    Hang(Duration),
}

/// Random faults on requests, and late, repeated, reordered notifications
/// ([`AdyenStandIn::unleash`]).
struct Chaos {
    requests: RequestChaos,
    /// A hold is answered `Received` with this probability.
    pending_rate: f64,
    /// A notification waits up to this long before it is first sent.
    late: Duration,
    /// An accepted notification is sent again with this probability.
    repeat_rate: f64,
}

impl Chaos {
    /// The next request's fault, if any, and its pause.
    fn draw(&mut self) -> (Option<Fault>, Duration) {
        let (drawn, pause) = self.requests.draw();
        let fault = drawn.map(|drawn| match drawn {
            Drawn::Unavailable => Fault::Status(503),
            Drawn::ActThenDrop => Fault::ActThenDrop,
            Drawn::Hang(pause) => Fault::Hang(pause),
        });
        (fault, pause)
    }

    fn roll(&mut self, probability: f64) -> bool {
        self.requests.rng.random_bool(probability)
    }

    fn lateness(&mut self) -> Duration {
        self.late.mul_f64(self.requests.rng.random())
    }
}

/// A notification item waiting to be accepted, and when it may first be sent.
struct Queued {
    item: Value,
    not_before: Instant,
}

/// A card stored for a shopper.
#[derive(Clone, Debug)]
pub struct StoredCard {
    pub id: String,
    pub brand: String,
    pub last_four: String,
    pub holder: String,
}

/// A payment as the stand-in keeps it (amounts in Adyen's units).
#[derive(Clone, Debug)]
pub struct Payment {
    pub psp: String,
    pub reference: String,
    pub amount: i64,
    pub currency: String,
    /// `Authorised`, `Refused`, `Captured` or `Cancelled`.
    pub status: String,
    pub captured: i64,
    pub refunded: i64,
}

struct Saved {
    fingerprint: String,
    answer: Option<(u16, Value)>,
}

#[derive(Default)]
struct State {
    stored: BTreeMap<String, Vec<StoredCard>>,
    /// Session id → (shopper reference, currency).
    sessions: BTreeMap<String, (String, String)>,
    payments: BTreeMap<String, Payment>,
    saved: HashMap<String, Saved>,
    faults: Vec<(String, Fault, usize)>,
    key_revoked: bool,
    /// Where notifications go: one address, or under chaos any of them.
    notify_urls: Vec<String>,
    /// Notification items not yet accepted by the receiver, oldest first.
    outbox: Vec<Queued>,
    holding: bool,
    failing_captures: bool,
    /// Cancellations still to fail at the acquirer (received, then a failed notification).
    failing_cancels: usize,
    /// Each cancellation's `reference` (the key it was asked under), oldest first.
    cancellations: Vec<String>,
    /// Holds are answered `Received` (placed, said later by notification).
    pending_holds: bool,
    delivered: Vec<Value>,
    chaos: Option<Chaos>,
    /// Holds answered `Received`.
    holds_received: usize,
    /// Each session's `shopperEmail`, in the order the sessions were made.
    shopper_emails: Vec<Option<String>>,
    next: u64,
}

impl State {
    fn psp(&mut self) -> String {
        self.next += 1;
        // Sixteen characters, as Adyen's PSP references.
        format!("PSP{:013}", self.next)
    }

    fn take_fault(&mut self, path: &str) -> Option<Fault> {
        let index = self
            .faults
            .iter()
            .position(|(suffix, _, left)| path.ends_with(suffix.as_str()) && *left > 0)?;
        let (_, fault, left) = &mut self.faults[index];
        *left -= 1;
        Some(*fault)
    }

    /// The shopper completed the session's Drop-in with `number` under `holder`: the card is
    /// stored for the session's shopper and announced by notification. Its id; None for an
    /// unknown session.
    fn store_card(&mut self, session_id: &str, number: &str, holder: &str) -> Option<String> {
        let (shopper, currency) = self.sessions.get(session_id).cloned()?;
        let id = format!("{:016}", 8_415_718_415_172_200_u64 + self.next);
        let psp = self.psp();
        let brand = if number.starts_with('5') {
            "mc"
        } else {
            "visa"
        };
        let card = StoredCard {
            id: id.clone(),
            brand: brand.into(),
            last_four: number[number.len() - 4..].into(),
            holder: holder.into(),
        };
        self.stored.entry(shopper.clone()).or_default().push(card);
        self.notify(json!({
            "pspReference": psp, "originalReference": "",
            "merchantAccountCode": MERCHANT_ACCOUNT,
            "merchantReference": format!("card-form-{shopper}"),
            "amount": {"value": 0, "currency": currency},
            "eventCode": "AUTHORISATION", "success": "true", "reason": "",
            "paymentMethod": brand, "eventDate": "2026-11-28T10:00:00+00:00",
            "additionalData": {
                "recurring.recurringDetailReference": id,
                "recurring.shopperReference": shopper,
                "cardSummary": &number[number.len() - 4..],
                "expiryDate": "3/2030",
            },
        }));
        Some(id)
    }

    /// Queues a notification item for `payment` (`original` for a modification).
    fn notify(&mut self, item: Value) {
        let late = self.chaos.as_mut().map(Chaos::lateness).unwrap_or_default();
        self.outbox.push(Queued {
            item,
            not_before: Instant::now() + late,
        });
    }

    /// Whether this hold is answered `Received`.
    fn pends_hold(&mut self) -> bool {
        let pends =
            self.pending_holds || self.chaos.as_mut().is_some_and(|c| c.roll(c.pending_rate));
        self.holds_received += usize::from(pends);
        pends
    }

    /// The next notification to send, and where: the oldest, or under chaos any that is due,
    /// to any address.
    fn next_notification(&mut self) -> Option<(usize, String, Value)> {
        if self.holding || self.notify_urls.is_empty() {
            return None;
        }
        let now = Instant::now();
        let due: Vec<usize> = (0..self.outbox.len())
            .filter(|&i| self.outbox[i].not_before <= now)
            .collect();
        let (index, url) = match &mut self.chaos {
            None => (*due.first()?, 0),
            Some(chaos) if !due.is_empty() => (
                due[chaos.requests.rng.random_range(0..due.len())],
                chaos.requests.rng.random_range(0..self.notify_urls.len()),
            ),
            Some(_) => return None,
        };
        Some((
            index,
            self.notify_urls[url].clone(),
            self.outbox[index].item.clone(),
        ))
    }

    /// The receiver accepted the notification at `index`: it is delivered, and under chaos
    /// sometimes queued to be sent again later, as Adyen does now and then.
    fn accepted(&mut self, index: usize) {
        let repeat = self
            .chaos
            .as_mut()
            .and_then(|c| c.roll(c.repeat_rate).then(|| Instant::now() + c.lateness()));
        let queued = &mut self.outbox[index];
        self.delivered.push(queued.item.clone());
        match repeat {
            Some(not_before) => queued.not_before = not_before,
            None => {
                self.outbox.remove(index);
            }
        }
    }
}

pub struct AdyenStandIn {
    pub port: u16,
    /// PEM of the certificate authority that issued the stand-in's certificate.
    pub ca_path: PathBuf,
    state: Arc<Mutex<State>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl AdyenStandIn {
    pub async fn start() -> Self {
        let (acceptor, ca_pem) = tls();
        let ca_path = std::env::temp_dir().join(format!("adyen-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&ca_path, ca_pem).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let serving = Arc::clone(&state);
        let server = super::tls::serve(listener, Some(acceptor), move |request| {
            let state = Arc::clone(&serving);
            async move {
                // Finished whether or not the client is still there, as at Adyen.
                match tokio::spawn(handle(state, request)).await {
                    Ok(answer) => answer,
                    Err(e) => Err(std::io::Error::other(e)),
                }
            }
        });
        let notifier = tokio::spawn(send_notifications(Arc::clone(&state)));
        Self {
            port,
            ca_path,
            state,
            tasks: vec![server, notifier],
        }
    }

    pub fn api_base(&self) -> String {
        format!("https://localhost:{}/v71", self.port)
    }

    fn config_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!("adyen-config-{}.json", self.port))
    }

    /// The live adapter's configuration file for this stand-in.
    pub fn adapter_config(&self) -> PathBuf {
        let path = self.config_path();
        let config = json!({
            "api_key": API_KEY,
            "merchant_account": MERCHANT_ACCOUNT,
            "api_base": self.api_base(),
            "client_key": CLIENT_KEY,
            "hmac_key": HMAC_KEY,
            "notification_username": NOTIFICATION_USER,
            "notification_password": NOTIFICATION_PASSWORD,
        });
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }

    /// The service's environment for a live adapter talking to this stand-in.
    pub fn service_env(&self) -> Vec<(String, String)> {
        super::tls::live_adapter_env(&adyen_adapter_path(), &self.adapter_config(), &self.ca_path)
    }

    /// Where notifications go (the service's `/v1/provider-events/live`).
    pub fn notify_to(&self, url: String) {
        self.state.lock().unwrap().notify_urls = vec![url];
    }

    /// Notifications go to any of `urls` (the service's instances).
    #[allow(dead_code)]
    pub fn notify_any(&self, urls: Vec<String>) {
        self.state.lock().unwrap().notify_urls = urls;
    }

    /// Turns chaos on, drawn from `seed`: every request pauses log-normally (`median`, `p99`)
    /// and meets a fault with probability `fault_rate` (a 503, an answer lost after acting, or
    /// acting after `hang`); a third of the holds are answered `Received`; notifications wait
    /// up to `late`, go out in any order to any address, and a fifth are sent again. For the
    /// chaos run (`tests/chaos`).
    #[allow(dead_code)]
    pub fn unleash(
        &self,
        seed: u64,
        median: Duration,
        p99: Duration,
        fault_rate: f64,
        hang: Duration,
        late: Duration,
    ) {
        self.state.lock().unwrap().chaos = Some(Chaos {
            requests: RequestChaos::new(seed, median, p99, fault_rate, hang),
            pending_rate: 0.3,
            late,
            repeat_rate: 0.2,
        });
    }

    /// Turns chaos off: requests are answered at once without faults, and what is queued goes
    /// out in order (repeats already queued included).
    #[allow(dead_code)]
    pub fn calm(&self) {
        let mut s = self.state.lock().unwrap();
        s.chaos = None;
        let now = Instant::now();
        for queued in &mut s.outbox {
            queued.not_before = now;
        }
    }

    /// Keeps notifications back (`true`) until released (`false`).
    pub fn hold_notifications(&self, holding: bool) {
        self.state.lock().unwrap().holding = holding;
    }

    /// Captures from now on fail at the acquirer (`CAPTURE_FAILED` after `received`).
    pub fn fail_captures(&self, failing: bool) {
        self.state.lock().unwrap().failing_captures = failing;
    }

    /// The next `n` cancellations are received, then reported failed by notification.
    pub fn fail_cancels(&self, n: usize) {
        self.state.lock().unwrap().failing_cancels = n;
    }

    /// The reference (our key) of each cancellation asked for, oldest first, whether or not
    /// Adyen knows the payment.
    pub fn cancellations(&self) -> Vec<String> {
        self.state.lock().unwrap().cancellations.clone()
    }

    /// Holds from now on are answered `Received`, as Adyen answers a payment it processes
    /// asynchronously: the outcome comes by the `AUTHORISATION` notification.
    pub fn pend_holds(&self, pending: bool) {
        self.state.lock().unwrap().pending_holds = pending;
    }

    /// The next `times` requests whose path ends with `suffix` meet `fault`.
    pub fn inject(&self, suffix: &str, fault: Fault, times: usize) {
        self.state
            .lock()
            .unwrap()
            .faults
            .push((suffix.to_owned(), fault, times));
    }

    /// Every request answers 401 while `revoked`, as for a key that was revoked.
    pub fn revoke_key(&self, revoked: bool) {
        self.state.lock().unwrap().key_revoked = revoked;
    }

    /// The shopper completes the session's Drop-in with `number` under `holder`: the card is
    /// stored for the session's shopper and announced by notification. Answers its id.
    pub fn complete_card_form(&self, session_id: &str, number: &str, holder: &str) -> String {
        let mut s = self.state.lock().unwrap();
        s.store_card(session_id, number, holder).expect("a session")
    }

    /// The live adapter's configuration with `extra` settings, and the service's environment
    /// for it.
    pub fn service_env_with(&self, extra: &Value) -> Vec<(String, String)> {
        let path = self.adapter_config();
        let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for (name, value) in extra.as_object().unwrap() {
            config[name] = value.clone();
        }
        std::fs::write(&path, config.to_string()).unwrap();
        super::tls::live_adapter_env(&adyen_adapter_path(), &path, &self.ca_path)
    }

    /// Where this stand-in serves its Adyen Web (`adyen.js`, `adyen.css`): the adapter's
    /// `web_sdk_base`.
    pub fn web_sdk_base(&self) -> String {
        format!("https://localhost:{}/checkoutshopper/sdk/", self.port)
    }

    pub fn payments(&self) -> Vec<Payment> {
        self.state
            .lock()
            .unwrap()
            .payments
            .values()
            .cloned()
            .collect()
    }

    /// The notification items the receiver accepted, oldest first.
    pub fn delivered(&self) -> Vec<Value> {
        self.state.lock().unwrap().delivered.clone()
    }

    /// Each card-form session's `shopperEmail`, oldest first.
    pub fn shopper_emails(&self) -> Vec<Option<String>> {
        self.state.lock().unwrap().shopper_emails.clone()
    }

    /// How many holds were answered `Received`.
    #[allow(dead_code)]
    pub fn holds_received(&self) -> usize {
        self.state.lock().unwrap().holds_received
    }

    /// Items waiting to be accepted.
    pub fn undelivered(&self) -> usize {
        self.state.lock().unwrap().outbox.len()
    }
}

impl Drop for AdyenStandIn {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let _ = std::fs::remove_file(&self.ca_path);
        let _ = std::fs::remove_file(self.config_path());
    }
}

/// The built Adyen adapter component.
pub fn adyen_adapter_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/dist/adyen-payments.wasm"
    ))
}

/// Adyen's signature of a notification item.
pub fn sign(item: &Value) -> String {
    let text = |field: &str| item[field].as_str().unwrap_or_default().to_owned();
    let signing = [
        text("pspReference"),
        text("originalReference"),
        text("merchantAccountCode"),
        text("merchantReference"),
        item["amount"]["value"]
            .as_i64()
            .map(|v| v.to_string())
            .unwrap_or_default(),
        item["amount"]["currency"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        text("eventCode"),
        text("success"),
    ]
    .join(":");
    let key: Vec<u8> = (0..HMAC_KEY.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&HMAC_KEY[i..i + 2], 16).unwrap())
        .collect();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(signing.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// A signed notification of `items`, as Adyen sends it.
pub fn notification(items: &[Value]) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut item = item.clone();
            item["additionalData"]["hmacSignature"] = json!(sign(&item));
            json!({"NotificationRequestItem": item})
        })
        .collect();
    json!({"live": "false", "notificationItems": items})
}

/// Sends what is queued, one item per notification as Adyen's standard webhooks do, again and
/// again until the receiver answers 2xx.
async fn send_notifications(state: Arc<Mutex<State>>) {
    let client = reqwest::Client::new();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Some((index, url, item)) = state.lock().unwrap().next_notification() else {
            continue;
        };
        let sent = client
            .post(&url)
            .basic_auth(NOTIFICATION_USER, Some(NOTIFICATION_PASSWORD))
            .json(&notification(std::slice::from_ref(&item)))
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        if sent.is_ok_and(|r| r.status().is_success()) {
            let mut s = state.lock().unwrap();
            // Only this task takes items out, so the index still names the item sent.
            s.accepted(index);
        }
    }
}

fn error(status: u16, code: &str, kind: &str, message: &str) -> (u16, Value) {
    (
        status,
        json!({"status": status, "errorCode": code, "message": message, "errorType": kind}),
    )
}

/// Adyen Web as the shopper's browser loads it (`/checkoutshopper/sdk/adyen.js` and
/// `adyen.css`, and the frame of the card's fields), and the Drop-in's own call for a session
/// (`POST /checkoutshopper/v1/sessions/{id}/payments?clientKey=…`, authenticated by the client
/// key; Adyen's test platform takes `test_`-prefixed card fields unencrypted). None for every
/// other request.
fn web_sdk(
    state: &Mutex<State>,
    method: &str,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Option<hyper::Response<Full<Bytes>>> {
    let asset = |content_type: &str, body: &'static str| {
        hyper::Response::builder()
            .status(200)
            .header("content-type", content_type)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    };
    let rest = path.strip_prefix("/checkoutshopper/")?;
    match (method, rest) {
        ("GET", "sdk/adyen.js") => Some(asset(
            "text/javascript; charset=utf-8",
            include_str!("adyen-web/adyen.js"),
        )),
        ("GET", "sdk/adyen.css") => Some(asset(
            "text/css; charset=utf-8",
            include_str!("adyen-web/adyen.css"),
        )),
        ("GET", "securedfields/card.html") => Some(asset(
            "text/html; charset=utf-8",
            include_str!("adyen-web/card.html"),
        )),
        ("POST", rest) => {
            let session = rest
                .strip_prefix("v1/sessions/")?
                .strip_suffix("/payments")?;
            let client_key = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .find(|(name, _)| name == "clientKey")
                .map(|(_, value)| value.into_owned());
            if client_key.as_deref() != Some(CLIENT_KEY) {
                return Some(respond(error(401, "000", "security", "Invalid client key")));
            }
            let request: Value = serde_json::from_slice(body).unwrap_or_default();
            let method = &request["data"]["paymentMethod"];
            let field = |name: &str| {
                method[name]
                    .as_str()
                    .and_then(|v| v.strip_prefix("test_"))
                    .unwrap_or_default()
                    .to_owned()
            };
            let number: String = field("encryptedCardNumber")
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            let holder = method["holderName"].as_str().unwrap_or_default();
            if request["sessionData"].as_str().is_none_or(str::is_empty)
                || number.len() < 12
                || field("encryptedSecurityCode").is_empty()
            {
                return Some(respond(error(422, "702", "validation", "Unexpected input")));
            }
            let answer = if let Some((code, reason)) = refusal(holder) {
                json!({"resultCode": "Refused", "refusalReason": reason,
                       "refusalReasonCode": code})
            } else {
                match state.lock().unwrap().store_card(session, &number, holder) {
                    Some(_) => json!({"resultCode": "Authorised",
                                      "sessionResult": format!("X3XtfGC7!{}", uuid::Uuid::new_v4().simple())}),
                    None => {
                        return Some(respond(error(
                            422,
                            "14_006",
                            "validation",
                            "Session not found",
                        )));
                    }
                }
            };
            Some(respond((200, answer)))
        }
        _ => None,
    }
}

fn respond((status, body): (u16, Value)) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header(
            "pspreference",
            format!("{:016}", rand::random::<u64>() % 10u64.pow(16)),
        )
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
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
    if let Some(answer) = web_sdk(&state, &method, &path, parts.uri.query(), &body) {
        return Ok(answer);
    }
    let (fault, pause) = {
        let mut s = state.lock().unwrap();
        let injected = s.take_fault(&path);
        match (injected, s.chaos.as_mut().map(Chaos::draw)) {
            (Some(fault), _) => (Some(fault), Duration::ZERO),
            (None, Some((fault, pause))) => (fault, pause),
            (None, None) => (None, Duration::ZERO),
        }
    };
    tokio::time::sleep(pause).await;
    match fault {
        Some(Fault::Status(status)) => {
            return Ok(respond(error(status, "905", "internal", "stand-in fault")));
        }
        Some(Fault::Hang(pause)) => tokio::time::sleep(pause).await,
        _ => {}
    }
    let revoked = state.lock().unwrap().key_revoked;
    if revoked || header("x-api-key").as_deref() != Some(API_KEY) {
        return Ok(respond(error(
            401,
            "000",
            "security",
            "HTTP Status Response - Unauthorized",
        )));
    }
    let request: Value = if method == "POST" {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(_) => {
                return Ok(respond(error(400, "702", "validation", "Unexpected input")));
            }
        }
    } else {
        Value::Null
    };
    let key = header("idempotency-key").filter(|_| method == "POST");
    let fingerprint = format!("{method} {path} {request}");
    if let Some(key) = &key {
        let mut s = state.lock().unwrap();
        match s.saved.get(key) {
            // Still in progress: Adyen's HTTP-status reference documents 409 for it.
            Some(Saved { answer: None, .. }) => {
                return Ok(respond(error(
                    409,
                    "704",
                    "validation",
                    "request already processed or in progress",
                )));
            }
            Some(saved) if saved.fingerprint != fingerprint => {
                return Ok(respond(error(
                    422,
                    "704",
                    "validation",
                    "request already processed or in progress",
                )));
            }
            Some(Saved {
                answer: Some(answer),
                ..
            }) => {
                let response = respond(answer.clone());
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
    let query: BTreeMap<String, String> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let (answer, keep) = {
        let mut s = state.lock().unwrap();
        route(&mut s, &method, &path, &request, &query)
    };
    if let Some(key) = &key {
        let mut s = state.lock().unwrap();
        if keep {
            if let Some(saved) = s.saved.get_mut(key) {
                saved.answer = Some(answer.clone());
            }
        } else {
            // Refused requests are not kept under their key, as at Adyen.
            s.saved.remove(key);
        }
    }
    if fault == Some(Fault::ActThenDrop) {
        return Err(std::io::Error::other("dropped after acting"));
    }
    Ok(respond(answer))
}

/// Handles a request; the answer, and whether it is kept under its idempotency key.
fn route(
    s: &mut State,
    method: &str,
    path: &str,
    request: &Value,
    query: &BTreeMap<String, String>,
) -> ((u16, Value), bool) {
    let Some(path) = path.strip_prefix("/v71") else {
        return (error(404, "000", "validation", "Not found"), false);
    };
    let account = match method {
        "GET" => query.get("merchantAccount").map(String::as_str),
        _ => request["merchantAccount"].as_str(),
    };
    if account != Some(MERCHANT_ACCOUNT) {
        return (
            error(403, "901", "security", "Invalid Merchant Account"),
            false,
        );
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("POST", ["sessions"]) => sessions(s, request),
        ("GET", ["storedPaymentMethods"]) => {
            let shopper = query.get("shopperReference").cloned().unwrap_or_default();
            let cards: Vec<Value> = s
                .stored
                .get(&shopper)
                .into_iter()
                .flatten()
                .map(|c| {
                    json!({
                        "id": c.id, "brand": c.brand, "lastFour": c.last_four,
                        "expiryMonth": "03", "expiryYear": "2030", "holderName": c.holder,
                        "type": "scheme",
                        "supportedShopperInteractions": ["Ecommerce", "ContAuth"],
                        "supportedRecurringProcessingModels": ["CardOnFile", "UnscheduledCardOnFile"],
                    })
                })
                .collect();
            (
                (
                    200,
                    json!({"merchantAccount": MERCHANT_ACCOUNT, "shopperReference": shopper, "storedPaymentMethods": cards}),
                ),
                true,
            )
        }
        ("POST", ["payments"]) => pay(s, request),
        ("POST", ["payments", psp, kind @ ("captures" | "cancels" | "refunds")]) => {
            modify(s, psp, kind, request)
        }
        _ => (error(404, "000", "validation", "Not found"), false),
    }
}

fn sessions(s: &mut State, request: &Value) -> ((u16, Value), bool) {
    for field in [
        "amount",
        "reference",
        "returnUrl",
        "countryCode",
        "shopperReference",
    ] {
        if request.get(field).is_none() {
            let message = format!("Required field '{field}' is not provided.");
            return (error(422, "702", "validation", &message), false);
        }
    }
    s.next += 1;
    let id = format!("CS{:014X}", s.next);
    let shopper = request["shopperReference"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let currency = request["amount"]["currency"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    s.sessions.insert(id.clone(), (shopper, currency));
    s.shopper_emails
        .push(request["shopperEmail"].as_str().map(str::to_owned));
    let mut answer = request.clone();
    answer["id"] = json!(id);
    answer["sessionData"] = json!(format!("Ab02b4c0!{}", uuid::Uuid::new_v4().simple()));
    answer["expiresAt"] = json!("2026-12-31T00:00:00+00:00");
    ((201, answer), true)
}

/// Adyen's test platform refuses by the card holder's name.
fn refusal(holder: &str) -> Option<(&'static str, &'static str)> {
    Some(match holder {
        "NOT_ENOUGH_BALANCE" => ("12", "Not enough balance"),
        "CARD_EXPIRED" => ("6", "Expired Card"),
        "BLOCKED_CARD" => ("5", "Blocked Card"),
        "DECLINED" => ("2", "Refused"),
        "CVC_DECLINED" => ("24", "CVC Declined"),
        "FRAUD" => ("20", "FRAUD"),
        _ => return None,
    })
}

fn pay(s: &mut State, request: &Value) -> ((u16, Value), bool) {
    let shopper = request["shopperReference"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let stored_id = request["paymentMethod"]["storedPaymentMethodId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (Some(amount), Some(currency), Some(reference)) = (
        request["amount"]["value"].as_i64(),
        request["amount"]["currency"].as_str(),
        request["reference"].as_str(),
    ) else {
        return (
            error(422, "702", "validation", "Required field missing"),
            false,
        );
    };
    let Some(card) = s
        .stored
        .get(&shopper)
        .and_then(|cards| cards.iter().find(|c| c.id == stored_id))
        .cloned()
    else {
        return (error(422, "800", "validation", "Contract not found"), false);
    };
    let psp = s.psp();
    let refused = refusal(&card.holder);
    let manual = request["additionalData"]["manualCapture"] == "true";
    let payment = Payment {
        psp: psp.clone(),
        reference: reference.to_owned(),
        amount,
        currency: currency.to_owned(),
        status: if refused.is_some() {
            "Refused"
        } else if manual {
            "Authorised"
        } else {
            "Captured"
        }
        .into(),
        captured: if refused.is_none() && !manual {
            amount
        } else {
            0
        },
        refunded: 0,
    };
    s.payments.insert(psp.clone(), payment);
    let mut answer = json!({
        "pspReference": psp,
        "merchantReference": reference,
        "amount": {"value": amount, "currency": currency},
        "additionalData": {},
    });
    let mut item = json!({
        "pspReference": psp, "originalReference": "", "merchantAccountCode": MERCHANT_ACCOUNT,
        "merchantReference": reference, "amount": {"value": amount, "currency": currency},
        "eventCode": "AUTHORISATION", "reason": "", "additionalData": {},
    });
    match refused {
        Some((code, reason)) => {
            answer["resultCode"] = json!("Refused");
            answer["refusalReason"] = json!(reason);
            answer["refusalReasonCode"] = json!(code);
            item["success"] = json!("false");
            item["reason"] = json!(reason);
            item["additionalData"]["refusalReasonCode"] = json!(code);
        }
        None => {
            let said = if manual && s.pends_hold() {
                "Received"
            } else {
                "Authorised"
            };
            answer["resultCode"] = json!(said);
            item["success"] = json!("true");
        }
    }
    s.notify(item);
    ((200, answer), true)
}

fn modify(s: &mut State, psp: &str, kind: &str, request: &Value) -> ((u16, Value), bool) {
    let reference = request["reference"].as_str().unwrap_or_default().to_owned();
    if kind == "cancels" {
        s.cancellations.push(reference.clone());
    }
    let Some(payment) = s.payments.get(psp).cloned() else {
        return (
            error(
                422,
                "167",
                "validation",
                "Original pspReference required for this operation",
            ),
            false,
        );
    };
    let amount = request["amount"]["value"].as_i64();
    let currency = request["amount"]["currency"].as_str().map(str::to_owned);
    if kind != "cancels" && (amount.is_none() || currency.as_deref() != Some(&payment.currency)) {
        return (
            error(422, "137", "validation", "Invalid amount specified"),
            false,
        );
    }
    let amount = amount.unwrap_or(payment.amount);
    let modification = s.psp();
    let failing_captures = s.failing_captures;
    let (event, success, reason) = match kind {
        "captures" => {
            let fits = payment.status == "Authorised" && amount <= payment.amount;
            if fits && !failing_captures {
                let p = s.payments.get_mut(psp).unwrap();
                p.status = "Captured".into();
                p.captured = amount;
                ("CAPTURE", "true", "")
            } else if fits {
                ("CAPTURE_FAILED", "true", "Capture failed at the acquirer")
            } else {
                ("CAPTURE", "false", "Insufficient balance on payment")
            }
        }
        "cancels" => {
            if payment.status == "Authorised" && s.failing_cancels > 0 {
                s.failing_cancels -= 1;
                (
                    "CANCELLATION",
                    "false",
                    "Cancellation failed at the acquirer",
                )
            } else if payment.status == "Authorised" {
                s.payments.get_mut(psp).unwrap().status = "Cancelled".into();
                ("CANCELLATION", "true", "")
            } else {
                (
                    "CANCELLATION",
                    "false",
                    "Payment is not in a cancellable state",
                )
            }
        }
        _ => {
            if payment.status == "Captured" && payment.refunded + amount <= payment.captured {
                s.payments.get_mut(psp).unwrap().refunded += amount;
                ("REFUND", "true", "")
            } else {
                (
                    "REFUND",
                    "false",
                    "Insufficient in-process funds on account",
                )
            }
        }
    };
    let mut item = json!({
        "pspReference": modification, "originalReference": psp,
        "merchantAccountCode": MERCHANT_ACCOUNT, "merchantReference": reference,
        "eventCode": event, "success": success, "reason": reason, "additionalData": {},
    });
    let mut answer = json!({
        "merchantAccount": MERCHANT_ACCOUNT, "paymentPspReference": psp,
        "pspReference": modification, "reference": reference, "status": "received",
    });
    if kind != "cancels" {
        let money = json!({"value": amount, "currency": payment.currency});
        item["amount"] = money.clone();
        answer["amount"] = money;
    }
    s.notify(item);
    ((201, answer), true)
}
