//! `courier adapter record`: one operation run against the provider (its sandbox), kept as a
//! cassette for `courier adapter certify`. The configuration's secrets and every credential
//! are masked before anything is written; a money move's exchange is found by the host's
//! idempotency key it carries, and where its answer puts the amount, currency and reference
//! is found by value.

use std::path::{Path, PathBuf};

use serde_json::Value;
use thiserror::Error;

use courier_core::config::Config;
use courier_plugins::Exchange;

use super::cassette::{
    Cassette, MONEY_MOVES, MoneyFields, RecordedExchange, RecordedResponse, RequestMatch,
    find_pointer,
};
use super::run::{RunError, perform};

#[derive(Debug, Error)]
pub enum RecordError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{method} {url} had no answer ({failure}): nothing to record")]
    NoAnswer {
        method: &'static str,
        url: String,
        failure: String,
    },
    #[error("writing {path}: {reason}")]
    Write { path: String, reason: String },
}

impl RecordError {
    pub fn exit_code(&self) -> i32 {
        match self {
            RecordError::Run(error) => error.exit_code(),
            RecordError::NoAnswer { .. } => 1,
            RecordError::Write { .. } => 2,
        }
    }
}

/// Runs the operation and writes its cassette under `out`; returns the file and the run's
/// report.
pub async fn record(
    config: &Config,
    file: &Path,
    operation: &str,
    adapter_config: Option<&Path>,
    args: Option<&str>,
    out: &Path,
) -> Result<(PathBuf, Value), RecordError> {
    let performed = perform(config, file, operation, adapter_config, args).await?;
    let cassette = cassette_of(
        performed.operation,
        &performed.args,
        &performed.answer,
        &performed.exchanges,
    )?;
    let write = |path: &Path, reason: String| RecordError::Write {
        path: path.display().to_string(),
        reason,
    };
    std::fs::create_dir_all(out).map_err(|e| write(out, e.to_string()))?;
    let stem = format!(
        "{}-{}",
        cassette.operation,
        cassette.answer_kind().replace(' ', "-")
    );
    let path = (1..)
        .map(|n| match n {
            1 => out.join(format!("{stem}.json")),
            n => out.join(format!("{stem}-{n}.json")),
        })
        .find(|path| !path.exists())
        .expect("some name is free");
    let text = serde_json::to_string_pretty(&cassette).expect("a cassette serialises") + "\n";
    std::fs::write(&path, text).map_err(|e| write(&path, e.to_string()))?;
    Ok((path, performed.report()))
}

/// Response headers a cassette leaves out: they hold sessions, change on every request, or
/// describe the body's framing (which a replayed, changed body would contradict).
fn kept_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    !(name.contains("cookie")
        || ["date", "content-length", "transfer-encoding", "connection"].contains(&name.as_str()))
}

/// The cassette of one performed operation.
pub(crate) fn cassette_of(
    operation: &str,
    args: &Value,
    answer: &Value,
    exchanges: &[Exchange],
) -> Result<Cassette, RecordError> {
    let key = args.get("idempotency_key").and_then(Value::as_str);
    // The money move is the last request that sent the host's key and was not a read.
    let moved = MONEY_MOVES
        .contains(&operation)
        .then(|| {
            exchanges.iter().rposition(|e| {
                e.method != "GET"
                    && key.is_some_and(|key| {
                        e.request_body.contains(key)
                            || e.request_headers.iter().any(|(_, v)| v == key)
                    })
            })
        })
        .flatten();
    let approved = matches!(
        answer.get("outcome").and_then(Value::as_str),
        Some("approved" | "pending")
    )
    .then(|| answer.get("detail"))
    .flatten();
    let recorded = exchanges
        .iter()
        .enumerate()
        .map(|(index, exchange)| {
            let status = exchange.status.ok_or_else(|| RecordError::NoAnswer {
                method: exchange.method,
                url: exchange.url.clone(),
                failure: exchange.failure.clone().unwrap_or_default(),
            })?;
            let path = url::Url::parse(&exchange.url)
                .map(|u| u.path().to_owned())
                .unwrap_or_else(|_| exchange.url.clone());
            let body: Option<Value> = serde_json::from_str(&exchange.response_body).ok();
            let money = (Some(index) == moved).then(|| {
                let body = body.clone().unwrap_or(Value::Null);
                let amount = args.get("amount_minor");
                let currency = args.get("currency").and_then(Value::as_str);
                MoneyFields {
                    amount: amount.and_then(|a| find_pointer(&body, &|v| v == a)),
                    currency: currency.and_then(|c| {
                        find_pointer(&body, &|v| {
                            v.as_str().is_some_and(|s| s.eq_ignore_ascii_case(c))
                        })
                    }),
                    reference: approved.and_then(|r| find_pointer(&body, &|v| v == r)),
                    key_header: exchange
                        .request_headers
                        .iter()
                        .find(|(_, value)| Some(value.as_str()) == key)
                        .map(|(name, _)| name.to_ascii_lowercase()),
                }
            });
            Ok(RecordedExchange {
                request: RequestMatch {
                    method: exchange.method.to_owned(),
                    path,
                },
                response: RecordedResponse {
                    status,
                    headers: exchange
                        .response_headers
                        .iter()
                        .filter(|(name, _)| kept_header(name))
                        .cloned()
                        .collect(),
                    body_text: match &body {
                        Some(_) => None,
                        None if exchange.response_body.is_empty() => None,
                        None => Some(exchange.response_body.clone()),
                    },
                    body,
                },
                money,
                key_in_use: None,
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    Ok(Cassette {
        operation: operation.to_owned(),
        args: without_credentials(args),
        answer: answer.clone(),
        exchanges: recorded,
    })
}

/// `args` with the credential of each `authorization` header of a notification masked
/// (`Basic ****`): the provider's webhook credentials never reach a cassette, and the suite
/// certifies the signature with a configuration that does not require them.
fn without_credentials(args: &Value) -> Value {
    let mut args = args.clone();
    if let Some(headers) = args.get_mut("headers").and_then(Value::as_array_mut) {
        for pair in headers.iter_mut().filter_map(Value::as_array_mut) {
            let is_credential = pair
                .first()
                .and_then(Value::as_str)
                .is_some_and(|name| name.eq_ignore_ascii_case("authorization"));
            if let (true, Some(value)) = (is_credential, pair.get_mut(1)) {
                let scheme = value
                    .as_str()
                    .and_then(|v| v.split_once(' '))
                    .map(|(scheme, _)| scheme.to_owned());
                *value = Value::String(match scheme {
                    Some(scheme) => format!("{scheme} ****"),
                    None => "****".to_owned(),
                });
            }
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_notification_s_credentials_never_reach_the_cassette() {
        let args = json!({"headers": [["Content-Type", "application/json"],
            ["Authorization", "Basic Y291cmllcjpzM2NyZXQ="], ["authorization", "s3cret"]],
            "body": "{}"});
        let cassette = cassette_of("verify-event", &args, &json!({"ok": []}), &[]).unwrap();
        assert_eq!(
            cassette.args["headers"],
            json!([
                ["Content-Type", "application/json"],
                ["Authorization", "Basic ****"],
                ["authorization", "****"]
            ])
        );
        assert_eq!(cassette.args["body"], "{}");
    }

    fn exchange(method: &'static str, url: &str, sent: &str, answer: Value) -> Exchange {
        Exchange {
            method,
            url: url.to_owned(),
            request_headers: vec![("Authorization".into(), "Bearer ****".into())],
            request_body: sent.to_owned(),
            status: Some(200),
            failure: None,
            response_headers: vec![
                ("content-type".into(), "application/json".into()),
                ("set-cookie".into(), "session=1".into()),
            ],
            response_body: answer.to_string(),
            millis: 3,
        }
    }

    #[test]
    fn a_hold_is_recorded_with_its_money_exchange_and_where_the_money_sits() {
        let args = json!({"amount_minor": 1290, "currency": "EUR", "card_ref": "pm_1",
            "customer_id": "cus_1", "idempotency_key": "job_1_hold"});
        let answer = json!({"outcome": "approved", "detail": "pi_9"});
        let exchanges = [
            exchange(
                "GET",
                "https://api.example/v1/payment_methods/pm_1?x=1",
                "",
                json!({"id": "pm_1"}),
            ),
            exchange(
                "POST",
                "https://api.example/v1/payment_intents",
                "amount=1290&metadata[hold_key]=job_1_hold",
                json!({"id": "pi_9", "amount": 1290, "currency": "eur", "nested": {"amount": 1290}}),
            ),
        ];
        let mut exchanges = exchanges;
        exchanges[1]
            .request_headers
            .push(("Idempotency-Key".into(), "job_1_hold".into()));
        let cassette = cassette_of("hold", &args, &answer, &exchanges).unwrap();
        assert_eq!(
            cassette.exchanges[0].request.path,
            "/v1/payment_methods/pm_1"
        );
        assert_eq!(cassette.exchanges[0].money, None);
        assert_eq!(
            cassette.exchanges[1].money,
            Some(MoneyFields {
                amount: Some("/amount".into()),
                currency: Some("/currency".into()),
                reference: Some("/id".into()),
                key_header: Some("idempotency-key".into()),
            })
        );
        assert_eq!(
            cassette.exchanges[1].response.headers,
            [("content-type".to_owned(), "application/json".to_owned())]
        );
        assert_eq!(cassette.answer_kind(), "approved");
        assert_eq!(cassette.money_exchange(), Some(1));
    }

    #[test]
    fn an_exchange_without_an_answer_cannot_be_recorded() {
        let mut lost = exchange("GET", "https://api.example/v1/x", "", json!({}));
        lost.status = None;
        lost.failure = Some("Timeout".into());
        let refused = cassette_of(
            "retrieve",
            &json!({"reference": "pi_1"}),
            &json!({}),
            &[lost],
        );
        assert!(matches!(refused, Err(RecordError::NoAnswer { .. })));
    }
}
