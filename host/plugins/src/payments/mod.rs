//! Payment adapters: `courier:payments/payment-adapter@2.3.0`, and components built against
//! 2.2.0 ([`v2_2`]), 2.1.0 ([`v2_1`]) and 2.0.0 ([`v2_0`]), which keep working as they did.
//!
//! Calls are asynchronous (wasmtime's `*_async` calls, on a fiber of their
//! own): one waiting on its provider holds no thread. Call them inside a
//! Tokio runtime.

mod contract;
mod current;
mod imports;
mod since_2_1;
mod types;
mod v2_0;
mod v2_1;
mod v2_2;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::PluginError;
use crate::engine::{PluginEngine, Runtime};
use crate::limits::{check_input, check_output};
use crate::outbound::{AdapterHost, Exchange, GuestLine, HttpPolicy, LogLevel};
use contract::{Caller, Contract};
pub use types::*;

pub(crate) use current::WORLD;

/// Payments an adapter may list in one page.
const MAX_PAGE: usize = 1000;
/// The largest card-form document the host passes on to a browser.
const MAX_DOCUMENT_BYTES: usize = 16 << 10;
/// Events one provider notification may carry.
const MAX_EVENTS: usize = 100;
/// Headers of a provider notification handed to `verify-event`.
const MAX_EVENT_HEADERS: usize = 64;

/// Numbers the calls whose log lines reach the service's log.
static CALLS: AtomicU64 = AtomicU64::new(1);

/// A loaded payment adapter. Cheap to clone; fresh instance per call.
#[derive(Clone)]
pub struct PaymentAdapter {
    inner: Arc<Loaded>,
}

struct Loaded {
    runtime: Arc<Runtime>,
    contract: Box<dyn Contract>,
    host: Arc<AdapterHost>,
    /// The configuration without the network: for `describe` and `verify-event`.
    offline: Arc<AdapterHost>,
    info: AdapterInfo,
    /// `reference_pattern`, anchored at both ends.
    own_reference: Option<regex::Regex>,
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
    pub async fn load(
        engine: &PluginEngine,
        bytes: &[u8],
        config: AdapterConfig,
    ) -> Result<Self, PluginError> {
        Self::load_as(engine, bytes, config, false).await
    }

    /// [`load`](Self::load), keeping every HTTP exchange and log line of its calls for
    /// [`take_exchanges`](Self::take_exchanges) and [`take_logged`](Self::take_logged): for
    /// `courier adapter run`, never the service.
    pub async fn load_watched(
        engine: &PluginEngine,
        bytes: &[u8],
        config: AdapterConfig,
    ) -> Result<Self, PluginError> {
        Self::load_as(engine, bytes, config, true).await
    }

    /// The exchanges made since the last time, oldest first (none unless loaded watched).
    pub fn take_exchanges(&self) -> Vec<Exchange> {
        take(self.inner.host.exchanges.as_ref())
    }

    /// The lines logged since the last time, oldest first (none unless loaded watched).
    pub fn take_logged(&self) -> Vec<GuestLine> {
        take(self.inner.offline.logged.as_ref())
    }

    /// The limits every call runs under.
    pub fn limits(&self) -> &crate::Limits {
        &self.inner.runtime.limits
    }

    async fn load_as(
        engine: &PluginEngine,
        bytes: &[u8],
        config: AdapterConfig,
        watched: bool,
    ) -> Result<Self, PluginError> {
        let runtime = engine.runtime.clone();
        let component = runtime.component(bytes)?;
        // The newest version the component implements.
        let contract: Box<dyn Contract> = match current::Current::prepare(&runtime, &component) {
            Ok(current) => Box::new(current),
            Err(newest) => {
                if let Ok(v2_2) = v2_2::V2_2::prepare(&runtime, &component) {
                    Box::new(v2_2)
                } else if let Ok(v2_1) = v2_1::V2_1::prepare(&runtime, &component) {
                    Box::new(v2_1)
                } else if let Ok(v2_0) = v2_0::V2_0::prepare(&runtime, &component) {
                    Box::new(v2_0)
                } else {
                    return Err(newest);
                }
            }
        };
        let logged = || watched.then(Default::default);
        // `describe` runs with the configuration but no network.
        let offline = Arc::new(AdapterHost {
            http: None,
            config: config.values.clone(),
            exchanges: None,
            logged: logged(),
        });
        let caller = Caller::new(runtime.clone(), Some(offline.clone()));
        let described = contract.describe(&caller).await;
        keep_logged(&offline, "describe", None, "", caller.take_log());
        let info = described?.map_err(|reason| {
            let limit = runtime.limits.max_text_bytes;
            match check_output("configuration refusal", &reason, limit) {
                Ok(()) => PluginError::Misconfigured(reason),
                Err(error) => error,
            }
        })?;
        let limits = &runtime.limits;
        check_output("adapter name", &info.name, limits.max_text_bytes)?;
        check_output("adapter version", &info.version, limits.max_text_bytes)?;
        if info.allowed_hosts.len() > 64 {
            return Err(PluginError::OutputTooLarge(
                "more than 64 allowed hosts".into(),
            ));
        }
        let own_reference = match &info.reference_pattern {
            None => None,
            Some(pattern) => {
                check_output("reference pattern", pattern, limits.max_text_bytes)?;
                Some(regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                    PluginError::InvalidOutput(format!("the reference pattern: {e}"))
                })?)
            }
        };
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
        let host = Arc::new(AdapterHost {
            http: Some(http),
            config: config.values,
            exchanges: watched.then(Default::default),
            // Lines of both hosts land in one list: the offline host's.
            logged: None,
        });
        Ok(PaymentAdapter {
            inner: Arc::new(Loaded {
                runtime,
                contract,
                host,
                offline,
                info,
                own_reference,
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

    /// Whether `reference` is one of this provider's card references by the pattern the
    /// adapter declared (never, for one that declared none).
    pub fn is_own_reference(&self, reference: &str) -> bool {
        self.inner
            .own_reference
            .as_ref()
            .is_some_and(|pattern| pattern.is_match(reference))
    }

    /// Starts a card form; `Ok(Err(message))` when the provider was not reachable.
    pub async fn setup_card_form(
        &self,
        r: &CardFormRequest,
    ) -> Result<Result<CardForm, String>, PluginError> {
        self.check_inputs(&[
            ("merchant", &r.merchant),
            ("customer id", r.customer_id.as_deref().unwrap_or_default()),
            ("currency", &r.currency),
            ("country", &r.country),
            ("locale", &r.locale),
            ("return URL", &r.return_url),
        ])?;
        match {
            let caller = self.caller();
            let answer = self.inner.contract.setup_card_form(&caller, r).await;
            self.logged(&caller, "setup-card-form", None, answer)
        }? {
            Ok(form) => {
                self.check_outputs(&[("customer id", &form.customer_id)])?;
                check_output("card form document", &form.document, MAX_DOCUMENT_BYTES)?;
                let is_object = serde_json::from_str::<serde_json::Value>(&form.document)
                    .is_ok_and(|d| d.is_object());
                if !is_object {
                    return Err(PluginError::InvalidOutput(
                        "the card form's document is not a JSON object".into(),
                    ));
                }
                Ok(Ok(form))
            }
            Err(m) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(m))
            }
        }
    }

    pub async fn attach_card(
        &self,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError> {
        self.check_inputs(&[("customer id", customer_id), ("card reference", card_ref)])?;
        let answer = {
            let caller = self.caller();
            let answer = self
                .inner
                .contract
                .attach_card(&caller, customer_id, card_ref)
                .await;
            self.logged(&caller, "attach-card", None, answer)
        }?;
        match &answer {
            Ok(a) => self.check_outputs(&[
                ("card reference", &a.reference),
                ("brand", &a.card.brand),
                ("last four", &a.card.last_four),
            ])?,
            Err(AttachRefusal::UnknownReference(m) | AttachRefusal::Unreachable(m)) => {
                self.check_outputs(&[("message", m)])?
            }
            Err(AttachRefusal::Declined(d)) => self.check_decline(d)?,
        }
        Ok(answer)
    }

    /// Holds money on a card.
    pub async fn authorise(&self, r: &HoldRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("currency", &r.currency),
            ("card reference", &r.card_ref),
            ("customer id", &r.customer_id),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let o = {
            let caller = self.caller();
            let answer = self.inner.contract.authorise(&caller, r).await;
            self.logged(&caller, "authorise", Some(&r.idempotency_key), answer)
        }?;
        self.checked(o)
    }

    /// Takes held money.
    pub async fn capture(&self, r: &CaptureRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("authorisation", &r.authorisation),
            ("currency", &r.currency),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let o = {
            let caller = self.caller();
            let answer = self.inner.contract.capture(&caller, r).await;
            self.logged(&caller, "capture", Some(&r.idempotency_key), answer)
        }?;
        self.checked(o)
    }

    /// Releases a hold.
    pub async fn void(&self, r: &VoidRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("authorisation", &r.authorisation),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let o = {
            let caller = self.caller();
            let answer = self.inner.contract.void(&caller, r).await;
            self.logged(&caller, "void", Some(&r.idempotency_key), answer)
        }?;
        self.checked(o)
    }

    /// Gives captured money back.
    pub async fn refund(&self, r: &RefundRequest) -> Result<Outcome, PluginError> {
        self.check_inputs(&[
            ("payment", &r.payment),
            ("currency", &r.currency),
            ("idempotency key", &r.idempotency_key),
        ])?;
        let o = {
            let caller = self.caller();
            let answer = self.inner.contract.refund(&caller, r).await;
            self.logged(&caller, "refund", Some(&r.idempotency_key), answer)
        }?;
        self.checked(o)
    }

    /// Reads a payment back by the reference its hold was approved with.
    pub async fn retrieve(
        &self,
        reference: &str,
    ) -> Result<Result<PaymentState, LookupFailure>, PluginError> {
        self.check_inputs(&[("provider reference", reference)])?;
        match {
            let caller = self.caller();
            let answer = self.inner.contract.retrieve(&caller, reference).await;
            self.logged(&caller, "retrieve", None, answer)
        }? {
            Ok(state) => Ok(Ok(self.payment_state(state)?)),
            Err(LookupFailure::NotFound) => Ok(Err(LookupFailure::NotFound)),
            Err(LookupFailure::Unreachable(m)) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(LookupFailure::Unreachable(m)))
            }
        }
    }

    /// The provider's payments made since `since` (Unix seconds), a page at a
    /// time; `Ok(Err(message))` when the provider could not be reached.
    pub async fn list_payments(
        &self,
        since: i64,
        after: Option<&str>,
    ) -> Result<Result<PaymentPage, String>, PluginError> {
        self.check_inputs(&[("page token", after.unwrap_or_default())])?;
        match {
            let caller = self.caller();
            let answer = self
                .inner
                .contract
                .list_payments(&caller, since, after)
                .await;
            self.logged(&caller, "list-payments", None, answer)
        }? {
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

    /// Verifies and reads a notification the provider sent (no network while it runs).
    pub async fn verify_event(
        &self,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Result<Vec<ProviderEvent>, EventRefusal>, PluginError> {
        let limits = &self.inner.runtime.limits;
        if headers.len() > MAX_EVENT_HEADERS {
            return Err(PluginError::InputTooLarge {
                what: "notification headers",
                size: headers.len(),
                limit: MAX_EVENT_HEADERS,
            });
        }
        for (name, value) in headers {
            self.check_inputs(&[("header name", name), ("header value", value)])?;
        }
        if body.len() > limits.max_body_bytes {
            return Err(PluginError::InputTooLarge {
                what: "notification body",
                size: body.len(),
                limit: limits.max_body_bytes,
            });
        }
        let caller = Caller::new(self.inner.runtime.clone(), Some(self.inner.offline.clone()));
        let answer = self
            .inner
            .contract
            .verify_event(&caller, headers, body)
            .await;
        let answer = self.logged(&caller, "verify-event", None, answer);
        match answer? {
            Ok(events) => {
                if events.len() > MAX_EVENTS {
                    return Err(PluginError::OutputTooLarge(format!(
                        "more than {MAX_EVENTS} events in a notification"
                    )));
                }
                for event in &events {
                    self.check_outputs(&[
                        ("event id", &event.id),
                        ("event reference", &event.reference),
                        ("currency", event.currency.as_deref().unwrap_or_default()),
                    ])?;
                    match &event.kind {
                        EventKind::HoldFailed(d) => self.check_decline(d)?,
                        EventKind::CaptureFailed(m)
                        | EventKind::ReleaseFailed(m)
                        | EventKind::RefundFailed(m) => self.check_outputs(&[("message", m)])?,
                        EventKind::CardStored(a) => self.check_outputs(&[
                            ("card reference", &a.reference),
                            ("brand", &a.card.brand),
                            ("last four", &a.card.last_four),
                        ])?,
                        EventKind::Held
                        | EventKind::Captured
                        | EventKind::Released
                        | EventKind::Refunded => {}
                    }
                }
                Ok(Ok(events))
            }
            Err(EventRefusal::Unverified(m)) => {
                self.check_outputs(&[("message", &m)])?;
                Ok(Err(EventRefusal::Unverified(m)))
            }
            Err(EventRefusal::Unsupported) => Ok(Err(EventRefusal::Unsupported)),
        }
    }

    /// A call with the network.
    fn caller(&self) -> Caller {
        Caller::new(self.inner.runtime.clone(), Some(self.inner.host.clone()))
    }

    /// A call's answer, once its log lines have gone to the service's log.
    fn logged<R>(
        &self,
        caller: &Caller,
        operation: &'static str,
        key: Option<&str>,
        answer: Result<R, PluginError>,
    ) -> Result<R, PluginError> {
        let log = caller.take_log();
        let runtime = &self.inner.runtime;
        let used = (
            runtime.limits.adapter_deadline,
            caller.memory_peak.load(Ordering::Relaxed),
            caller.fuel.load(Ordering::Relaxed),
        );
        let lines = log.lines.clone();
        runtime.record(
            &self.inner.sha256,
            operation,
            &caller.start,
            used,
            &answer,
            lines,
        );
        keep_logged(
            &self.inner.offline,
            operation,
            key,
            &self.inner.info.name,
            log,
        );
        answer
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

    fn check_decline(&self, d: &Decline) -> Result<(), PluginError> {
        self.check_outputs(&[("decline code", &d.code)])
    }

    fn checked(&self, o: Outcome) -> Result<Outcome, PluginError> {
        match &o {
            Outcome::Approved(r) | Outcome::Pending(r) => {
                self.check_outputs(&[("provider reference", r)])?
            }
            Outcome::Declined(d) => self.check_decline(d)?,
            Outcome::Unreachable(m) | Outcome::InFlight(m) | Outcome::Refused(m) => {
                self.check_outputs(&[("message", m)])?
            }
        }
        Ok(o)
    }

    fn payment_state(&self, p: PaymentState) -> Result<PaymentState, PluginError> {
        self.check_outputs(&[
            ("provider reference", &p.reference),
            ("currency", &p.currency),
            ("hold key", p.hold_key.as_deref().unwrap_or_default()),
        ])?;
        Ok(PaymentState {
            currency: p.currency.to_ascii_uppercase(),
            ..p
        })
    }
}

/// Everything in a watched list, oldest first.
fn take<T>(kept: Option<&std::sync::Mutex<Vec<T>>>) -> Vec<T> {
    kept.map(|kept| {
        std::mem::take(
            &mut *kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    })
    .unwrap_or_default()
}

/// Writes a call's lines to the service's log with the call's number, and keeps them when
/// watched.
fn keep_logged(
    host: &AdapterHost,
    operation: &'static str,
    key: Option<&str>,
    adapter: &str,
    log: crate::outbound::CallLog,
) {
    if log.lines.is_empty() && log.dropped == 0 {
        return;
    }
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let key = key.unwrap_or_default();
    for line in &log.lines {
        let message = line.message.as_str();
        match line.level {
            LogLevel::Debug => {
                tracing::debug!(target: "courier::adapter", adapter, operation, call, key, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "courier::adapter", adapter, operation, call, key, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "courier::adapter", adapter, operation, call, key, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "courier::adapter", adapter, operation, call, key, "{message}")
            }
        }
    }
    if log.dropped > 0 {
        tracing::warn!(target: "courier::adapter", adapter, operation, call, key,
            dropped = log.dropped, "the adapter logged more lines than a call keeps");
    }
    if let Some(kept) = &host.logged {
        kept.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(log.lines);
    }
}
