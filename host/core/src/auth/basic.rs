//! Parsing of the `Authorization: Basic …` header.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

#[derive(Debug, PartialEq, Eq)]
pub struct BasicCredentials {
    pub key: String,
    pub secret: String,
}

/// Parses a Basic `Authorization` header value into key and secret; None when it is not
/// Basic `key:secret`.
pub fn parse_basic(header: &[u8]) -> Option<BasicCredentials> {
    let header = std::str::from_utf8(header).ok()?;
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (key, secret) = decoded.split_once(':')?;
    if key.is_empty() || secret.is_empty() {
        return None;
    }
    Some(BasicCredentials {
        key: key.to_owned(),
        secret: secret.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(raw: &str) -> String {
        format!("Basic {}", STANDARD.encode(raw))
    }

    #[test]
    fn splits_key_and_secret_at_the_first_colon() {
        let parsed = parse_basic(header("ck_test_a:se:cret").as_bytes()).unwrap();
        assert_eq!(parsed.key, "ck_test_a");
        assert_eq!(parsed.secret, "se:cret");
        assert!(parse_basic(format!("basic {}", STANDARD.encode("k:s")).as_bytes()).is_some());
    }

    #[test]
    fn refuses_what_is_not_basic_key_and_secret() {
        for bad in [
            "Bearer abc".to_owned(),
            "Basic".to_owned(),
            "Basic !!!notbase64".to_owned(),
            header("no-colon"),
            header(":secret"),
            header("key:"),
        ] {
            assert_eq!(parse_basic(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(parse_basic(&[0xff, 0xfe]), None);
    }
}
