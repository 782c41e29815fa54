//! Stripe's wire: requests with the account's credentials, and answers
//! sorted into what they mean (a success body, a card error, or no usable
//! answer).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;

use adapter_kit::http::{host_of, origin_of};
use adapter_kit::{Method, Request, Response, Transport};
use serde_json::Value;

pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";
/// The API version the adapter was written against, sent unless the
/// operator sets another: what an answer looks like must not change with
/// the account's default.
pub const DEFAULT_API_VERSION: &str = "2024-06-20";
/// Stripe.js, which draws Stripe's card form in the merchant's page.
pub const DEFAULT_JS_URL: &str = "https://js.stripe.com/v3/";

/// What the operator configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub secret_key: String,
    pub api_base: String,
    pub account: Option<String>,
    pub api_version: Option<String>,
    /// The account's publishable key (`pk_…`), which Stripe.js starts with: without it the
    /// card-form document says nothing about the browser.
    pub publishable_key: Option<String>,
    /// Where Stripe.js is loaded from.
    pub js_url: String,
}

impl Settings {
    /// Reads the settings through `get` (the `config` import). `Err` names
    /// what is missing or wrong.
    pub fn read(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let secret_key = get("secret_key")
            .filter(|k| !k.is_empty())
            .ok_or("the adapter's configuration has no `secret_key`")?;
        if secret_key.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err("`secret_key` must be visible ASCII".into());
        }
        let api_base = get("api_base").unwrap_or_else(|| DEFAULT_API_BASE.into());
        let api_base = api_base.trim_end_matches('/').to_string();
        host_of(&api_base)?;
        let publishable_key = get("publishable_key").filter(|k| !k.is_empty());
        if let Some(key) = &publishable_key
            && (!key.starts_with("pk_") || key.bytes().any(|b| !b.is_ascii_graphic()))
        {
            return Err("`publishable_key` must be a publishable key (`pk_…`)".into());
        }
        let js_url = get("js_url")
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| DEFAULT_JS_URL.into());
        if origin_of(&js_url).is_none() {
            return Err(format!("`js_url` {js_url:?} must be an https:// URL"));
        }
        Ok(Settings {
            secret_key,
            api_base,
            account: get("account").filter(|a| !a.is_empty()),
            api_version: Some(
                get("api_version")
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| DEFAULT_API_VERSION.into()),
            ),
            publishable_key,
            js_url,
        })
    }
}

/// Why a request did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Stripe answered with a `card_error`: the card (or its issuer) said no.
    Card {
        code: String,
        decline_code: Option<String>,
        message: String,
    },
    /// No usable answer: nothing is known to have happened, and the same
    /// request with the same key may be sent again.
    Unreachable(String),
    /// Stripe is still working on an earlier request with this idempotency
    /// key (409): its outcome is not known yet.
    InFlight(String),
    /// Stripe refused the request itself (`invalid_request_error` and the
    /// like). `code` is Stripe's (e.g. `resource_missing`).
    Refused {
        status: u16,
        kind: String,
        code: String,
        message: String,
    },
}

impl Failure {
    /// A one-line description, for `unreachable` outcomes and logs.
    pub fn describe(&self) -> String {
        match self {
            Failure::Card { code, .. } => format!("declined: {code}"),
            Failure::Unreachable(m) | Failure::InFlight(m) => m.clone(),
            Failure::Refused {
                status,
                kind,
                code,
                message,
            } => format!("Stripe refused the request ({status} {kind} {code}): {message}"),
        }
    }
}

/// Sends requests to Stripe with the account's credentials.
pub struct Client<'a, T: Transport> {
    pub settings: &'a Settings,
    pub transport: &'a T,
}

impl<T: Transport> Client<'_, T> {
    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::Get, path, &[], None)
    }

    pub fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        idempotency_key: &str,
    ) -> Result<Value, Failure> {
        self.send(Method::Post, path, form, Some(idempotency_key))
    }

    /// A POST without an idempotency key: for creating objects that are
    /// harmless to create twice.
    pub fn post_once(&self, path: &str, form: &[(&str, &str)]) -> Result<Value, Failure> {
        self.send(Method::Post, path, form, None)
    }

    fn send(
        &self,
        method: Method,
        path: &str,
        form: &[(&str, &str)],
        idempotency_key: Option<&str>,
    ) -> Result<Value, Failure> {
        let mut headers = vec![
            (
                "authorization".to_string(),
                format!("Bearer {}", self.settings.secret_key),
            ),
            ("accept".to_string(), "application/json".to_string()),
        ];
        if method == Method::Post {
            headers.push((
                "content-type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ));
        }
        if let Some(key) = idempotency_key {
            headers.push(("idempotency-key".to_string(), key.to_string()));
        }
        if let Some(account) = &self.settings.account {
            headers.push(("stripe-account".to_string(), account.clone()));
        }
        if let Some(version) = &self.settings.api_version {
            headers.push(("stripe-version".to_string(), version.clone()));
        }
        let request = Request {
            method,
            url: format!("{}{path}", self.settings.api_base),
            headers,
            body: adapter_kit::form::encode(form).into_bytes(),
        };
        let response = self.transport.send(request).map_err(Failure::Unreachable)?;
        classify(response)
    }
}

/// Sorts an HTTP answer by Stripe's documented status codes and error types.
pub fn classify(response: Response) -> Result<Value, Failure> {
    let status = response.status;
    let body: Option<Value> = serde_json::from_slice(&response.body).ok();
    if (200..300).contains(&status) {
        return match body {
            Some(value @ Value::Object(_)) => Ok(value),
            _ => Err(Failure::Unreachable(format!(
                "Stripe answered {status} with a body that is not a JSON object"
            ))),
        };
    }
    let error = body.as_ref().and_then(|b| b.get("error"));
    let text = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let kind = text("type").unwrap_or_default();
    let code = text("code").unwrap_or_default();
    let message = text("message").unwrap_or_default();
    if status >= 500 || status == 429 || kind == "api_error" {
        return Err(Failure::Unreachable(format!(
            "Stripe answered {status} {kind}: {message}"
        )));
    }
    // A request with this key is still being worked on at Stripe: its
    // result is not known yet, and asking again later finds it.
    if status == 409 {
        return Err(Failure::InFlight(format!(
            "Stripe is still working on a request with this idempotency key ({code})"
        )));
    }
    if kind == "card_error" {
        return Err(Failure::Card {
            code: if code.is_empty() {
                "card_declined".into()
            } else {
                code
            },
            decline_code: text("decline_code").filter(|d| !d.is_empty()),
            message,
        });
    }
    if error.is_none() {
        return Err(Failure::Unreachable(format!(
            "Stripe answered {status} without an error object"
        )));
    }
    Err(Failure::Refused {
        status,
        kind,
        code,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, body: &str) -> Response {
        Response {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn settings_need_a_secret_key_and_an_https_base() {
        let none = Settings::read(|_| None);
        assert!(none.unwrap_err().contains("secret_key"));
        let s = Settings::read(|k| (k == "secret_key").then(|| "sk_test_1".into())).unwrap();
        assert_eq!(s.api_base, DEFAULT_API_BASE);
        let plain = Settings::read(|k| match k {
            "secret_key" => Some("sk".into()),
            "api_base" => Some("http://api.stripe.com".into()),
            _ => None,
        });
        assert!(plain.unwrap_err().contains("https"));
    }

    #[test]
    fn answers_are_sorted_by_stripes_documented_errors() {
        assert!(classify(response(200, r#"{"id":"pi_1"}"#)).is_ok());
        assert!(matches!(
            classify(response(200, "<html>")),
            Err(Failure::Unreachable(_))
        ));
        for status in [500, 502, 429] {
            assert!(matches!(
                classify(response(status, r#"{"error":{"type":"api_error"}}"#)),
                Err(Failure::Unreachable(_))
            ));
        }
        assert!(matches!(
            classify(response(
                409,
                r#"{"error":{"type":"invalid_request_error","code":"idempotency_key_in_use"}}"#
            )),
            Err(Failure::InFlight(_))
        ));
        let card = classify(response(
            402,
            r#"{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds."}}"#,
        ));
        assert!(
            matches!(card, Err(Failure::Card { ref code, ref decline_code, .. })
            if code == "card_declined" && decline_code.as_deref() == Some("insufficient_funds"))
        );
        let missing = classify(response(
            404,
            r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such PaymentMethod"}}"#,
        ));
        assert!(
            matches!(missing, Err(Failure::Refused { status: 404, ref code, .. }) if code == "resource_missing")
        );
        assert!(matches!(
            classify(response(400, "not json")),
            Err(Failure::Unreachable(_))
        ));
    }
}
