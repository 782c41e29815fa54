//! The outbound HTTP client: rustls, no proxies, no redirects, a deadline per request, and a
//! resolver that hands the connector only vetted public addresses (so the address checked is
//! the address connected to).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Client, Url};
use thiserror::Error;

use super::config::WebhookConfig;
use courier_plugins::is_public_address as is_public;
use courier_store::webhooks::Reply;

/// The most of a receiver's answer that is read (then the connection is given up).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The most of a receiver's answer kept for the merchant's delivery log.
pub const EXCERPT_BYTES: usize = 1024;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("reading COURIER_WEBHOOK_EXTRA_CA {path}: {reason}")]
    ExtraCa { path: String, reason: String },
    #[error("building the webhook HTTP client: {0}")]
    Build(#[source] reqwest::Error),
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Any 2xx.
    Succeeded { status: u16 },
    /// Another status, a timeout, a connection error or a refused address.
    Failed { status: Option<u16>, error: String },
}

/// One outbound request.
pub struct Request<'a> {
    pub url: &'a str,
    pub event: &'a str,
    pub delivery_id: &'a str,
    pub signature: &'a str,
    pub body: bytes::Bytes,
}

#[derive(Clone, Debug)]
pub struct WebhookClient {
    http: Client,
    timeout: Duration,
    allow_private: bool,
}

impl WebhookClient {
    pub fn new(config: &WebhookConfig) -> Result<Self, ClientError> {
        let mut builder = Client::builder()
            .use_rustls_tls()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent("Courier-Webhooks/1")
            .dns_resolver(Arc::new(VettingResolver {
                allow_private: config.allow_private,
            }));
        if let Some(path) = &config.extra_ca {
            let extra = |reason: String| ClientError::ExtraCa {
                path: path.display().to_string(),
                reason,
            };
            let pem = std::fs::read(path).map_err(|e| extra(e.to_string()))?;
            let roots =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| extra(e.to_string()))?;
            if roots.is_empty() {
                return Err(extra("no certificate in the file".into()));
            }
            for root in roots {
                builder = builder.add_root_certificate(root);
            }
        }
        Ok(Self {
            http: builder.build().map_err(ClientError::Build)?,
            timeout: config.timeout,
            allow_private: config.allow_private,
        })
    }

    /// Sends one attempt: what it came to, and what it heard back (how long the receiver took,
    /// and the start of its answer).
    pub async fn send(&self, request: Request<'_>) -> (Outcome, Reply) {
        let started = Instant::now();
        let mut excerpt: Vec<u8> = Vec::new();
        let outcome = self.exchange(request, &mut excerpt).await;
        let reply = Reply {
            took_ms: i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX),
            excerpt: (!excerpt.is_empty()).then(|| excerpt_text(&excerpt)),
        };
        (outcome, reply)
    }

    async fn exchange(&self, request: Request<'_>, excerpt: &mut Vec<u8>) -> Outcome {
        let failed = |error: String| Outcome::Failed {
            status: None,
            error,
        };
        let url = match Url::parse(request.url) {
            Ok(url) => url,
            Err(e) => return failed(format!("the endpoint URL cannot be used: {e}")),
        };
        // Literal addresses never reach the resolver; vet them here.
        let literal = url
            .host_str()
            .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
            .and_then(|host| host.parse::<IpAddr>().ok());
        if let Some(ip) = literal
            && !self.allow_private
            && !is_public(ip)
        {
            return failed(format!("refused: {ip} is not a public address"));
        }
        let sent = self
            .http
            .post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("Courier-Event", request.event)
            .header("Courier-Delivery", request.delivery_id)
            .header("Courier-Signature", request.signature)
            .body(request.body)
            .send()
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(e) => return failed(describe(&e, self.timeout)),
        };
        let status = response.status();
        // Read a little of the answer so the connection can be reused; its start is kept. The
        // status is the receiver's answer: a body that ends badly after it (a connection
        // closed without `Content-Length` or TLS `close_notify`, as some proxies do, or a
        // deadline) changes nothing, and a 2xx stays a success.
        let mut read = 0;
        while read < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = EXCERPT_BYTES.saturating_sub(excerpt.len());
                    excerpt.extend_from_slice(&chunk[..room.min(chunk.len())]);
                    read += chunk.len();
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, %status, "a webhook answer's body ended badly");
                    break;
                }
            }
        }
        if status.is_success() {
            Outcome::Succeeded {
                status: status.as_u16(),
            }
        } else {
            Outcome::Failed {
                status: Some(status.as_u16()),
                error: format!("the receiver answered {status}"),
            }
        }
    }
}

/// The kept start of an answer as text: invalid UTF-8 (and a character cut at the end) is
/// replaced, and control characters other than line breaks and tabs are dropped.
fn excerpt_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .collect()
}

/// A short, fixed account of a transport error for the merchant's delivery record: never the
/// error chain, which can name internals; the whole chain goes to the log.
fn describe(error: &reqwest::Error, timeout: Duration) -> String {
    let mut chain = error.to_string();
    let mut not_public = false;
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        not_public |= cause.downcast_ref::<NotPublic>().is_some();
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::debug!(error = %chain, "a webhook request failed");
    if error.is_timeout() {
        return format!("no answer within {} ms", timeout.as_millis());
    }
    let chain = chain.to_ascii_lowercase();
    let text = if not_public {
        "refused: the host resolves to no public address"
    } else if chain.contains("dns error") || chain.contains("failed to lookup") {
        "the host name does not resolve"
    } else if chain.contains("certificate") || chain.contains("tls") || chain.contains("handshake")
    {
        "the TLS handshake failed"
    } else if chain.contains("connection refused") {
        "connection refused"
    } else if error.is_connect() {
        "connection failed"
    } else if error.is_body() || error.is_decode() {
        "the answer could not be read"
    } else {
        "the request failed"
    };
    text.to_owned()
}

#[derive(Debug, Error)]
#[error("refused: {0} resolves to no public address")]
struct NotPublic(String);

/// Resolves with the system resolver, then keeps only public addresses.
struct VettingResolver {
    allow_private: bool,
}

impl Resolve for VettingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| allow_private || is_public(addr.ip()))
                .collect();
            if found.is_empty() {
                return Err(Box::new(NotPublic(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_is_text_without_control_characters() {
        assert_eq!(excerpt_text(b"{\"ok\":true}\n"), "{\"ok\":true}\n");
        // PostgreSQL's text holds no NUL; a terminal's escapes are dropped too.
        assert_eq!(excerpt_text(b"a\0b\x1b[31mc\td"), "ab[31mc\td");
        // A character cut at the excerpt's end, or bytes that are not UTF-8, are replaced.
        assert_eq!(excerpt_text("é".as_bytes()[..1].as_ref()), "\u{fffd}");
        assert_eq!(excerpt_text(b"\xff\xfeok"), "\u{fffd}\u{fffd}ok");
    }
}
