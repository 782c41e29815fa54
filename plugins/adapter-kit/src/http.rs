//! A request to the provider and its answer, and the way out: the host's `outbound-http` in
//! the component (only to the hosts `describe` declares), a script of answers in unit tests.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

/// One request, before the host sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// `https://…`, on a host `describe` declared.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Sends a request: the host's `outbound-http` (or a test's script of answers).
pub trait Transport {
    /// `Err` with a description when nothing usable came back (timeout, connection or TLS
    /// failure, an oversize body, or a refusal by the host): nothing is known to have
    /// happened.
    fn send(&self, request: Request) -> Result<Response, String>;
}

/// The host (and port) of an `https://` API base: what `describe` declares.
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

/// The origin (`https://host[:port]`) of an `https://` URL, as a page's
/// Content-Security-Policy names it; `None` for anything else.
pub fn origin_of(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let plain = authority
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'));
    if authority.is_empty() || authority.starts_with(':') || !plain {
        return None;
    }
    Some(format!("https://{}", authority.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_base_names_one_host_and_only_over_https() {
        assert_eq!(host_of("https://localhost:8443/").unwrap(), "localhost");
        assert_eq!(host_of("https://API.stripe.com").unwrap(), "api.stripe.com");
        assert!(host_of("https://user@evil.example").is_err());
        assert!(
            host_of("http://api.stripe.com")
                .unwrap_err()
                .contains("https")
        );
        assert!(host_of("https://").is_err());
    }

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        assert_eq!(
            origin_of("https://JS.stripe.com/v3/").as_deref(),
            Some("https://js.stripe.com")
        );
        assert_eq!(
            origin_of("https://localhost:8443/x?y").as_deref(),
            Some("https://localhost:8443")
        );
        assert_eq!(origin_of("http://js.stripe.com/"), None);
        assert_eq!(origin_of("https://a b/"), None);
    }
}
