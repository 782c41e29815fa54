//! The provider's wire format: what the operator configures, how a request is sent, and how
//! an answer is sorted. Rewrite this for your provider's API.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::Value;

/// Where the example provider's API lives unless the operator says otherwise.
pub const DEFAULT_API_BASE: &str = "https://api.example-pay.test";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// The host's `outbound-http` (or a test's script of answers).
pub trait Transport {
    /// `Err` with a description when nothing usable came back (timeout, connection failure,
    /// an oversize body, or a refusal by the host).
    fn send(&self, request: Request) -> Result<Response, String>;
}

/// What the operator configured (`config.get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The account's secret API key, sent as a bearer token.
    pub api_key: String,
    /// `https://…`, without a trailing slash.
    pub api_base: String,
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
        Ok(Settings { api_key, api_base })
    }
}

/// The host of an `https://` API base: the one host `describe` declares.
pub fn host_of(api_base: &str) -> Result<String, String> {
    let rest = api_base
        .strip_prefix("https://")
        .ok_or_else(|| format!("`api_base` {api_base:?} must start with https://"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    if host.is_empty() || host.contains('@') {
        return Err(format!("`api_base` {api_base:?} has no usable host"));
    }
    Ok(host.to_ascii_lowercase())
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
    /// The provider refused the request itself (404 `not_found`, 400 and the like).
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
pub fn classify(response: Response) -> Result<Value, Failure> {
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
