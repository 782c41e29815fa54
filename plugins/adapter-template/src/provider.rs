//! The provider's wire format: what the operator configures, how a request is sent, and how
//! an answer is sorted. Rewrite this for your provider's API.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;

use adapter_kit::http::host_of;
use adapter_kit::{Method, Request, Transport};
use serde_json::Value;

/// Where the example provider's API lives unless the operator says otherwise.
pub const DEFAULT_API_BASE: &str = "https://api.example-pay.test";

/// What the operator configured (`config.get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The account's secret API key, sent as a bearer token.
    pub api_key: String,
    /// `https://…`, without a trailing slash.
    pub api_base: String,
    /// The secret the provider signs its notifications with; none: notifications are refused.
    pub webhook_secret: Option<String>,
}

impl Settings {
    /// Reads the settings through `get`; `Err` names what is missing or wrong.
    pub fn read(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let api_key = get("api_key")
            .filter(|k| !k.is_empty())
            .ok_or("the adapter's configuration has no `api_key`")?;
        if api_key.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err("`api_key` must be visible ASCII".into());
        }
        let api_base = get("api_base").unwrap_or_else(|| DEFAULT_API_BASE.into());
        let api_base = api_base.trim_end_matches('/').to_string();
        host_of(&api_base)?;
        let webhook_secret = get("webhook_secret").filter(|s| !s.is_empty());
        Ok(Settings {
            api_key,
            api_base,
            webhook_secret,
        })
    }
}

/// Why a request did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The card (or its issuer) said no (402): `code` is the provider's decline code.
    Declined { code: String },
    /// No usable answer: nothing is known to have happened, and the same request with the
    /// same key may be sent again.
    Unreachable(String),
    /// The provider is still working on an earlier request with this key (409).
    InFlight(String),
    /// The provider refused the request itself (401 and 403 the credentials, 404
    /// `not_found`, 400 and 422 the request): the same request fails the same way every time.
    Refused { status: u16, code: String },
}

impl Failure {
    /// A one-line description, for `unreachable` outcomes.
    pub fn describe(&self) -> String {
        match self {
            Failure::Declined { code } => format!("declined: {code}"),
            Failure::Unreachable(m) | Failure::InFlight(m) => m.clone(),
            Failure::Refused { status, code } => {
                format!("the provider refused the request ({status} {code})")
            }
        }
    }
}

/// Sends requests with the account's credentials.
pub struct Client<'a, T: Transport> {
    pub settings: &'a Settings,
    pub transport: &'a T,
}

impl<T: Transport> Client<'_, T> {
    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::Get, path, None, None)
    }

    /// A POST that creates or moves something: it carries `idempotency_key`, so a repeat is
    /// answered with what the first one did.
    pub fn post(&self, path: &str, body: &Value, idempotency_key: &str) -> Result<Value, Failure> {
        self.send(Method::Post, path, Some(body), Some(idempotency_key))
    }

    /// A POST without a key: for what is harmless to create twice (a card session).
    pub fn post_once(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.send(Method::Post, path, Some(body), None)
    }

    fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Value, Failure> {
        let mut headers = vec![
            (
                "authorization".to_string(),
                format!("Bearer {}", self.settings.api_key),
            ),
            ("accept".to_string(), "application/json".to_string()),
        ];
        if body.is_some() {
            headers.push(("content-type".to_string(), "application/json".to_string()));
        }
        if let Some(key) = idempotency_key {
            headers.push(("idempotency-key".to_string(), key.to_string()));
        }
        let request = Request {
            method,
            url: format!("{}{path}", self.settings.api_base),
            headers,
            body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        };
        let response = self.transport.send(request).map_err(Failure::Unreachable)?;
        classify(response)
    }
}

/// Sorts an answer by the example provider's documented statuses: 2xx with a JSON object is
/// success; 402 a decline; 409 the key still in use; 5xx and 429 no usable answer; any other
/// status with an error object a refusal.
pub fn classify(response: adapter_kit::Response) -> Result<Value, Failure> {
    let status = response.status;
    let body: Option<Value> = serde_json::from_slice(&response.body).ok();
    if (200..300).contains(&status) {
        return match body {
            Some(value @ Value::Object(_)) => Ok(value),
            _ => Err(Failure::Unreachable(format!(
                "the provider answered {status} with a body that is not a JSON object"
            ))),
        };
    }
    if status >= 500 || status == 429 {
        return Err(Failure::Unreachable(format!(
            "the provider answered {status}"
        )));
    }
    let code = body
        .as_ref()
        .and_then(|b| b.get("error"))
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(code) = code else {
        return Err(Failure::Unreachable(format!(
            "the provider answered {status} without an error code"
        )));
    };
    match status {
        402 => Err(Failure::Declined { code }),
        409 => Err(Failure::InFlight(format!(
            "the provider is still working on a request with this key ({code})"
        ))),
        _ => Err(Failure::Refused { status, code }),
    }
}
