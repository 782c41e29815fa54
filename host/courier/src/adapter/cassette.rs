//! Cassettes: one operation of a payment adapter as it went at the provider, kept as JSON so
//! the adapter can be certified offline. `courier adapter record` writes them from a real
//! call; `courier adapter certify` replays them, and faults made from them.
//!
//! ```json
//! {
//!   "operation": "hold",
//!   "args": {"amount_minor": 1290, "currency": "EUR", "card_ref": "pm_…", …},
//!   "answer": {"outcome": "approved", "detail": "pi_…"},
//!   "exchanges": [{
//!     "request": {"method": "POST", "path": "/v1/payment_intents"},
//!     "response": {"status": 200, "headers": [["content-type", "application/json"]], "body": {…}},
//!     "money": {"amount": "/amount", "currency": "/currency", "reference": "/id"}
//!   }]
//! }
//! ```
//!
//! A request is matched by method and path (the query is not compared); the n-th request of a
//! call to the same method and path gets the n-th such exchange, or the last one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use super::run::OPERATIONS;

/// The operations that move money: each carries the host's idempotency key.
pub const MONEY_MOVES: [&str; 4] = ["hold", "capture", "void", "refund"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    pub operation: String,
    /// The operation's arguments, as `courier adapter run --args` takes them.
    pub args: Value,
    /// What the adapter answered, as `courier adapter run` prints it.
    pub answer: Value,
    pub exchanges: Vec<RecordedExchange>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedExchange {
    pub request: RequestMatch,
    pub response: RecordedResponse,
    /// Set on the request that creates or moves money: where its answer says what moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money: Option<MoneyFields>,
    /// The provider's answer while an earlier request with the same idempotency key is still
    /// under way (Stripe's 409 `idempotency_key_in_use`, for example); written by hand, since
    /// a recording rarely catches one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_in_use: Option<RecordedResponse>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestMatch {
    pub method: String,
    /// The URL's path, without the query.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResponse {
    pub status: u16,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// A JSON body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Any other body, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
}

impl RecordedResponse {
    pub fn body_bytes(&self) -> Vec<u8> {
        match (&self.body, &self.body_text) {
            (Some(json), _) => json.to_string().into_bytes(),
            (None, Some(text)) => text.clone().into_bytes(),
            (None, None) => Vec::new(),
        }
    }
}

/// JSON pointers (RFC 6901) into a money move's answer. The suite's "another amount" and
/// "another currency" change the value found there wherever else the answer repeats it too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoneyFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The request header that carried the host's idempotency key (e.g. `idempotency-key`);
    /// none when the provider takes it in the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_header: Option<String>,
}

#[derive(Debug, Error)]
pub enum CassetteError {
    #[error("reading {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
    #[error("{dir} holds no cassette (*.json)")]
    Empty { dir: String },
}

/// A cassette and the file it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file's name without `.json`: how scenarios name it.
    pub name: String,
    pub cassette: Cassette,
}

impl Cassette {
    /// The idempotency key of a money move's arguments.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.args.get("idempotency_key").and_then(Value::as_str)
    }

    /// The exchange that moves money, for the operations that do.
    pub fn money_exchange(&self) -> Option<usize> {
        self.exchanges.iter().position(|e| e.money.is_some())
    }

    /// The header the money move's key goes in, when the provider takes it in a header.
    pub fn key_header(&self) -> Option<&str> {
        self.money_exchange()
            .and_then(|i| self.exchanges[i].money.as_ref())
            .and_then(|m| m.key_header.as_deref())
    }

    /// The answer's outcome (`approved`, `declined`…) or result (`ok`, `refused`) and, for a
    /// refusal, its kind (`unknown-reference`, `not-found`…).
    pub fn answer_kind(&self) -> String {
        if let Some(outcome) = self.answer.get("outcome").and_then(Value::as_str) {
            return outcome.to_owned();
        }
        match self.answer.get("refused") {
            Some(refusal) => match refusal.get("outcome").and_then(Value::as_str) {
                Some(kind) => format!("refused {kind}"),
                None => "refused".to_owned(),
            },
            None => "ok".to_owned(),
        }
    }

    fn check(&self) -> Result<(), String> {
        if !OPERATIONS.contains(&self.operation.as_str()) || self.operation == "describe" {
            return Err(format!(
                "operation {:?} is not one the suite replays",
                self.operation
            ));
        }
        if !self.args.is_object() {
            return Err("args must be a JSON object".into());
        }
        for exchange in &self.exchanges {
            let method = exchange.request.method.as_str();
            if !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method) {
                return Err(format!("method {method:?} is not one outbound-http sends"));
            }
            if !exchange.request.path.starts_with('/') {
                return Err(format!(
                    "path {:?} must start with /",
                    exchange.request.path
                ));
            }
            if exchange.response.body.is_some() && exchange.response.body_text.is_some() {
                return Err("a response has either body or body_text, not both".into());
            }
        }
        let moves = self.exchanges.iter().filter(|e| e.money.is_some()).count();
        if MONEY_MOVES.contains(&self.operation.as_str()) {
            if self.idempotency_key().is_none() {
                return Err("a money move's args need an idempotency_key".into());
            }
            if self.answer_kind() == "approved" && moves != 1 {
                return Err(format!(
                    "an approved {} needs exactly one exchange marked with money, not {moves}",
                    self.operation
                ));
            }
        } else if moves > 0 {
            return Err(format!("{} moves no money", self.operation));
        }
        Ok(())
    }
}

/// Every `*.json` in `dir`, by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Loaded>, CassetteError> {
    let read = |path: &Path, reason: String| CassetteError::Read {
        path: path.display().to_string(),
        reason,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| read(dir, e.to_string()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(CassetteError::Empty {
            dir: dir.display().to_string(),
        });
    }
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|e| read(path, e.to_string()))?;
            let invalid = |reason: String| CassetteError::Invalid {
                path: path.display().to_string(),
                reason,
            };
            let cassette: Cassette =
                serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
            cassette.check().map_err(invalid)?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Loaded { name, cassette })
        })
        .collect()
}

/// The shallowest place in `value` where `wanted` holds, as a JSON pointer.
pub fn find_pointer(value: &Value, wanted: &dyn Fn(&Value) -> bool) -> Option<String> {
    let mut level = vec![(String::new(), value)];
    while !level.is_empty() {
        let mut next = Vec::new();
        for (pointer, value) in level {
            if wanted(value) {
                return Some(pointer);
            }
            match value {
                Value::Object(fields) => next.extend(
                    fields
                        .iter()
                        .map(|(k, v)| (format!("{pointer}/{}", escape_token(k)), v)),
                ),
                Value::Array(items) => next.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (format!("{pointer}/{i}"), v)),
                ),
                _ => {}
            }
        }
        level = next;
    }
    None
}

fn escape_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_find_the_shallowest_match_and_escape_keys() {
        let body = json!({"data": {"amount": 5}, "amount": 5, "a/b": {"id": "pi_1"}});
        assert_eq!(
            find_pointer(&body, &|v| v == &json!(5)).as_deref(),
            Some("/amount")
        );
        let at = find_pointer(&body, &|v| v == "pi_1").unwrap();
        assert_eq!(at, "/a~1b/id");
        assert_eq!(body.pointer(&at), Some(&json!("pi_1")));
        assert_eq!(find_pointer(&body, &|v| v == "nothing"), None);
    }

    fn hold(answer: Value, money: bool) -> Cassette {
        Cassette {
            operation: "hold".into(),
            args: json!({"idempotency_key": "job_1_hold"}),
            answer,
            exchanges: vec![RecordedExchange {
                request: RequestMatch {
                    method: "POST".into(),
                    path: "/v1/payment_intents".into(),
                },
                response: RecordedResponse {
                    status: 200,
                    headers: Vec::new(),
                    body: Some(json!({"id": "pi_1"})),
                    body_text: None,
                },
                money: money.then(MoneyFields::default),
                key_in_use: None,
            }],
        }
    }

    #[test]
    fn an_approved_money_move_names_the_exchange_that_moved_it() {
        let approved = json!({"outcome": "approved", "detail": "pi_1"});
        assert!(hold(approved.clone(), true).check().is_ok());
        assert!(
            hold(approved, false)
                .check()
                .unwrap_err()
                .contains("exactly one")
        );
        let declined = json!({"outcome": "declined", "detail": {"code": "card_declined"}});
        assert!(hold(declined, false).check().is_ok());
        let mut retrieve = hold(json!({"ok": {}}), true);
        retrieve.operation = "retrieve".into();
        assert!(retrieve.check().unwrap_err().contains("moves no money"));
    }

    #[test]
    fn answers_are_named_by_outcome_or_refusal() {
        let named = |answer: Value| hold(answer, true).answer_kind();
        assert_eq!(named(json!({"outcome": "in-flight"})), "in-flight");
        assert_eq!(named(json!({"ok": {"brand": "visa"}})), "ok");
        assert_eq!(
            named(json!({"refused": {"outcome": "unknown-reference", "detail": "x"}})),
            "refused unknown-reference"
        );
        assert_eq!(named(json!({"refused": "down"})), "refused");
    }
}
