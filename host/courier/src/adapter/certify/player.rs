//! The provider, played back from cassettes: answers an adapter's requests in-process (the
//! host's allow-list and limits still apply before and after), with one fault at a time made
//! from the recording, and keeps every request exactly as the adapter sent it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use courier_plugins::{HttpFailure, HttpRequest, HttpResponse, ProviderStandIn};
use serde_json::{Value, json};

use crate::adapter::cassette::{RecordedExchange, RecordedResponse};

/// What goes wrong with the money move's answer in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The provider answers with this status and an error body of its own.
    Status(u16),
    /// Nothing comes back before the request's time runs out.
    Hang,
    /// The provider acted, then the connection dropped before its answer arrived.
    DroppedAfterActing,
    /// The recorded answer, cut in half.
    Malformed,
    /// The recorded answer, padded past the largest body the host accepts.
    Oversize,
    /// The recorded answer with the amount one minor unit more.
    OtherAmount,
    /// The recorded answer in another currency.
    OtherCurrency,
    /// The provider's answer while the idempotency key is still in use.
    KeyInUse,
}

/// One request as the adapter sent it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub method: &'static str,
    pub url: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Which exchange of the tape answered it; none when the tape had none.
    pub matched: Option<usize>,
}

#[derive(Default)]
struct Tape {
    exchanges: Vec<RecordedExchange>,
    /// Applied to every use of the money move's exchange while set.
    fault: Option<Fault>,
    /// Requests so far in this call, per method and path.
    served: HashMap<(&'static str, String), usize>,
    sent: Vec<Sent>,
}

pub struct Player {
    tape: Mutex<Tape>,
    /// The largest body the host accepts; an oversize answer is one byte more.
    max_response_bytes: usize,
}

impl Player {
    pub fn new(max_response_bytes: usize) -> Self {
        Player {
            tape: Mutex::default(),
            max_response_bytes,
        }
    }

    fn tape(&self) -> MutexGuard<'_, Tape> {
        self.tape.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Plays `exchanges` from now on, with `fault` on the money move; forgets what was sent.
    pub fn load(&self, exchanges: Vec<RecordedExchange>, fault: Option<Fault>) {
        *self.tape() = Tape {
            exchanges,
            fault,
            ..Tape::default()
        };
    }

    /// Starts another call of the same scenario: the provider is asked afresh.
    pub fn next_call(&self, fault: Option<Fault>) {
        let mut tape = self.tape();
        tape.served.clear();
        tape.fault = fault;
    }

    /// Every request of the scenario so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.tape().sent.clone()
    }
}

impl Player {
    /// The exchange that answers `request` and the fault to play on it, noting what was sent;
    /// `Err`: the answer when no exchange does.
    fn matching(
        &self,
        request: &HttpRequest,
    ) -> Result<(RecordedExchange, Option<Fault>), HttpResponse> {
        let path = url::Url::parse(&request.url)
            .map(|u| u.path().to_owned())
            .unwrap_or_default();
        let method = request.method.as_str();
        let mut tape = self.tape();
        let nth = {
            let served = tape.served.entry((method, path.clone())).or_default();
            *served += 1;
            *served - 1
        };
        let same: Vec<usize> = tape
            .exchanges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.request.method == method && e.request.path == path)
            .map(|(i, _)| i)
            .collect();
        let matched = same.get(nth).or(same.last()).copied();
        tape.sent.push(Sent {
            method,
            url: request.url.clone(),
            path,
            headers: request.headers.clone(),
            body: request.body.clone(),
            matched,
        });
        let Some(index) = matched else {
            return Err(json_response(
                404,
                &json!({"error": "no exchange in the cassette answers this request"}),
            ));
        };
        let exchange = tape.exchanges[index].clone();
        let fault = tape.fault.filter(|_| exchange.money.is_some());
        Ok((exchange, fault))
    }
}

#[async_trait::async_trait]
impl ProviderStandIn for Player {
    async fn answer(
        &self,
        request: &HttpRequest,
        answer_by: Instant,
    ) -> Result<HttpResponse, HttpFailure> {
        let (exchange, fault) = match self.matching(request) {
            Ok(matched) => matched,
            Err(unmatched) => return Ok(unmatched),
        };
        let recorded = response_of(&exchange.response);
        let Some(fault) = fault else {
            return Ok(recorded);
        };
        let money = exchange.money.unwrap_or_default();
        match fault {
            Fault::Status(status) => Ok(json_response(
                status,
                &json!({"error": {"message": format!("injected by the conformance suite: {status}")}}),
            )),
            Fault::Hang => {
                tokio::time::sleep_until(answer_by.into()).await;
                Err(HttpFailure::Timeout)
            }
            Fault::DroppedAfterActing => Err(HttpFailure::Connection(
                "connection reset after the request was sent".into(),
            )),
            Fault::Malformed => {
                let mut response = recorded;
                response.body.truncate(response.body.len() / 2);
                Ok(response)
            }
            Fault::Oversize => {
                let mut response = recorded;
                // Trailing white space keeps a JSON body valid: only the size is wrong.
                response.body.resize(self.max_response_bytes + 1, b' ');
                Ok(response)
            }
            Fault::OtherAmount => Ok(rewritten(&exchange.response, money.amount, other_amount)),
            Fault::OtherCurrency => Ok(rewritten(
                &exchange.response,
                money.currency,
                other_currency,
            )),
            Fault::KeyInUse => Ok(exchange
                .key_in_use
                .as_ref()
                .map(response_of)
                .unwrap_or(recorded)),
        }
    }
}

fn response_of(recorded: &RecordedResponse) -> HttpResponse {
    HttpResponse {
        status: recorded.status,
        headers: recorded.headers.clone(),
        body: recorded.body_bytes(),
    }
}

fn json_response(status: u16, body: &Value) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    }
}

/// The recorded answer with the value at `pointer` changed, everywhere it appears: a provider
/// may say the amount twice (Stripe's `amount` and `amount_received`), and an adapter may read
/// either.
fn rewritten(
    recorded: &RecordedResponse,
    pointer: Option<String>,
    change: fn(&Value) -> Value,
) -> HttpResponse {
    let mut body = recorded.body.clone().unwrap_or(Value::Null);
    if let Some(old) = pointer.and_then(|p| body.pointer(&p).cloned()) {
        replace_all(&mut body, &old, &change(&old));
    }
    HttpResponse {
        status: recorded.status,
        headers: recorded.headers.clone(),
        body: body.to_string().into_bytes(),
    }
}

fn replace_all(value: &mut Value, old: &Value, new: &Value) {
    if value == old {
        *value = new.clone();
        return;
    }
    match value {
        Value::Object(fields) => fields.values_mut().for_each(|v| replace_all(v, old, new)),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_all(v, old, new)),
        _ => {}
    }
}

fn other_amount(amount: &Value) -> Value {
    match amount {
        Value::Number(n) => json!(n.as_i64().unwrap_or_default() + 1),
        Value::String(s) => json!(
            s.parse::<i64>()
                .map_or_else(|_| format!("{s}1"), |n| (n + 1).to_string())
        ),
        other => other.clone(),
    }
}

fn other_currency(currency: &Value) -> Value {
    let Some(code) = currency.as_str() else {
        return currency.clone();
    };
    let other = if code.eq_ignore_ascii_case("usd") {
        "eur"
    } else {
        "usd"
    };
    if code.chars().any(|c| c.is_ascii_uppercase()) {
        json!(other.to_ascii_uppercase())
    } else {
        json!(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_and_currencies_change_in_the_provider_s_own_spelling() {
        assert_eq!(other_amount(&json!(1290)), json!(1291));
        assert_eq!(other_amount(&json!("1290")), json!("1291"));
        assert_eq!(other_currency(&json!("eur")), json!("usd"));
        assert_eq!(other_currency(&json!("USD")), json!("EUR"));
    }

    #[test]
    fn another_amount_is_said_wherever_the_answer_says_the_amount() {
        let recorded = RecordedResponse {
            status: 200,
            headers: Vec::new(),
            body: Some(json!({"amount": 1290, "amount_received": 1290, "fee": 30,
                "charges": [{"amount": 1290}]})),
            body_text: None,
        };
        let changed = rewritten(&recorded, Some("/amount".into()), other_amount);
        let body: Value = serde_json::from_slice(&changed.body).unwrap();
        assert_eq!(
            body,
            json!({"amount": 1291, "amount_received": 1291, "fee": 30,
                "charges": [{"amount": 1291}]})
        );
    }
}
