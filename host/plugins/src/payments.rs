//! Payment adapters (`courier:payments/payment-adapter@2.0.0`).
//!
//! Calls block for as long as the adapter's HTTP requests take (seconds at
//! worst): from async code, call them through `spawn_blocking`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::Store;
use wasmtime::component::HasSelf;

use crate::PluginError;
use crate::engine::{CallState, PluginEngine, Runtime};
use crate::limits::{check_input, check_output};
pub use crate::outbound::NetworkOverrides;
use crate::outbound::{AdapterHost, Exchange, HttpFailure, HttpPolicy, HttpRequest, Method};

mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit/payments",
        world: "payment-adapter",
    });
}

use wit::courier::payments::{config as wconfig, outbound_http as whttp, types as w};

pub(crate) const WORLD: &str = "courier:payments/payment-adapter@2.0.0";

/// Operator-set values the adapter reads through its `config` import
/// (provider keys and account ids, per environment).
#[derive(Debug, Clone)]
pub struct AdapterConfig {
    pub values: BTreeMap<String, String>,
    /// Timeout of each outbound HTTP request.
    pub http_timeout: Duration,
    /// Largest HTTP response body handed to the adapter.
    pub max_response_bytes: usize,
    /// Test-only widenings of where requests may go (off by default).
    pub network: NetworkOverrides,
}

impl Default for AdapterConfig {
    /// No values, 10 s per HTTP request, 1 MiB responses.
    fn default() -> Self {
        AdapterConfig::new(BTreeMap::new())
    }
}

impl AdapterConfig {
    /// The given values with the default HTTP limits.
    pub fn new(values: BTreeMap<String, String>) -> Self {
        AdapterConfig {
            values,
            http_timeout: Duration::from_secs(10),
            max_response_bytes: 1 << 20,
            network: NetworkOverrides::default(),
        }
    }
}

/// What the adapter declares about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AdapterInfo {
    pub name: String,
    pub version: String,
    /// The only hosts its outbound HTTP may reach.
    pub allowed_hosts: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CardForm {
    pub client_secret: String,
    pub customer_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Card {
    pub brand: String,
    pub last_four: String,
    pub expiry_month: u8,
    pub expiry_year: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Expired,
    Lost,
    RefusedForGood,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decline {
    pub code: String,
    /// `Some` when the card will never work again.
    pub card_finished: Option<FinishReason>,
}

/// The result of every money-moving operation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum Outcome {
    /// The provider's reference for what was created.
    Approved(String),
    /// Refused; not to be retried.
    Declined(Decline),
    /// Nothing known to have happened; retry later with the same key.
    Unreachable(String),
    /// An earlier request with the same key is still being worked on at the
    /// provider; its outcome is not known yet. Ask again later.
    InFlight(String),
}

/// Where a payment stands at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PaymentStatus {
    Held,
    Captured,
    Released,
    Refused,
    Processing,
}

/// A payment as the provider holds it ([`PaymentAdapter::retrieve`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentState {
    pub reference: String,
    /// The idempotency key of the hold that made it, when the provider kept it.
    pub hold_key: Option<String>,
    pub status: PaymentStatus,
    pub amount_minor: i64,
    pub captured_minor: i64,
    pub refunded_minor: i64,
    /// Upper case.
    pub currency: String,
    /// Unix seconds.
    pub created_at: i64,
}

/// Why [`PaymentAdapter::retrieve`] has no state.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum LookupFailure {
    NotFound,
    Unreachable(String),
}

/// A page of [`PaymentAdapter::list_payments`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentPage {
    pub payments: Vec<PaymentState>,
    pub next: Option<String>,
}

/// Payments an adapter may list in one page.
const MAX_PAGE: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum AttachRefusal {
    UnknownReference(String),
    Declined(Decline),
    Unreachable(String),
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldRequest {
    pub amount_minor: i64,
    pub currency: String,
    pub card_ref: String,
    pub customer_id: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureRequest {
    pub authorisation: String,
    pub amount_minor: i64,
    pub currency: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoidRequest {
    pub authorisation: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundRequest {
    pub payment: String,
    pub amount_minor: i64,
    pub currency: String,
    pub idempotency_key: String,
}

impl whttp::Host for CallState {
    fn send(&mut self, request: whttp::Request) -> Result<whttp::Response, whttp::Error> {
        let Some(http) = self.adapter.as_ref().and_then(|a| a.http.clone()) else {
            return Err(whttp::Error::Forbidden("no network for this call".into()));
        };
        let request = HttpRequest {
            method: match request.method {
                whttp::Method::Get => Method::Get,
                whttp::Method::Post => Method::Post,
                whttp::Method::Put => Method::Put,
                whttp::Method::Patch => Method::Patch,
                whttp::Method::Delete => Method::Delete,
            },
            url: request.url,
            headers: request.headers,
            body: request.body,
        };
        let answer = match self.adapter.as_ref().filter(|a| a.exchanges.is_some()) {
            // Copied for the exchange's record only when watched; the service never watches.
            Some(host) => {
                let started = std::time::Instant::now();
                let kept = request.clone();
                let answer = http.send(request, self.deadline);
                host.note(&kept, &answer, started.elapsed());
                answer
            }
            None => http.send(request, self.deadline),
        };
        match answer {
            Ok(r) => Ok(whttp::Response {
                status: r.status,
                headers: r.headers,
                body: r.body,
            }),
            Err(HttpFailure::Forbidden(m)) => Err(whttp::Error::Forbidden(m)),
            Err(HttpFailure::Timeout) => Err(whttp::Error::Timeout),
            Err(HttpFailure::Connection(m)) => Err(whttp::Error::Connection(m)),
            Err(HttpFailure::TooLarge) => Err(whttp::Error::TooLarge),
        }
    }
}

impl w::Host for CallState {}

impl wconfig::Host for CallState {
    fn get(&mut self, key: String) -> Option<String> {
        self.adapter.as_ref()?.config.get(&key).cloned()
    }
}

/// A loaded payment adapter. Cheap to clone; fresh instance per call.
#[derive(Clone)]
pub struct PaymentAdapter {
    inner: Arc<Loaded>,
}

struct Loaded {
    runtime: Arc<Runtime>,
    pre: wit::PaymentAdapterPre<CallState>,
    host: Arc<AdapterHost>,
    info: AdapterInfo,
    sha256: String,
}

impl std::fmt::Debug for PaymentAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaymentAdapter")
            .field("info", &self.inner.info)
            .field("sha256", &self.inner.sha256)
            .finish_non_exhaustive()
    }
}

impl PaymentAdapter {
    /// Compiles (or loads from the cache), links, and asks the adapter to
    /// describe itself; its declared hosts become its HTTP allow-list.
    pub fn load(
        engine: &PluginEngine,
        bytes: &[u8],
        config: AdapterConfig,
    ) -> Result<Self, PluginError> {
        Self::load_as(engine, bytes, config, false)
    }

    /// [`load`](Self::load), keeping every HTTP exchange of its calls for
    /// [`take_exchanges`](Self::take_exchanges): for `courier adapter run`, never the service.
    pub fn load_watched(
        engine: &PluginEngine,
        bytes: &[u8],
        config: AdapterConfig,
    ) -> Result<Self, PluginError> {
        Self::load_as(engine, bytes, config, true)
    }

    /// The exchanges made since the last time, oldest first (none unless loaded watched).
    pub fn take_exchanges(&self) -> Vec<Exchange> {
        self.inner
            .host
            .exchanges
            .as_ref()
            .map(|kept| {
                std::mem::take(
                    &mut *kept
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner),
                )
            })
            .unwrap_or_default()
    }

    /// The limits every call runs under.
    pub fn limits(&self) -> &crate::Limits {
        &self.inner.runtime.limits
    }

    fn load_as(
        engine: &PluginEngine,
        bytes: &[u8],
        config: AdapterConfig,
        watched: bool,
    ) -> Result<Self, PluginError> {
        let runtime = engine.runtime.clone();
        let component = runtime.component(bytes)?;
        let pre = runtime.instance_pre(WORLD, &component, |linker| {
            wit::PaymentAdapter::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s)
        })?;
        let pre = wit::PaymentAdapterPre::new(pre).map_err(|e| PluginError::Incompatible {
            world: WORLD,
            reason: format!("{e:#}"),
        })?;
        // `describe` runs with the configuration but no network.
        let describing = Arc::new(AdapterHost {
            http: None,
            config: config.values.clone(),
            exchanges: None,
        });
        let info = run(&runtime, &pre, Some(describing), |a, s| a.call_describe(s))?.map_err(
            |reason| {
                let limit = runtime.limits.max_text_bytes;
                match check_output("configuration refusal", &reason, limit) {
                    Ok(()) => PluginError::Misconfigured(reason),
                    Err(error) => error,
                }
            },
        )?;
        let limits = &runtime.limits;
        check_output("adapter name", &info.name, limits.max_text_bytes)?;
        check_output("adapter version", &info.version, limits.max_text_bytes)?;
        if info.allowed_hosts.len() > 64 {
            return Err(PluginError::OutputTooLarge(
                "more than 64 allowed hosts".into(),
            ));
        }
        let http = HttpPolicy::new(
            &info.allowed_hosts,
            config.http_timeout,
            config.max_response_bytes,
            &config.network,
        )
        .map_err(|reason| PluginError::Incompatible {
            world: WORLD,
            reason: format!("outbound HTTP: {reason}"),
        })?;
        Ok(PaymentAdapter {
            inner: Arc::new(Loaded {
                runtime,
                pre,
                host: Arc::new(AdapterHost {
                    http: Some(http),
                    config: config.values,
                    exchanges: watched.then(Default::default),
                }),
                info: AdapterInfo {
                    name: info.name,
                    version: info.version,
                    allowed_hosts: info.allowed_hosts,
                },
                sha256: crate::engine::sha256_hex(bytes),
            }),
        })
    }

    pub fn info(&self) -> &AdapterInfo {
        &self.inner.info
    }

    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// Whether the adapter reaches the network (declares allowed hosts).
    /// One that does not is a bounded computation, like a price book.
    pub fn uses_network(&self) -> bool {
        !self.inner.info.allowed_hosts.is_empty()
    }

    /// Starts a card form; `Ok(Err(message))` when the provider was not
    /// reachable.
    pub fn setup_card_form(&self, merchant: &str) -> Result<Result<CardForm, String>, PluginError> {
        self.check_inputs(&[("merchant", merchant)])?;
        match self.call(|a, s| a.call_setup_card_form(s, merchant))? {
            Ok(f) => {
                self.check_outputs(&[
                    ("client secret", &f.client_secret),
                    ("customer id", &f.customer_id),
                ])?;
                Ok(Ok(CardForm {
                    client_secret: f.client_secret,
                    customer_id: f.customer_id,
                }))
            }
            Err(m) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(m))
            }
        }
    }

    pub fn attach_card(
        &self,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<Card, AttachRefusal>, PluginError> {
        self.check_inputs(&[("customer id", customer_id), ("card reference", card_ref)])?;
        match self.call(|a, s| a.call_attach_card(s, customer_id, card_ref))? {
            Ok(c) => {
                self.check_outputs(&[("brand", &c.brand), ("last four", &c.last_four)])?;
                Ok(Ok(Card {
                    brand: c.brand,
                    last_four: c.last_four,
                    expiry_month: c.expiry_month,
                    expiry_year: c.expiry_year,
                }))
            }
            Err(w::AttachRefusal::UnknownReference(m)) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(AttachRefusal::UnknownReference(m)))
            }
            Err(w::AttachRefusal::Declined(d)) => {
                Ok(Err(AttachRefusal::Declined(self.decline(d)?)))
            }
            Err(w::AttachRefusal::Unreachable(m)) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(AttachRefusal::Unreachable(m)))
            }
        }
    }

    /// Holds money on a card.
    pub fn authorise(&self, r: &HoldRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("currency", &r.currency),
            ("card reference", &r.card_ref),
            ("customer id", &r.customer_id),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let wire = w::HoldRequest {
            amount_minor: r.amount_minor,
            currency: r.currency.clone(),
            card_ref: r.card_ref.clone(),
            customer_id: r.customer_id.clone(),
            idempotency_key: r.idempotency_key.clone(),
        };
        let o = self.call(|a, s| a.call_authorise(s, &wire))?;
        self.outcome(o)
    }

    /// Takes held money.
    pub fn capture(&self, r: &CaptureRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("authorisation", &r.authorisation),
            ("currency", &r.currency),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let wire = w::CaptureRequest {
            authorisation: r.authorisation.clone(),
            amount_minor: r.amount_minor,
            currency: r.currency.clone(),
            idempotency_key: r.idempotency_key.clone(),
        };
        let o = self.call(|a, s| a.call_capture(s, &wire))?;
        self.outcome(o)
    }

    /// Releases a hold.
    pub fn void(&self, r: &VoidRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("authorisation", &r.authorisation),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let wire = w::VoidRequest {
            authorisation: r.authorisation.clone(),
            idempotency_key: r.idempotency_key.clone(),
        };
        let o = self.call(|a, s| a.call_void(s, &wire))?;
        self.outcome(o)
    }

    /// Gives captured money back.
    pub fn refund(&self, r: &RefundRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("payment", &r.payment),
            ("currency", &r.currency),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let wire = w::RefundRequest {
            payment: r.payment.clone(),
            amount_minor: r.amount_minor,
            currency: r.currency.clone(),
            idempotency_key: r.idempotency_key.clone(),
        };
        let o = self.call(|a, s| a.call_refund(s, &wire))?;
        self.outcome(o)
    }

    /// Reads a payment back by the reference its hold was approved with.
    pub fn retrieve(
        &self,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError> {
        self.check_inputs(&[("provider reference", reference)])?;
        match self.call(|a, s| a.call_retrieve(s, reference))? {
            Ok(state) => Ok(Ok(self.payment_state(state)?)),
            Err(w::LookupFailure::NotFound) => Ok(Err(LookupFailure::NotFound)),
            Err(w::LookupFailure::Unreachable(m)) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(LookupFailure::Unreachable(m)))
            }
        }
    }

    /// The provider's payments made since `since` (Unix seconds), a page at a
    /// time; `Ok(Err(message))` when the provider could not be reached.
    pub fn list_payments(
        &self,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError> {
        self.check_inputs(&[("page token", after.unwrap_or_default())])?;
        match self.call(|a, s| a.call_list_payments(s, since, after))? {
            Ok(page) => {
                if page.payments.len() > MAX_PAGE {
                    return Err(PluginError::OutputTooLarge(format!(
                        "more than {MAX_PAGE} payments in a page"
                    )));
                }
                if let Some(next) = &page.next {
                    self.check_outputs(&[("page token", next)])?;
                }
                let payments = page
                    .payments
                    .into_iter()
                    .map(|p| self.payment_state(p))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Ok(PaymentPage {
                    payments,
                    next: page.next,
                }))
            }
            Err(m) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(m))
            }
        }
    }

    fn call<R>(
        &self,
        f: impl FnOnce(
            &wit::exports::courier::payments::adapter::Guest,
            &mut Store<CallState>,
        ) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let inner = &self.inner;
        run(&inner.runtime, &inner.pre, Some(inner.host.clone()), f)
    }

    fn check_inputs(&self, fields: &[(&'static str, &str)]) -> Result<(), PluginError> {
        let limit = self.inner.runtime.limits.max_field_bytes;
        fields
            .iter()
            .try_for_each(|(what, v)| check_input(what, v, limit))
    }

    fn check_outputs(&self, fields: &[(&str, &str)]) -> Result<(), PluginError> {
        let limit = self.inner.runtime.limits.max_text_bytes;
        fields
            .iter()
            .try_for_each(|(what, v)| check_output(what, v, limit))
    }

    fn decline(&self, d: w::Decline) -> Result<Decline, PluginError> {
        self.check_outputs(&[("decline code", &d.code)])?;
        Ok(Decline {
            code: d.code,
            card_finished: d.card_finished.map(|f| match f {
                w::FinishReason::Expired => FinishReason::Expired,
                w::FinishReason::Lost => FinishReason::Lost,
                w::FinishReason::RefusedForGood => FinishReason::RefusedForGood,
            }),
        })
    }

    fn outcome(&self, o: w::Outcome) -> Result<Outcome, PluginError> {
        Ok(match o {
            w::Outcome::Approved(r) => {
                self.check_outputs(&[("provider reference", &r)])?;
                Outcome::Approved(r)
            }
            w::Outcome::Declined(d) => Outcome::Declined(self.decline(d)?),
            w::Outcome::Unreachable(m) => {
                self.check_outputs(&[("message", &m)])?;
                Outcome::Unreachable(m)
            }
            w::Outcome::InFlight(m) => {
                self.check_outputs(&[("message", &m)])?;
                Outcome::InFlight(m)
            }
        })
    }

    fn payment_state(&self, p: w::PaymentState) -> Result<PaymentState, PluginError> {
        self.check_outputs(&[
            ("provider reference", &p.reference),
            ("currency", &p.currency),
            ("hold key", p.hold_key.as_deref().unwrap_or_default()),
        ])?;
        Ok(PaymentState {
            reference: p.reference,
            hold_key: p.hold_key,
            status: match p.status {
                w::PaymentStatus::Held => PaymentStatus::Held,
                w::PaymentStatus::Captured => PaymentStatus::Captured,
                w::PaymentStatus::Released => PaymentStatus::Released,
                w::PaymentStatus::Refused => PaymentStatus::Refused,
                w::PaymentStatus::Processing => PaymentStatus::Processing,
            },
            amount_minor: p.amount_minor,
            captured_minor: p.captured_minor,
            refunded_minor: p.refunded_minor,
            currency: p.currency.to_ascii_uppercase(),
            created_at: p.created_at,
        })
    }
}

fn run<R>(
    runtime: &Runtime,
    pre: &wit::PaymentAdapterPre<CallState>,
    host: Option<Arc<AdapterHost>>,
    f: impl FnOnce(
        &wit::exports::courier::payments::adapter::Guest,
        &mut Store<CallState>,
    ) -> wasmtime::Result<R>,
) -> Result<R, PluginError> {
    let deadline = runtime.limits.adapter_deadline;
    let mut store = runtime.store(deadline, host);
    let result = pre
        .instantiate(&mut store)
        .and_then(|adapter| f(adapter.courier_payments_adapter(), &mut store));
    result.map_err(|e| runtime.classify(&store, deadline, e))
}
