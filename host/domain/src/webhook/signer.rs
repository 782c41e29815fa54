//! `Courier-Signature: t=<unix>,v1=<hex>`: HMAC-SHA256 over `{t}.{body}` with the endpoint's
//! signing secret (spec section 6).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header value for `body` sent at `timestamp` (Unix seconds).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    signature_with(&[secret], timestamp, body)
}

/// The header value signed by each of `secrets` in turn: one `v1` entry per secret, in their
/// order (the current secret first, then a rotated-away one during its overlap). A receiver
/// accepts the request when any `v1` entry matches its secret.
pub fn signature_with<S: AsRef<str>>(secrets: &[S], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&hex::encode(digest(secret.as_ref(), timestamp, body)));
    }
    header
}

fn digest(secret: &str, timestamp: i64, body: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_independent_computation() {
        // Python's `hmac.new(b"whsec_k", b'1700000000.{"a":1}', hashlib.sha256).hexdigest()`.
        let header = signature("whsec_k", 1_700_000_000, br#"{"a":1}"#);
        assert_eq!(
            header,
            "t=1700000000,v1=a252a4340d8bbbdbac8643a2812cc7d628ad79bfba544bff054ac2fa10f795a2"
        );
    }

    #[test]
    fn each_secret_adds_a_v1_entry_in_order() {
        let both = signature_with(&["whsec_new", "whsec_old"], 1_700_000_000, b"{}");
        let new = signature("whsec_new", 1_700_000_000, b"{}");
        let old = signature("whsec_old", 1_700_000_000, b"{}");
        let entry = |header: &str| header.split_once(",v1=").unwrap().1.to_owned();
        assert_eq!(both, format!("{new},v1={}", entry(&old)));
    }

    #[test]
    fn depends_on_secret_time_and_body() {
        let base = signature("s", 1, b"x");
        assert_ne!(base, signature("t", 1, b"x"));
        assert_ne!(base, signature("s", 2, b"x"));
        assert_ne!(base, signature("s", 1, b"y"));
    }
}
