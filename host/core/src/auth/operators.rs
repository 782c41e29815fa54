//! Operator bearer tokens: `COURIER_ADMIN_TOKEN` (operator "admin") and the named
//! `COURIER_OPERATOR_TOKENS`. The name of the matching token is who the audit trail records.

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::AuthError;
use crate::config::Config;

/// The operator behind an admin request, for the records.
#[derive(Clone, Debug)]
pub struct Operator {
    pub name: String,
}

/// The operator name `COURIER_ADMIN_TOKEN` stands for.
pub const ADMIN_OPERATOR: &str = "admin";

/// The accepted tokens, kept as SHA-256 digests so every comparison is of equal length.
pub struct OperatorTokens {
    tokens: Vec<(String, [u8; 32])>,
}

impl OperatorTokens {
    pub fn from_config(config: &Config) -> Self {
        let admin = config
            .admin_token
            .iter()
            .map(|token| (ADMIN_OPERATOR.to_owned(), digest(token)));
        let named = config
            .operator_tokens
            .iter()
            .map(|t| (t.name.clone(), digest(&t.token)));
        Self {
            tokens: admin.chain(named).collect(),
        }
    }

    /// The operator a `Bearer` header value names. Every token is compared, in constant time,
    /// so timing tells nothing about which (if any) was close.
    pub fn check(&self, header: Option<&[u8]>) -> Result<Operator, AuthError> {
        let header = header.ok_or(AuthError::Missing)?;
        let header = std::str::from_utf8(header).map_err(|_| AuthError::Malformed)?;
        let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Malformed)?;
        if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
            return Err(AuthError::Malformed);
        }
        let presented = digest(token.trim());
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (position, (_, expected)) in self.tokens.iter().enumerate() {
            let matches = expected.ct_eq(&presented);
            index = u32::conditional_select(&index, &(position as u32), matches);
            found |= matches;
        }
        if bool::from(found) {
            Ok(Operator {
                name: self.tokens[index as usize].0.clone(),
            })
        } else {
            Err(AuthError::Invalid)
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OperatorToken;

    fn tokens(admin: Option<&str>, named: &[(&str, &str)]) -> OperatorTokens {
        let mut config = Config::from_lookup(|_| None).unwrap();
        config.admin_token = admin.map(str::to_owned);
        config.operator_tokens = named
            .iter()
            .map(|(name, token)| OperatorToken {
                name: (*name).to_owned(),
                token: (*token).to_owned(),
            })
            .collect();
        OperatorTokens::from_config(&config)
    }

    #[test]
    fn the_configured_bearer_token_is_required() {
        let tokens = tokens(Some("s3cret"), &[]);
        assert_eq!(tokens.check(Some(b"Bearer s3cret")).unwrap().name, "admin");
        assert_eq!(tokens.check(None).unwrap_err(), AuthError::Missing);
        assert_eq!(
            tokens.check(Some(b"Basic s3cret")).unwrap_err(),
            AuthError::Malformed
        );
        assert_eq!(
            tokens.check(Some(b"Bearer s3cre")).unwrap_err(),
            AuthError::Invalid
        );
    }

    #[test]
    fn named_tokens_name_their_operator() {
        let tokens = tokens(Some("root-token"), &[("alice", "tok1"), ("bob", "tok2")]);
        assert_eq!(tokens.check(Some(b"Bearer tok1")).unwrap().name, "alice");
        assert_eq!(tokens.check(Some(b"bearer tok2")).unwrap().name, "bob");
        assert_eq!(
            tokens.check(Some(b"Bearer root-token")).unwrap().name,
            "admin"
        );
        assert_eq!(
            tokens.check(Some(b"Bearer tok3")).unwrap_err(),
            AuthError::Invalid
        );
    }

    #[test]
    fn with_no_token_configured_the_api_is_closed() {
        let tokens = tokens(None, &[]);
        assert_eq!(
            tokens.check(Some(b"Bearer x")).unwrap_err(),
            AuthError::Invalid
        );
    }
}
