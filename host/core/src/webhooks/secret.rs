//! Signing secrets: generated with high entropy, shown once, kept only encrypted.

use thiserror::Error;
use uuid::Uuid;

use crate::infra::secrets::{Sealer, SecretKey};

/// Subkey label: a leaked ciphertext cannot be opened with any other derived key.
const PURPOSE: &str = "webhook-signing-secrets";

#[derive(Debug, Error)]
#[error("a stored signing secret cannot be decrypted (wrong COURIER_SECRET_KEY?)")]
pub struct UndecryptableSecret;

/// A fresh signing secret: `whsec_` and 32 random bytes in hex. Receivers use the whole string
/// as the HMAC key.
pub fn generate() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("whsec_{}", hex::encode(bytes))
}

/// Encrypts and decrypts signing secrets with a key derived from the service's secret key.
#[derive(Clone, Debug)]
pub struct SecretCipher {
    sealer: Sealer,
}

impl SecretCipher {
    pub fn new(key: &SecretKey) -> Self {
        Self {
            sealer: Sealer::new(key, PURPOSE),
        }
    }

    /// Nonce then ciphertext. The endpoint id is authenticated with it, so a ciphertext copied
    /// to another endpoint's row does not decrypt.
    pub fn seal(&self, endpoint_id: Uuid, secret: &str) -> Vec<u8> {
        self.sealer.seal(endpoint_id.as_bytes(), secret.as_bytes())
    }

    pub fn open(&self, endpoint_id: Uuid, sealed: &[u8]) -> Result<String, UndecryptableSecret> {
        let plain = self
            .sealer
            .open(endpoint_id.as_bytes(), sealed)
            .ok_or(UndecryptableSecret)?;
        String::from_utf8(plain).map_err(|_| UndecryptableSecret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(byte: &str) -> SecretCipher {
        SecretCipher::new(&SecretKey::from_hex(&byte.repeat(32)).unwrap())
    }

    #[test]
    fn secrets_are_long_and_distinct() {
        let (a, b) = (generate(), generate());
        assert_ne!(a, b);
        assert_eq!(a.len(), "whsec_".len() + 64);
    }

    #[test]
    fn sealed_secrets_open_only_with_the_same_key_and_endpoint() {
        let id = Uuid::new_v4();
        let sealed = cipher("ab").seal(id, "whsec_x");
        assert!(!sealed.windows(7).any(|w| w == b"whsec_x"));
        assert_eq!(cipher("ab").open(id, &sealed).unwrap(), "whsec_x");
        assert!(cipher("cd").open(id, &sealed).is_err());
        assert!(cipher("ab").open(Uuid::new_v4(), &sealed).is_err());
        assert!(cipher("ab").open(id, &sealed[..10]).is_err());
    }
}
