//! Adyen's wire: what the operator configures, how a request is sent, how an answer is
//! sorted, and amounts in Adyen's decimals.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use adapter_kit::http::host_of;
use adapter_kit::{Method, Request, Response, Transport};
use serde_json::{Value, json};

/// Adyen's test Checkout API, version 71.
pub const DEFAULT_API_BASE: &str = "https://checkout-test.adyen.com/v71";

/// What the operator configured (`config.get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The API key of the web service user, sent as `X-API-Key`.
    pub api_key: String,
    /// The merchant account every request names.
    pub merchant_account: String,
    /// `https://…/v71`, without a trailing slash.
    pub api_base: String,
    /// The client key Adyen's web Drop-in is started with (card form document).
    pub client_key: Option<String>,
    /// `test` or `live`, for the Drop-in.
    pub environment: String,
    /// The notifications' HMAC key, as Adyen's Customer Area shows it (hex).
    pub hmac_key: Option<Vec<u8>>,
    /// The webhook's Basic authentication (user name, password), as set in Adyen's Customer
    /// Area: when configured, a notification must carry it. The HMAC signs only some fields
    /// of an item (not `additionalData`); the credentials cover the whole request.
    pub notification_credentials: Option<(String, String)>,
    /// Where Adyen Web (`adyen.js`, `adyen.css`) is loaded from, ending in `/`.
    pub web_sdk_base: String,
}

/// The Adyen Web version the card-form document names.
pub const WEB_SDK_VERSION: &str = "5.68.0";

/// Adyen's own address of Adyen Web for `environment`.
pub fn default_web_sdk_base(environment: &str) -> String {
    format!(
        "https://checkoutshopper-{environment}.cdn.adyen.com/checkoutshopper/sdk/{WEB_SDK_VERSION}/"
    )
}

impl Settings {
    /// Reads the settings through `get`; `Err` names what is missing or wrong.
    pub fn read(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let required = |name: &str| {
            get(name)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("the adapter's configuration has no `{name}`"))
        };
        let api_key = required("api_key")?;
        if api_key.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err("`api_key` must be visible ASCII".into());
        }
        let merchant_account = required("merchant_account")?;
        let api_base = get("api_base").unwrap_or_else(|| DEFAULT_API_BASE.into());
        let api_base = api_base.trim_end_matches('/').to_string();
        host_of(&api_base)?;
        let environment = get("environment").unwrap_or_else(|| "test".into());
        if !matches!(environment.as_str(), "test" | "live") {
            return Err("`environment` must be `test` or `live`".into());
        }
        let hmac_key = match get("hmac_key").filter(|k| !k.is_empty()) {
            Some(hex) => {
                Some(adapter_kit::hex::decode(&hex).ok_or("`hmac_key` must be hexadecimal")?)
            }
            None => None,
        };
        let notification_credentials = match (
            get("notification_username").filter(|v| !v.is_empty()),
            get("notification_password").filter(|v| !v.is_empty()),
        ) {
            (Some(user), Some(password)) if !user.contains(':') => Some((user, password)),
            (Some(_), Some(_)) => {
                return Err("`notification_username` must not contain `:`".into());
            }
            (None, None) => None,
            _ => {
                return Err(
                    "`notification_username` and `notification_password` go together".into(),
                );
            }
        };
        let web_sdk_base = get("web_sdk_base")
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| default_web_sdk_base(&environment));
        if !web_sdk_base.ends_with('/') || host_of(&web_sdk_base).is_err() {
            return Err(format!(
                "`web_sdk_base` {web_sdk_base:?} must be an https:// address ending in /"
            ));
        }
        Ok(Settings {
            api_key,
            merchant_account,
            api_base,
            client_key: get("client_key").filter(|k| !k.is_empty()),
            environment,
            hmac_key,
            notification_credentials,
            web_sdk_base,
        })
    }
}

/// Why a request did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No usable answer: nothing is known to have happened; the same request with the same
    /// key may be sent again.
    Unreachable(String),
    /// Adyen is still working on a request with this key, or finished one with other content
    /// (422 `704`).
    InFlight(String),
    /// Adyen refused the request itself: credentials (401, 403), validation (400, 422), or a
    /// path it does not know (404). `code` is Adyen's `errorCode`.
    Refused {
        status: u16,
        code: String,
        message: String,
    },
}

impl Failure {
    pub fn describe(&self) -> String {
        match self {
            Failure::Unreachable(m) | Failure::InFlight(m) => m.clone(),
            Failure::Refused {
                status,
                code,
                message,
            } => format!("Adyen refused the request ({status}, errorCode {code}: {message})"),
        }
    }
}

/// Adyen's `errorCode` for an idempotency key that is in use, or was used with other content.
pub const KEY_IN_USE: &str = "704";

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

    /// A POST that is harmless to make twice (a card form session).
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
            ("x-api-key".to_string(), self.settings.api_key.clone()),
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

/// Sorts an answer by Adyen's documented statuses: 2xx with a JSON object is success; 5xx and
/// 429 no usable answer; 409, or 422 `704`, the key in use; any other status with Adyen's error
/// object (`status`, `errorCode`, `message`, `errorType`) a refusal of the request.
pub fn classify(response: Response) -> Result<Value, Failure> {
    let status = response.status;
    let body: Option<Value> = serde_json::from_slice(&response.body).ok();
    if (200..300).contains(&status) {
        return match body {
            Some(value @ Value::Object(_)) => Ok(value),
            _ => Err(Failure::Unreachable(format!(
                "Adyen answered {status} with a body that is not a JSON object"
            ))),
        };
    }
    if status >= 500 || status == 429 {
        return Err(Failure::Unreachable(format!("Adyen answered {status}")));
    }
    let field = |name: &str| {
        body.as_ref()
            .and_then(|b| b.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let Some(code) = field("errorCode") else {
        return Err(Failure::Unreachable(format!(
            "Adyen answered {status} without an errorCode"
        )));
    };
    // Adyen answers a key still in use with "request already processed or in progress",
    // documented as 409 and seen as 422 `704`.
    if status == 409 || code == KEY_IN_USE {
        return Err(Failure::InFlight(format!(
            "Adyen is still working on a request with this key ({status}, errorCode {code})"
        )));
    }
    Err(Failure::Refused {
        status,
        code,
        message: field("message").unwrap_or_default(),
    })
}

/// Currencies whose decimals in Adyen differ from ISO 4217: (code, ISO's, Adyen's). Every
/// other currency is counted alike.
const DECIMALS_DIFFER: [(&str, u32, u32); 4] =
    [("CLP", 0, 2), ("CVE", 2, 0), ("IDR", 2, 0), ("ISK", 0, 2)];

fn decimals(currency: &str) -> (u32, u32) {
    DECIMALS_DIFFER
        .iter()
        .find(|(code, _, _)| currency.eq_ignore_ascii_case(code))
        .map_or((2, 2), |&(_, iso, adyen)| (iso, adyen))
}

/// `amount_minor` (ISO 4217 minor units) as Adyen's `amount` object; None when Adyen cannot
/// count it (a fraction of its smallest unit).
pub fn to_adyen(amount_minor: i64, currency: &str) -> Option<Value> {
    let (iso, adyen) = decimals(currency);
    let value = if adyen >= iso {
        amount_minor.checked_mul(10_i64.pow(adyen - iso))?
    } else {
        let unit = 10_i64.pow(iso - adyen);
        if amount_minor % unit != 0 {
            return None;
        }
        amount_minor / unit
    };
    Some(json!({"value": value, "currency": currency.to_ascii_uppercase()}))
}

/// Adyen's `amount` object in ISO 4217 minor units, with its currency; None when it cannot be
/// read or converted exactly.
pub fn from_adyen(amount: &Value) -> Option<(i64, String)> {
    let value = amount.get("value")?.as_i64()?;
    let currency = amount.get("currency")?.as_str()?.to_ascii_uppercase();
    let (iso, adyen) = decimals(&currency);
    let minor = if iso >= adyen {
        value.checked_mul(10_i64.pow(iso - adyen))?
    } else {
        let unit = 10_i64.pow(adyen - iso);
        if value % unit != 0 {
            return None;
        }
        value / unit
    };
    Some((minor, currency))
}
