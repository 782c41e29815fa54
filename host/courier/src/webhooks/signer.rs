//! `Courier-Signature: t=<unix>,v1=<hex>`: HMAC-SHA256 over `{t}.{body}` with the endpoint's
//! signing secret (spec section 6).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header value for `body` sent at `timestamp` (Unix seconds).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!(
        "t={timestamp},v1={}",
        hex::encode(digest(secret, timestamp, body))
    )
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
        let header = signature("whsec_k", 1_700_000_000, br#"{"a":1}"#);
        let expected = crate::secrets::hmac_sha256(b"whsec_k", br#"1700000000.{"a":1}"#);
        assert_eq!(header, format!("t=1700000000,v1={}", hex::encode(expected)));
    }

    #[test]
    fn depends_on_secret_time_and_body() {
        let base = signature("s", 1, b"x");
        assert_ne!(base, signature("t", 1, b"x"));
        assert_ne!(base, signature("s", 2, b"x"));
        assert_ne!(base, signature("s", 1, b"y"));
    }
}
