//! The SMS provider interface, and its implementation for an HTTP SMS gateway.
//!
//! The gateway receives `POST <url>` with a JSON body `{"to", "from", "body", "reference"}`,
//! HTTP Basic credentials when configured, and an `Idempotency-Key` equal to `reference`: the
//! same on every attempt at the same text, so a gateway that honours it never delivers a
//! text twice when an answer is lost and the attempt repeated.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;

/// A text on its way to a provider.
#[derive(Clone, Debug, Serialize)]
pub struct OutgoingText {
    pub to: String,
    pub from: String,
    pub body: String,
    /// The text's own id: the provider's de-duplication key.
    pub reference: String,
}

/// Why a provider did not take a text.
#[derive(Debug, thiserror::Error)]
pub enum SendFailure {
    /// Worth trying again later: unreachable, timed out, overloaded, rate limited.
    #[error("{0}")]
    Retryable(String),
    /// Will never work as it is: the provider refused the text.
    #[error("{0}")]
    Refused(String),
}

pub type SendResult<'a> =
    Pin<Box<dyn Future<Output = Result<Option<String>, SendFailure>> + Send + 'a>>;

/// Something that delivers texts. `send` answers the provider's message id, when it gives one.
pub trait SmsProvider: Send + Sync {
    fn send<'a>(&'a self, text: &'a OutgoingText) -> SendResult<'a>;
}

/// Where the HTTP gateway is and how to sign in to it (`COURIER_SMS_GATEWAY_*`).
#[derive(Clone)]
pub struct GatewayConfig {
    pub url: reqwest::Url,
    pub username: Option<String>,
    pub password: Option<String>,
    pub timeout: Duration,
}

impl std::fmt::Debug for GatewayConfig {
    // The password never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("url", &self.url.as_str())
            .field("username", &self.username)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

pub struct HttpSmsGateway {
    config: GatewayConfig,
    client: reqwest::Client,
}

impl HttpSmsGateway {
    pub fn new(config: GatewayConfig) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { config, client })
    }

    async fn post(&self, text: &OutgoingText) -> Result<Option<String>, SendFailure> {
        let body = serde_json::to_vec(text).expect("a text serialises");
        let mut request = self
            .client
            .post(self.config.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", &text.reference)
            .body(body);
        if let Some(username) = &self.config.username {
            request = request.basic_auth(username, self.config.password.as_deref());
        }
        let response = request
            .send()
            .await
            .map_err(|e| SendFailure::Retryable(format!("gateway unreachable: {e}")))?;
        let status = response.status();
        let answer = response.bytes().await.unwrap_or_default();
        if status.is_success() {
            return Ok(message_id(&answer));
        }
        let detail = format!(
            "gateway answered {status}: {}",
            String::from_utf8_lossy(&answer[..answer.len().min(200)])
        );
        // Timeouts, rate limits and server trouble pass; any other refusal is final.
        if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429 {
            Err(SendFailure::Retryable(detail))
        } else {
            Err(SendFailure::Refused(detail))
        }
    }
}

impl SmsProvider for HttpSmsGateway {
    fn send<'a>(&'a self, text: &'a OutgoingText) -> SendResult<'a> {
        Box::pin(self.post(text))
    }
}

/// The provider's id for the message: `id` or `message_id` in a JSON answer, if present.
fn message_id(answer: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(answer).ok()?;
    ["id", "message_id"].iter().find_map(|k| match &value[*k] {
        serde_json::Value::String(s) => Some(s.chars().take(200).collect()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_read_when_given() {
        assert_eq!(message_id(br#"{"id":"m-1"}"#).as_deref(), Some("m-1"));
        assert_eq!(message_id(br#"{"message_id":42}"#).as_deref(), Some("42"));
        assert_eq!(message_id(b"OK"), None);
        assert_eq!(message_id(br#"{"status":"queued"}"#), None);
    }
}
