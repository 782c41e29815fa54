//! Parsing of the `Authorization: Basic …` header.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::AuthError;

#[derive(Debug, PartialEq, Eq)]
pub struct BasicCredentials {
    pub key: String,
    pub secret: String,
}

/// Parses a Basic `Authorization` header value into key and secret.
pub fn parse_basic(header: &[u8]) -> Result<BasicCredentials, AuthError> {
    let header = std::str::from_utf8(header).map_err(|_| AuthError::Malformed)?;
    let (scheme, encoded) = header.trim().split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(AuthError::Malformed);
    }
    let decoded = STANDARD
        .decode(encoded.trim())
        .map_err(|_| AuthError::Malformed)?;
    let decoded = String::from_utf8(decoded).map_err(|_| AuthError::Malformed)?;
    let (key, secret) = decoded.split_once(':').ok_or(AuthError::Malformed)?;
    if key.is_empty() || secret.is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok(BasicCredentials {
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
        assert!(parse_basic(format!("basic {}", STANDARD.encode("k:s")).as_bytes()).is_ok());
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
            assert_eq!(
                parse_basic(bad.as_bytes()),
                Err(AuthError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(parse_basic(&[0xff, 0xfe]), Err(AuthError::Malformed));
    }
}
