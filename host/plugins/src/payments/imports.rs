//! What every version's imports do: outbound HTTP under the adapter's policy (noted when
//! watched), and its configuration.

use crate::engine::CallState;
use crate::outbound::{HttpFailure, HttpRequest, HttpResponse};

impl CallState {
    /// Sends an adapter's request under its policy; none while `describe` or `verify-event`
    /// runs.
    pub(crate) async fn send_outbound(
        &mut self,
        request: HttpRequest,
    ) -> Result<HttpResponse, HttpFailure> {
        let host = self.adapter.clone();
        let Some((host, http)) = host
            .as_deref()
            .and_then(|host| Some((host, host.http.as_ref()?)))
        else {
            return Err(HttpFailure::Forbidden("no network for this call".into()));
        };
        if host.exchanges.is_none() {
            return http.send(request, self.deadline).await;
        }
        // Copied for the exchange's record only when watched; the service never watches.
        let started = std::time::Instant::now();
        let kept = request.clone();
        let answer = http.send(request, self.deadline).await;
        host.note(&kept, &answer, started.elapsed());
        answer
    }

    /// The operator's setting `key`, if set.
    pub(crate) fn configured(&self, key: &str) -> Option<String> {
        self.adapter.as_ref()?.config.get(key).cloned()
    }
}

/// What every version of the contract's bindings has alike, written once: the imports the host
/// serves (`outbound-http`, `config`, the type-only interface) and the reading of a decline and
/// of a payment's state. Invoked inside a version's module, where `whttp`, `wconfig` and `w`
/// name that version's generated interfaces (item paths in `macro_rules!` resolve where it is
/// invoked).
macro_rules! serve_imports {
    () => {
        impl whttp::Host for CallState {
            async fn send(
                &mut self,
                request: whttp::Request,
            ) -> Result<whttp::Response, whttp::Error> {
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
                match self.send_outbound(request).await {
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
                self.configured(&key)
            }
        }

        fn decline(d: w::Decline) -> Decline {
            Decline {
                code: d.code,
                card_finished: d.card_finished.map(|f| match f {
                    w::FinishReason::Expired => FinishReason::Expired,
                    w::FinishReason::Lost => FinishReason::Lost,
                    w::FinishReason::RefusedForGood => FinishReason::RefusedForGood,
                }),
            }
        }

        fn payment_state(p: w::PaymentState) -> PaymentState {
            PaymentState {
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
                currency: p.currency,
                created_at: p.created_at,
            }
        }
    };
}
pub(super) use serve_imports;
