//! A real HTTPS webhook receiver for the tests: its own certificate authority (written to a PEM
//! file for `COURIER_WEBHOOK_EXTRA_CA`), scripted answers per path, and a record of every
//! request with the signature check of the spec's section 6.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use sha2::Sha256;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use super::tls::tls;

/// One request as it arrived.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub content_type: String,
    pub event: String,
    pub delivery: String,
    pub signature: String,
    pub authorization: String,
    pub idempotency_key: String,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Received {
    /// The receiver-side check of spec section 6: split the header into `t` and `v1`, HMAC-SHA256
    /// over `{t}.{raw body}` with the secret, constant-time compare, and `t` within 300 s.
    /// Any of the header's `v1` entries may match (there are two while a rotated-away secret
    /// still signs).
    pub fn verifies_with(&self, secret: &str) -> bool {
        let mut t = None;
        let mut v1s = Vec::new();
        for part in self.signature.split(',') {
            match part.split_once('=') {
                Some(("t", value)) => t = value.parse::<i64>().ok(),
                Some(("v1", value)) => v1s.extend(hex::decode(value).ok()),
                _ => {}
            }
        }
        let Some(t) = t else {
            return false;
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        if (now - t).abs() > 300 {
            return false;
        }
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(&self.body);
        // `verify_slice` compares in constant time.
        v1s.iter().any(|v1| mac.clone().verify_slice(v1).is_ok())
    }

    /// How many `v1` entries the signature carries.
    pub fn signature_count(&self) -> usize {
        self.signature
            .split(',')
            .filter(|part| part.starts_with("v1="))
            .count()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("webhook bodies are JSON")
    }
}

/// How the receiver answers one request.
#[derive(Clone, Copy, Debug)]
pub enum Reply {
    Status(u16),
    /// Answer after a pause (to exceed the service's deadline).
    Slow(Duration, u16),
    /// 302 to another path.
    Redirect(&'static str),
    /// A status with a body of its own (the others answer `ok`).
    Said(u16, &'static str),
}

/// Chooses the reply to the `n`th request (from 0) on a path.
type Script = Arc<dyn Fn(usize) -> Reply + Send + Sync>;

#[derive(Default)]
struct State {
    received: Mutex<Vec<Received>>,
    /// Requests per path so far (the benchmark sends tens of thousands).
    counts: Mutex<HashMap<String, usize>>,
    scripts: Mutex<HashMap<String, Script>>,
    arrived: Notify,
}

pub struct Receiver {
    pub port: u16,
    /// `https`, or `http` for a receiver started with [`Receiver::start_plain`].
    scheme: &'static str,
    /// PEM of the certificate authority that issued the receiver's certificate.
    pub ca_path: PathBuf,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Self {
        Self::start_serving(true).await
    }

    /// A plain-HTTP receiver, standing in for services the operator configures (an SMS
    /// gateway), which are not subject to the webhooks' https rule.
    pub async fn start_plain() -> Self {
        Self::start_serving(false).await
    }

    async fn start_serving(with_tls: bool) -> Self {
        let (acceptor, ca_pem) = tls();
        let ca_path = std::env::temp_dir().join(format!("courier-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&ca_path, ca_pem).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let serving = Arc::clone(&state);
        let task = super::tls::serve(listener, with_tls.then_some(acceptor), move |request| {
            handle(Arc::clone(&serving), request)
        });
        Self {
            port,
            scheme: if with_tls { "https" } else { "http" },
            ca_path,
            state,
            task,
        }
    }

    /// The URL of `path` (by host name, so the service's resolver is used).
    pub fn url(&self, path: &str) -> String {
        format!("{}://localhost:{}{path}", self.scheme, self.port)
    }

    /// Answers on `path` from now on (the default is 200).
    pub fn script(&self, path: &str, script: impl Fn(usize) -> Reply + Send + Sync + 'static) {
        self.state
            .scripts
            .lock()
            .unwrap()
            .insert(path.to_owned(), Arc::new(script));
    }

    pub fn received(&self, path: &str) -> Vec<Received> {
        let all = self.state.received.lock().unwrap();
        all.iter().filter(|r| r.path == path).cloned().collect()
    }

    /// Every request from the `skip`-th on: its `Courier-Delivery`, arrival and body.
    pub fn arrivals_since(&self, skip: usize) -> Vec<(String, Instant, Vec<u8>)> {
        let all = self.state.received.lock().unwrap();
        all.iter()
            .skip(skip)
            .map(|r| (r.delivery.clone(), r.at, r.body.clone()))
            .collect()
    }

    pub fn total(&self) -> usize {
        self.state.received.lock().unwrap().len()
    }

    /// Waits until `path` has had at least `count` requests; panics after `within`.
    pub async fn wait_for(&self, path: &str, count: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let arrived = self.state.arrived.notified();
            let got = self.received(path);
            if got.len() >= count {
                return got;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "{path}: {} of {count} requests arrived in {within:?}",
                got.len()
            );
            let _ = tokio::time::timeout(left.min(Duration::from_millis(100)), arrived).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.ca_path);
    }
}

async fn handle(
    state: Arc<State>,
    request: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes().to_vec();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let path = parts.uri.path().to_owned();
    let received = Received {
        path: path.clone(),
        content_type: header("content-type"),
        event: header("courier-event"),
        delivery: header("courier-delivery"),
        signature: header("courier-signature"),
        authorization: header("authorization"),
        idempotency_key: header("idempotency-key"),
        body,
        at: Instant::now(),
    };
    let nth = {
        let mut counts = state.counts.lock().unwrap();
        let count = counts.entry(path.clone()).or_default();
        *count += 1;
        state.received.lock().unwrap().push(received);
        *count - 1
    };
    state.arrived.notify_waiters();
    let script = state.scripts.lock().unwrap().get(&path).cloned();
    let reply = script.map_or(Reply::Status(200), |script| script(nth));
    let response = hyper::Response::builder();
    let (response, body) = match reply {
        Reply::Status(status) => (response.status(status), "ok"),
        Reply::Slow(pause, status) => {
            tokio::time::sleep(pause).await;
            (response.status(status), "ok")
        }
        Reply::Redirect(to) => (response.status(302).header("location", to), "ok"),
        Reply::Said(status, body) => (response.status(status), body),
    };
    Ok(response
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap())
}
