//! The outbound HTTP a payment adapter gets: only https, only to the hosts
//! the adapter declared, never to a private, loopback or link-local
//! address. The address check runs on the resolved addresses of every new
//! connection, and the connection goes to exactly those addresses (no
//! second lookup a DNS answer could change in between).
//!
//! Connections are kept and reused (one pool per adapter, across calls): a
//! provider answers hundreds of holds a second, and a TLS handshake for
//! each would cost more than the rest of the booking.
//!
//! Every request fits in what is left of its call's deadline: the DNS
//! lookup, the connection and the exchange together, so an adapter making
//! several requests cannot outlast the deadline the host set for the call.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::public_address::is_public;

use url::{Host, Url};

/// What an adapter's imports are served from during its calls.
pub(crate) struct AdapterHost {
    /// None while `describe` runs: it may read its configuration (an API
    /// base the operator set decides its allowed hosts) but not the network.
    pub(crate) http: Option<HttpPolicy>,
    pub(crate) config: std::collections::BTreeMap<String, String>,
    /// Every exchange of the adapter's calls, kept only when someone watches
    /// ([`crate::PaymentAdapter::load_watched`]); never in the service.
    pub(crate) exchanges: Option<std::sync::Mutex<Vec<Exchange>>>,
    /// Every line the adapter logged, kept only when someone watches (the service logs them).
    pub(crate) logged: Option<std::sync::Mutex<Vec<GuestLine>>>,
}

impl AdapterHost {
    /// Notes one exchange, when exchanges are kept; the configuration's secrets are masked.
    pub(crate) fn note(
        &self,
        request: &HttpRequest,
        answer: &Result<HttpResponse, HttpFailure>,
        took: Duration,
    ) {
        let Some(exchanges) = &self.exchanges else {
            return;
        };
        let secrets: Vec<&str> = self
            .config
            .iter()
            .filter(|(name, value)| is_secret_setting(name) && value.len() >= 4)
            .map(|(_, value)| value.as_str())
            .collect();
        let shown = |bytes: &[u8]| mask(&String::from_utf8_lossy(bytes), &secrets);
        let (status, failure, response_headers, response_body) = match answer {
            Ok(response) => (
                Some(response.status),
                None,
                response
                    .headers
                    .iter()
                    .map(|(name, value)| (name.clone(), mask(value, &secrets)))
                    .collect(),
                shown(&response.body),
            ),
            Err(failure) => (
                None,
                Some(format!("{failure:?}")),
                Vec::new(),
                String::new(),
            ),
        };
        let exchange = Exchange {
            method: request.method.as_str(),
            url: mask(&request.url, &secrets),
            request_headers: request
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = if name.eq_ignore_ascii_case("authorization") {
                        // The scheme stays readable; the credential never shows.
                        let scheme = value.split_whitespace().next().unwrap_or_default();
                        format!("{scheme} ****")
                    } else {
                        mask(value, &secrets)
                    };
                    (name.clone(), value)
                })
                .collect(),
            request_body: shown(&request.body),
            status,
            failure,
            response_headers,
            response_body,
            millis: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        };
        exchanges
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(exchange);
    }
}

/// One HTTP exchange of an adapter's call, as `courier adapter run` shows it and `courier
/// adapter record` keeps it: the configuration's secrets and every `Authorization` credential
/// masked, bodies whole (as text) until [`Exchange::excerpted`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Exchange {
    pub method: &'static str,
    pub url: String,
    pub request_headers: Vec<(String, String)>,
    pub request_body: String,
    /// The provider's status, or why no answer came (`failure`).
    pub status: Option<u16>,
    pub failure: Option<String>,
    pub response_headers: Vec<(String, String)>,
    pub response_body: String,
    pub millis: u64,
}

impl Exchange {
    /// The exchange with both bodies cut at [`EXCERPT_BYTES`], for showing to a person.
    pub fn excerpted(mut self) -> Self {
        self.request_body = excerpt(&self.request_body);
        self.response_body = excerpt(&self.response_body);
        self
    }
}

/// The lines an adapter logged in one call (the `log` import), within their limits.
#[derive(Debug, Default)]
pub(crate) struct CallLog {
    pub lines: Vec<GuestLine>,
    /// Lines past [`GuestLine::PER_CALL`], counted and dropped.
    pub dropped: usize,
}

impl CallLog {
    /// Keeps a line, cut at [`GuestLine::BYTES`], or counts it when the call has logged enough.
    pub fn push(&mut self, level: LogLevel, message: String) {
        if self.lines.len() >= GuestLine::PER_CALL {
            self.dropped += 1;
            return;
        }
        let mut message = message;
        if message.len() > GuestLine::BYTES {
            let mut end = GuestLine::BYTES;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
        }
        self.lines.push(GuestLine { level, message });
    }
}

/// The level of a line an adapter logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// One line an adapter logged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestLine {
    pub level: LogLevel,
    pub message: String,
}

impl GuestLine {
    /// Lines kept per call.
    pub const PER_CALL: usize = 50;
    /// Bytes kept per line.
    pub const BYTES: usize = 1024;
}

/// How much of a body an [`Exchange`] shows.
pub const EXCERPT_BYTES: usize = 4096;

/// Settings whose values are secrets by their name: API keys, secrets, tokens, passwords.
fn is_secret_setting(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["key", "secret", "token", "password", "hmac"]
        .iter()
        .any(|word| name.contains(word))
}

fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT_BYTES {
        return text.to_owned();
    }
    let mut end = EXCERPT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

fn mask(text: &str, secrets: &[&str]) -> String {
    secrets
        .iter()
        .fold(text.to_owned(), |text, secret| text.replace(secret, "****"))
}

/// Why the host did not deliver a request (mirrors the WIT `error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpFailure {
    Forbidden(String),
    Timeout,
    Connection(String),
    TooLarge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// A request an adapter sends through `outbound-http`.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What came back for an [`HttpRequest`].
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A host an adapter may call: exactly `api.example.com`, or with
/// `*.example.com` any name below `example.com` (not `example.com` itself).
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    Subdomains(String),
}

impl HostPattern {
    fn parse(pattern: &str) -> Result<Self, String> {
        let p = pattern.trim_end_matches('.').to_ascii_lowercase();
        let (wild, name) = match p.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, p),
        };
        let valid = !name.is_empty()
            && name.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
            });
        if !valid {
            return Err(format!("{pattern:?} is not a host name or *.domain"));
        }
        Ok(if wild {
            HostPattern::Subdomains(name)
        } else {
            HostPattern::Exact(name)
        })
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(h) => h == host,
            HostPattern::Subdomains(d) => host
                .strip_suffix(d.as_str())
                .is_some_and(|prefix| prefix.len() > 1 && prefix.ends_with('.')),
        }
    }
}

/// Idle connections kept per provider host: enough for every call that may
/// run at once to find one.
const IDLE_CONNECTIONS: usize = 512;

/// The rules one adapter's requests are held to, and its connection pool.
#[derive(Clone)]
pub(crate) struct HttpPolicy {
    allowed: Vec<HostPattern>,
    timeout: Duration,
    max_response_bytes: usize,
    /// Test-only: also reach loopback and private addresses.
    allow_private: bool,
    /// Kept connections; new ones are resolved by [`CheckedResolver`].
    client: reqwest::Client,
    /// Answers admitted requests instead of the network (never in the service).
    stand_in: Option<Arc<dyn ProviderStandIn>>,
}

impl std::fmt::Debug for HttpPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPolicy")
            .field("allowed", &self.allowed)
            .field("timeout", &self.timeout)
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

/// Where outbound requests may go beyond the allow-list's public hosts.
/// All are off by default, and none is for production: they exist so
/// tests can point an adapter at a local stand-in of its provider.
#[derive(Clone, Default)]
pub struct NetworkOverrides {
    /// Also reach loopback, private and other non-public addresses.
    pub allow_private: bool,
    /// PEM certificates trusted on top of the public roots.
    pub extra_roots_pem: Option<Vec<u8>>,
    /// Answers every request the host admits (https, allowed host, no `Host` header, within
    /// the deadline) in place of the network: `courier adapter certify` replays recorded
    /// provider exchanges through it.
    pub stand_in: Option<Arc<dyn ProviderStandIn>>,
}

impl std::fmt::Debug for NetworkOverrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkOverrides")
            .field("allow_private", &self.allow_private)
            .field("extra_roots_pem", &self.extra_roots_pem.is_some())
            .field("stand_in", &self.stand_in.is_some())
            .finish()
    }
}

/// A provider answering in-process, in place of the network.
#[async_trait::async_trait]
pub trait ProviderStandIn: Send + Sync {
    /// The answer to `request`. `answer_by` is what is left of the call's deadline and the
    /// request's own timeout: the host answers [`HttpFailure::Timeout`] for a stand-in that
    /// has not answered by then, and still refuses a body larger than it accepts.
    async fn answer(
        &self,
        request: &HttpRequest,
        answer_by: Instant,
    ) -> Result<HttpResponse, HttpFailure>;
}

impl HttpPolicy {
    pub(crate) fn new(
        allowed_hosts: &[String],
        timeout: Duration,
        max_response_bytes: usize,
        overrides: &NetworkOverrides,
    ) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // The allow-list and the address rule are the only way out: no proxy from the
            // environment steps around them.
            .no_proxy()
            .pool_max_idle_per_host(IDLE_CONNECTIONS)
            .use_preconfigured_tls(tls_config(overrides.extra_roots_pem.as_deref())?)
            .dns_resolver(Arc::new(CheckedResolver {
                allow_private: overrides.allow_private,
            }))
            .build()
            .map_err(|e| format!("the HTTP client: {e}"))?;
        Ok(HttpPolicy {
            allowed: allowed_hosts
                .iter()
                .map(|h| HostPattern::parse(h))
                .collect::<Result<_, _>>()?,
            timeout,
            max_response_bytes,
            allow_private: overrides.allow_private,
            client,
            stand_in: overrides.stand_in.clone(),
        })
    }

    /// Checks a URL against the allow-list, and an address written in it against the
    /// address rule (a name's addresses are checked when a connection is made to them).
    pub(crate) fn admit(&self, url: &str) -> Result<Url, HttpFailure> {
        let forbidden = |why: String| Err(HttpFailure::Forbidden(why));
        let Ok(parsed) = Url::parse(url) else {
            return forbidden(format!("{url:?} is not an absolute URL"));
        };
        if parsed.scheme() != "https" {
            return forbidden("only https is allowed".into());
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return forbidden("credentials in the URL are not allowed".into());
        }
        let (name, address) = match parsed.host() {
            Some(Host::Domain(d)) => (d.trim_end_matches('.').to_ascii_lowercase(), None),
            Some(Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
            Some(Host::Ipv6(ip)) => (format!("[{ip}]"), Some(IpAddr::V6(ip))),
            None => return forbidden("the URL has no host".into()),
        };
        if !self.allowed.iter().any(|p| p.matches(&name)) {
            return forbidden(format!("{name} is not in the adapter's allowed hosts"));
        }
        // An address in the URL is connected to without a lookup, so it is checked here.
        if let Some(ip) = address.filter(|ip| !self.allow_private && !is_public(*ip)) {
            return forbidden(format!("{ip} is not a public address"));
        }
        Ok(parsed)
    }

    /// Sends a request within its own timeout and what is left until
    /// `deadline` (the lookup, the connection and the whole answer), on a kept
    /// connection when there is one.
    pub(crate) async fn send(
        &self,
        request: HttpRequest,
        deadline: Instant,
    ) -> Result<HttpResponse, HttpFailure> {
        let url = self.admit(&request.url)?;
        for (name, _) in &request.headers {
            // Host decides which site a shared address serves; letting the
            // adapter set it would step around the allow-list.
            if name.eq_ignore_ascii_case("host") {
                return Err(HttpFailure::Forbidden(
                    "the Host header is set by the host".into(),
                ));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HttpFailure::Timeout);
        }
        let limit = self.timeout.min(left);
        if let Some(stand_in) = &self.stand_in {
            let answer_by = Instant::now() + limit;
            let answer = tokio::time::timeout(limit, stand_in.answer(&request, answer_by))
                .await
                .map_err(|_| HttpFailure::Timeout)??;
            if answer.body.len() > self.max_response_bytes {
                return Err(HttpFailure::TooLarge);
            }
            return Ok(answer);
        }
        // One timer for the whole exchange, the body's reading included.
        tokio::time::timeout(limit, self.exchange(request, url))
            .await
            .map_err(|_| HttpFailure::Timeout)?
    }

    async fn exchange(&self, request: HttpRequest, url: Url) -> Result<HttpResponse, HttpFailure> {
        let method = reqwest::Method::from_bytes(request.method.as_str().as_bytes())
            .map_err(|e| HttpFailure::Forbidden(e.to_string()))?;
        let mut builder = self.client.request(method, url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let sent = builder
            .body(request.body)
            .build()
            .map_err(|e| HttpFailure::Forbidden(format!("not a valid request: {}", chain(&e))))?;
        let mut response = self.client.execute(sent).await.map_err(failure)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        if response
            .content_length()
            .is_some_and(|n| n > u64::try_from(self.max_response_bytes).unwrap_or(u64::MAX))
        {
            return Err(HttpFailure::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failure)? {
            if body.len() + chunk.len() > self.max_response_bytes {
                return Err(HttpFailure::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }
}

/// What a failed exchange was, to the adapter: a refused address is forbidden, the rest are
/// the connection's.
fn failure(e: reqwest::Error) -> HttpFailure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(error) = source {
        if let Some(refused) = error.downcast_ref::<NotPublic>() {
            return HttpFailure::Forbidden(refused.0.clone());
        }
        source = error.source();
    }
    if e.is_timeout() {
        return HttpFailure::Timeout;
    }
    HttpFailure::Connection(chain(&e))
}

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A name that resolved to an address the adapter may not reach.
#[derive(Debug)]
struct NotPublic(String);

impl std::fmt::Display for NotPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotPublic {}

/// Resolves the host of each new connection and refuses any that is not a
/// public address, unless the test-only switch allows private ones. The
/// connection then goes to exactly these addresses. The lookup is within the
/// request's timer, like the rest of the exchange.
struct CheckedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| format!("cannot resolve {host}: {e}"))?
                .collect();
            if addrs.is_empty() {
                return Err(format!("{host} has no addresses").into());
            }
            if let Some(bad) = addrs.iter().find(|a| !allow_private && !is_public(a.ip())) {
                return Err(Box::new(NotPublic(format!(
                    "{host} resolves to {}, which is not a public address",
                    bad.ip()
                )))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// TLS with the public web roots, and `extra_pem`'s certificates if given.
fn tls_config(extra_pem: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(pem) = extra_pem {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("extra CA certificates: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("extra CA certificates: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("extra CA certificates: no certificate in the PEM".into());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exchange_shows_no_secret_setting_and_no_credential() {
        let host = AdapterHost {
            http: None,
            config: [
                ("secret_key".to_owned(), "sk_live_abcdef".to_owned()),
                ("api_base".to_owned(), "https://api.example.com".to_owned()),
                ("webhook_hmac".to_owned(), "00ff00ff".to_owned()),
            ]
            .into(),
            exchanges: Some(Default::default()),
            logged: None,
        };
        let request = HttpRequest {
            method: Method::Post,
            url: "https://api.example.com/v1/x?key=sk_live_abcdef".to_owned(),
            headers: vec![
                (
                    "Authorization".to_owned(),
                    "Bearer sk_live_abcdef".to_owned(),
                ),
                ("Idempotency-Key".to_owned(), "job_1_hold".to_owned()),
            ],
            body: b"signed=00ff00ff&amount=100".to_vec(),
        };
        let answer = Ok(HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: vec![b'a'; EXCERPT_BYTES + 10],
        });
        host.note(&request, &answer, Duration::from_millis(12));
        let kept = host.exchanges.as_ref().unwrap().lock().unwrap();
        assert_eq!(
            kept[0].response_body.len(),
            EXCERPT_BYTES + 10,
            "kept whole"
        );
        let exchange = &kept[0].clone().excerpted();
        assert_eq!(exchange.url, "https://api.example.com/v1/x?key=****");
        assert_eq!(
            exchange.request_headers,
            [
                ("Authorization".to_owned(), "Bearer ****".to_owned()),
                ("Idempotency-Key".to_owned(), "job_1_hold".to_owned()),
            ]
        );
        assert_eq!(exchange.request_body, "signed=****&amount=100");
        assert_eq!(exchange.status, Some(200));
        assert!(
            exchange
                .response_body
                .ends_with(&format!("({} bytes in all)", EXCERPT_BYTES + 10))
        );
        assert_eq!(exchange.millis, 12);
    }

    fn policy(hosts: &[&str]) -> HttpPolicy {
        let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        HttpPolicy::new(
            &hosts,
            Duration::from_secs(1),
            1024,
            &NetworkOverrides::default(),
        )
        .unwrap()
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    fn get(url: &str) -> HttpRequest {
        HttpRequest {
            method: Method::Get,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Why sending a GET to `url` was refused (it must be).
    async fn forbidden(p: &HttpPolicy, url: &str) -> String {
        match p.send(get(url), soon()).await {
            Err(HttpFailure::Forbidden(why)) => why,
            Err(other) => panic!("{url}: expected forbidden, got {other:?}"),
            Ok(r) => panic!("{url}: expected forbidden, got {}", r.status),
        }
    }

    #[test]
    fn patterns_match_exact_names_and_subdomains_only() {
        let p = HostPattern::parse("*.Pay.Example.").unwrap();
        assert!(p.matches("api.pay.example"));
        assert!(p.matches("a.b.pay.example"));
        assert!(!p.matches("pay.example"));
        assert!(!p.matches("evilpay.example"));
        let e = HostPattern::parse("api.pay.example").unwrap();
        assert!(e.matches("api.pay.example"));
        assert!(!e.matches("x.api.pay.example"));
        assert!(HostPattern::parse("https://x").is_err());
        assert!(HostPattern::parse("").is_err());
    }

    #[tokio::test]
    async fn only_https_to_allowed_hosts() {
        let p = policy(&["api.pay.example"]);
        assert!(
            forbidden(&p, "http://api.pay.example/x")
                .await
                .contains("https")
        );
        assert!(
            forbidden(&p, "https://other.example/x")
                .await
                .contains("not in the adapter's allowed hosts")
        );
        assert!(
            forbidden(&p, "https://user:pw@api.pay.example/")
                .await
                .contains("credentials")
        );
        assert!(forbidden(&p, "not a url").await.contains("absolute URL"));
        // A suffix trick is still another host.
        assert!(
            forbidden(&p, "https://api.pay.example.evil.example/")
                .await
                .contains("not in")
        );
    }

    #[tokio::test]
    async fn allowed_names_resolving_to_private_addresses_are_refused() {
        // `localhost` is allowed by name, but resolves to loopback.
        let p = policy(&["localhost", "10.0.0.7", "[::1]"]);
        assert!(
            forbidden(&p, "https://localhost:8443/")
                .await
                .contains("not a public address")
        );
        assert!(
            forbidden(&p, "https://10.0.0.7/")
                .await
                .contains("not a public address")
        );
        assert!(
            forbidden(&p, "https://[::1]/")
                .await
                .contains("not a public address")
        );
    }

    #[tokio::test]
    async fn the_host_header_cannot_be_set() {
        let p = policy(&["1.1.1.1"]);
        let r = p
            .send(
                HttpRequest {
                    method: Method::Get,
                    url: "https://1.1.1.1/".into(),
                    headers: vec![("Host".into(), "internal".into())],
                    body: Vec::new(),
                },
                soon(),
            )
            .await;
        assert!(matches!(r, Err(HttpFailure::Forbidden(m)) if m.contains("Host")));
    }

    #[tokio::test]
    async fn private_addresses_only_with_the_test_switch_and_never_past_the_deadline() {
        let hosts = vec!["localhost".to_string()];
        let open = NetworkOverrides {
            allow_private: true,
            ..NetworkOverrides::default()
        };
        let p = HttpPolicy::new(&hosts, Duration::from_secs(1), 1024, &open).unwrap();
        // Allowed through to the connection (refused there: nothing listens on port 1).
        let closed = p.send(get("https://localhost:1/"), soon()).await;
        assert!(
            matches!(closed, Err(HttpFailure::Connection(_))),
            "{:?}",
            closed.err()
        );
        // Nothing is sent once the call's deadline has passed.
        let late = p.send(get("https://localhost:1/"), Instant::now()).await;
        assert!(
            matches!(late, Err(HttpFailure::Timeout)),
            "{:?}",
            late.err()
        );
        let bad_pem = NetworkOverrides {
            extra_roots_pem: Some(b"not a certificate".to_vec()),
            ..NetworkOverrides::default()
        };
        assert!(HttpPolicy::new(&hosts, Duration::from_secs(1), 1024, &bad_pem).is_err());
    }

    /// Answers every request with a body of the given size, counting what reaches it.
    struct Echo {
        body_bytes: usize,
        seen: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl ProviderStandIn for Echo {
        async fn answer(
            &self,
            _request: &HttpRequest,
            _answer_by: Instant,
        ) -> Result<HttpResponse, HttpFailure> {
            self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(HttpResponse {
                status: 200,
                headers: Vec::new(),
                body: vec![b' '; self.body_bytes],
            })
        }
    }

    #[tokio::test]
    async fn a_stand_in_answers_only_what_the_host_admits_and_within_its_size_limit() {
        let echo = Arc::new(Echo {
            body_bytes: 1024,
            seen: Default::default(),
        });
        let overrides = NetworkOverrides {
            stand_in: Some(echo.clone()),
            ..NetworkOverrides::default()
        };
        let hosts = vec!["api.pay.example".to_owned()];
        let fits = HttpPolicy::new(&hosts, Duration::from_secs(1), 1024, &overrides).unwrap();
        assert_eq!(
            fits.send(get("https://api.pay.example/x"), soon())
                .await
                .unwrap()
                .status,
            200
        );
        assert!(
            forbidden(&fits, "http://api.pay.example/x")
                .await
                .contains("https")
        );
        assert!(
            forbidden(&fits, "https://other.example/x")
                .await
                .contains("not in")
        );
        let smaller = HttpPolicy::new(&hosts, Duration::from_secs(1), 1023, &overrides).unwrap();
        assert!(matches!(
            smaller.send(get("https://api.pay.example/x"), soon()).await,
            Err(HttpFailure::TooLarge)
        ));
        assert_eq!(echo.seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
