//! Operator bearer tokens: `COURIER_ADMIN_TOKEN` (operator "admin") and the named
//! `COURIER_OPERATOR_TOKENS`. The name of the matching token is who the audit trail records.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::AuthError;
use super::failures::AddressBudget;

/// The operator behind an admin request, for the records.
#[derive(Clone, Debug)]
pub struct Operator {
    pub name: String,
}

/// The operator name `COURIER_ADMIN_TOKEN` stands for.
pub const ADMIN_OPERATOR: &str = "admin";

/// The accepted tokens, kept as SHA-256 digests so every comparison is of equal length, and
/// the failed sign-ins of each client address.
pub struct OperatorTokens {
    tokens: Vec<(String, [u8; 32])>,
    failures: AddressBudget,
}

/// Why an operator request was turned away.
#[derive(Debug, PartialEq, Eq)]
pub enum OperatorRefusal {
    /// No token, a malformed header, or a token nobody has.
    Credentials(AuthError),
    /// The client address used up its failed sign-ins; it may try again after this long.
    TooManyFailures(Duration),
}

/// One named operator token; the name is what the audit trail records.
#[derive(Clone)]
pub struct OperatorToken {
    pub name: String,
    pub token: String,
}

impl std::fmt::Debug for OperatorToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorToken")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl OperatorTokens {
    /// `admin` stands for [`ADMIN_OPERATOR`]; `failures` counts each client address's failed
    /// sign-ins.
    pub fn new(admin: Option<&str>, named: &[OperatorToken], failures: AddressBudget) -> Self {
        let admin = admin.map(|token| (ADMIN_OPERATOR.to_owned(), digest(token)));
        let named = named.iter().map(|t| (t.name.clone(), digest(&t.token)));
        Self {
            tokens: admin.into_iter().chain(named).collect(),
            failures,
        }
    }

    /// [`check`](Self::check), for a request from `client`: an address that used up its
    /// failed sign-ins is turned away before its token is looked at, the right one included,
    /// so guessing stays slow; each failure counts.
    pub fn check_from(
        &self,
        header: Option<&[u8]>,
        client: IpAddr,
    ) -> Result<Operator, OperatorRefusal> {
        let now = Instant::now();
        if let Some(wait) = self.failures.wait(client, now) {
            return Err(OperatorRefusal::TooManyFailures(wait));
        }
        self.check(header).map_err(|refusal| {
            self.failures.spend(client, now);
            OperatorRefusal::Credentials(refusal)
        })
    }

    /// The operator a `Bearer` header value names. Every token is compared, in constant time,
    /// so timing tells nothing about which (if any) was close.
    pub fn check(&self, header: Option<&[u8]>) -> Result<Operator, AuthError> {
        let presented = digest(bearer_token(header)?);
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

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer_token(header: Option<&[u8]>) -> Result<&str, AuthError> {
    let header = header.ok_or(AuthError::Missing)?;
    let header = std::str::from_utf8(header).map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

/// Whether `presented` is `expected`, compared as digests in constant time.
pub fn same_token(presented: &str, expected: &str) -> bool {
    digest(presented).ct_eq(&digest(expected)).into()
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(admin: Option<&str>, named: &[(&str, &str)]) -> OperatorTokens {
        let named: Vec<OperatorToken> = named
            .iter()
            .map(|(name, token)| OperatorToken {
                name: (*name).to_owned(),
                token: (*token).to_owned(),
            })
            .collect();
        OperatorTokens::new(
            admin,
            &named,
            AddressBudget::new(10, Duration::from_secs(60)),
        )
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
    fn an_address_that_fails_too_often_waits_for_the_window_to_end() {
        let tokens = tokens(Some("s3cret"), &[]);
        let (client, other): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..10 {
            assert_eq!(
                tokens
                    .check_from(Some(b"Bearer guess"), client)
                    .unwrap_err(),
                OperatorRefusal::Credentials(AuthError::Invalid)
            );
        }
        // The eleventh attempt is turned away, the right token included.
        assert!(matches!(
            tokens.check_from(Some(b"Bearer s3cret"), client),
            Err(OperatorRefusal::TooManyFailures(wait)) if wait <= Duration::from_secs(60)
        ));
        // Other addresses are not held back.
        assert_eq!(
            tokens
                .check_from(Some(b"Bearer s3cret"), other)
                .unwrap()
                .name,
            "admin"
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
