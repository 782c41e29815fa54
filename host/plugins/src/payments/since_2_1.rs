//! What every version since 2.1.0 shares: its answers read into the host's types and the
//! calls of the contract, written once for each version's generated bindings. A version's
//! module declares `wit` (its bindings), `w` (their types), `WORLD`, `VERSION`, and
//! `card_form_request`, which says what of the card form's request that version is told, and
//! `request_key`, what of an event's request key that version says.

/// Defines the version's component (`$name`) and its [`Contract`](super::contract::Contract).
/// Item paths in `macro_rules!` resolve where it is invoked: in the version's module.
macro_rules! since_2_1 {
    ($name:ident) => {
        use wasmtime::component::{Component, HasSelf};

        use super::contract::{Caller, Contract, Described, call_export};
        use super::types::{
            AdapterInfo, AttachRefusal, AttachedCard, CaptureRequest, Card, CardForm,
            CardFormRequest, Decline, EventKind, EventRefusal, FinishReason, HoldRequest,
            LookupFailure, Outcome, PaymentPage, PaymentState, PaymentStatus, ProviderEvent,
            RefundRequest, VoidRequest,
        };
        use crate::PluginError;
        use crate::engine::{CallState, Runtime};
        use crate::outbound::{HttpFailure, HttpRequest, LogLevel, Method};
        use wit::courier::payments::{
            config as wconfig, log as wlog, outbound_http as whttp, types as w,
        };

        super::imports::serve_imports!();

        impl wlog::Host for CallState {
            fn log(&mut self, level: wlog::Level, message: String) {
                let level = match level {
                    wlog::Level::Debug => LogLevel::Debug,
                    wlog::Level::Info => LogLevel::Info,
                    wlog::Level::Warn => LogLevel::Warn,
                    wlog::Level::Error => LogLevel::Error,
                };
                self.log.push(level, message);
            }
        }

        /// A component built against this version, linked and ready to instantiate.
        pub(crate) struct $name(wit::PaymentAdapterPre<CallState>);

        impl $name {
            pub fn prepare(runtime: &Runtime, component: &Component) -> Result<Self, PluginError> {
                // Minor versions share their functions' names: only the exact export tells
                // which one the component was built against.
                let export = format!("courier:payments/adapter@{VERSION}");
                if !runtime.exports(component, &export) {
                    return Err(PluginError::Incompatible {
                        world: WORLD,
                        reason: format!("the component does not export {export}"),
                    });
                }
                let pre = runtime.instance_pre(WORLD, component, |linker| {
                    wit::PaymentAdapter::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s)
                })?;
                wit::PaymentAdapterPre::new(pre)
                    .map($name)
                    .map_err(|e| PluginError::Incompatible {
                        world: WORLD,
                        reason: format!("{e:#}"),
                    })
            }
        }

        fn outcome(o: w::Outcome) -> Outcome {
            match o {
                w::Outcome::Approved(r) => Outcome::Approved(r),
                w::Outcome::Declined(d) => Outcome::Declined(decline(d)),
                w::Outcome::Unreachable(m) => Outcome::Unreachable(m),
                w::Outcome::InFlight(m) => Outcome::InFlight(m),
                w::Outcome::Pending(r) => Outcome::Pending(r),
                w::Outcome::Refused(m) => Outcome::Refused(m),
            }
        }

        fn card(c: w::Card) -> Card {
            Card {
                brand: c.brand,
                last_four: c.last_four,
                expiry_month: c.expiry_month,
                expiry_year: c.expiry_year,
            }
        }

        fn attached(a: w::AttachedCard) -> AttachedCard {
            AttachedCard {
                reference: a.reference,
                card: card(a.card),
            }
        }

        fn event(e: w::ProviderEvent) -> ProviderEvent {
            let request_key = request_key(&e);
            ProviderEvent {
                id: e.id,
                reference: e.reference,
                kind: match e.kind {
                    w::EventKind::Held => EventKind::Held,
                    w::EventKind::HoldFailed(d) => EventKind::HoldFailed(decline(d)),
                    w::EventKind::Captured => EventKind::Captured,
                    w::EventKind::CaptureFailed(m) => EventKind::CaptureFailed(m),
                    w::EventKind::Released => EventKind::Released,
                    w::EventKind::ReleaseFailed(m) => EventKind::ReleaseFailed(m),
                    w::EventKind::Refunded => EventKind::Refunded,
                    w::EventKind::RefundFailed(m) => EventKind::RefundFailed(m),
                    w::EventKind::CardStored(a) => EventKind::CardStored(attached(a)),
                },
                request_key,
                amount_minor: e.amount_minor,
                currency: e.currency,
            }
        }

        #[async_trait::async_trait]
        impl Contract for $name {
            async fn describe(&self, caller: &Caller) -> Result<Described, PluginError> {
                Ok(
                    call_export!(self.0, caller, call_describe())?.map(|info| AdapterInfo {
                        name: info.name,
                        version: info.version,
                        allowed_hosts: info.allowed_hosts,
                        reference_pattern: info.reference_pattern,
                        contract: VERSION,
                    }),
                )
            }

            async fn setup_card_form(
                &self,
                caller: &Caller,
                r: &CardFormRequest,
            ) -> Result<Result<CardForm, String>, PluginError> {
                let wire = card_form_request(r);
                let form = call_export!(self.0, caller, call_setup_card_form(&wire))?;
                Ok(form.map(|f| CardForm {
                    customer_id: f.customer_id,
                    document: f.document,
                }))
            }

            async fn attach_card(
                &self,
                caller: &Caller,
                customer_id: &str,
                card_ref: &str,
            ) -> Result<Result<AttachedCard, AttachRefusal>, PluginError> {
                let answer = call_export!(self.0, caller, call_attach_card(customer_id, card_ref))?;
                Ok(answer.map(attached).map_err(|refusal| match refusal {
                    w::AttachRefusal::UnknownReference(m) => AttachRefusal::UnknownReference(m),
                    w::AttachRefusal::Declined(d) => AttachRefusal::Declined(decline(d)),
                    w::AttachRefusal::Unreachable(m) => AttachRefusal::Unreachable(m),
                }))
            }

            async fn authorise(
                &self,
                caller: &Caller,
                r: &HoldRequest,
            ) -> Result<Outcome, PluginError> {
                let wire = w::HoldRequest {
                    amount_minor: r.amount_minor,
                    currency: r.currency.clone(),
                    card_ref: r.card_ref.clone(),
                    customer_id: r.customer_id.clone(),
                    idempotency_key: r.idempotency_key.clone(),
                };
                Ok(outcome(call_export!(
                    self.0,
                    caller,
                    call_authorise(&wire)
                )?))
            }

            async fn capture(
                &self,
                caller: &Caller,
                r: &CaptureRequest,
            ) -> Result<Outcome, PluginError> {
                let wire = w::CaptureRequest {
                    authorisation: r.authorisation.clone(),
                    amount_minor: r.amount_minor,
                    currency: r.currency.clone(),
                    idempotency_key: r.idempotency_key.clone(),
                };
                Ok(outcome(call_export!(self.0, caller, call_capture(&wire))?))
            }

            async fn void(&self, caller: &Caller, r: &VoidRequest) -> Result<Outcome, PluginError> {
                let wire = w::VoidRequest {
                    authorisation: r.authorisation.clone(),
                    idempotency_key: r.idempotency_key.clone(),
                };
                Ok(outcome(call_export!(self.0, caller, call_void(&wire))?))
            }

            async fn refund(
                &self,
                caller: &Caller,
                r: &RefundRequest,
            ) -> Result<Outcome, PluginError> {
                let wire = w::RefundRequest {
                    payment: r.payment.clone(),
                    amount_minor: r.amount_minor,
                    currency: r.currency.clone(),
                    idempotency_key: r.idempotency_key.clone(),
                };
                Ok(outcome(call_export!(self.0, caller, call_refund(&wire))?))
            }

            async fn retrieve(
                &self,
                caller: &Caller,
                reference: &str,
            ) -> Result<Result<PaymentState, LookupFailure>, PluginError> {
                let answer = call_export!(self.0, caller, call_retrieve(reference))?;
                Ok(answer.map(payment_state).map_err(|failure| match failure {
                    w::LookupFailure::NotFound => LookupFailure::NotFound,
                    w::LookupFailure::Unreachable(m) => LookupFailure::Unreachable(m),
                }))
            }

            async fn list_payments(
                &self,
                caller: &Caller,
                since: i64,
                after: Option<&str>,
            ) -> Result<Result<PaymentPage, String>, PluginError> {
                let answer = call_export!(self.0, caller, call_list_payments(since, after))?;
                Ok(answer.map(|page| PaymentPage {
                    payments: page.payments.into_iter().map(payment_state).collect(),
                    next: page.next,
                }))
            }

            async fn verify_event(
                &self,
                caller: &Caller,
                headers: &[(String, String)],
                body: &[u8],
            ) -> Result<Result<Vec<ProviderEvent>, EventRefusal>, PluginError> {
                let answer = call_export!(self.0, caller, call_verify_event(headers, body))?;
                Ok(answer
                    .map(|events| events.into_iter().map(event).collect())
                    .map_err(EventRefusal::Unverified))
            }
        }
    };
}

pub(super) use since_2_1;
