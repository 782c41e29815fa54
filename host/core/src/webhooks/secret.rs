//! Signing secrets: generated with high entropy, shown once, kept only encrypted.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use thiserror::Error;
use uuid::Uuid;

use crate::infra::secrets::SecretKey;

const NONCE_BYTES: usize = 24;
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
#[derive(Clone)]
pub struct SecretCipher {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SecretCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretCipher(..)")
    }
}

impl SecretCipher {
    pub fn new(key: &SecretKey) -> Self {
        let subkey = key.derive(PURPOSE);
        Self {
            cipher: XChaCha20Poly1305::new(&subkey.into()),
        }
    }

    /// Nonce then ciphertext. The endpoint id is authenticated with it, so a ciphertext copied
    /// to another endpoint's row does not decrypt.
    pub fn seal(&self, endpoint_id: Uuid, secret: &str) -> Vec<u8> {
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let payload = Payload {
            msg: secret.as_bytes(),
            aad: endpoint_id.as_bytes(),
        };
        let ciphertext = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), payload)
            .expect("encryption with a valid key cannot fail");
        let mut sealed = nonce.to_vec();
        sealed.extend(ciphertext);
        sealed
    }

    pub fn open(&self, endpoint_id: Uuid, sealed: &[u8]) -> Result<String, UndecryptableSecret> {
        if sealed.len() < NONCE_BYTES {
            return Err(UndecryptableSecret);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_BYTES);
        let payload = Payload {
            msg: ciphertext,
            aad: endpoint_id.as_bytes(),
        };
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), payload)
            .map_err(|_| UndecryptableSecret)?;
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
