//! The service's own secret key and what is derived from it.
//!
//! One 32-byte key from `COURIER_SECRET_KEY`, or generated once into `data_dir/secret.key`.
//! Each use gets its own subkey (HMAC of a purpose label), so one purpose can never be
//! confused with another.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;

type HmacSha256 = Hmac<Sha256>;

#[derive(Debug, Error)]
pub enum SecretKeyError {
    #[error("COURIER_SECRET_KEY must be 64 hexadecimal digits (32 bytes)")]
    Malformed,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    pub fn from_hex(hex_key: &str) -> Result<Self, SecretKeyError> {
        let bytes = hex::decode(hex_key.trim()).map_err(|_| SecretKeyError::Malformed)?;
        bytes
            .try_into()
            .map(Self)
            .map_err(|_| SecretKeyError::Malformed)
    }

    /// The configured key, or the one kept in `data_dir/secret.key` (made on first use).
    pub fn load(configured: Option<&str>, data_dir: &Path) -> Result<Self, SecretKeyError> {
        if let Some(hex_key) = configured {
            return Self::from_hex(hex_key);
        }
        let path = data_dir.join("secret.key");
        let io = |what: &str| {
            let what = format!("{what} {}", path.display());
            move |source| SecretKeyError::Io { what, source }
        };
        std::fs::create_dir_all(data_dir).map_err(io("creating the folder of"))?;
        // Written whole under a private name, then linked into place: a process starting at
        // the same moment sees either no key file or a complete one, never a partial one.
        let draft = data_dir.join(format!(
            "secret.key.{}.{:016x}.draft",
            std::process::id(),
            rand::random::<u64>()
        ));
        let key: [u8; 32] = rand::random();
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&draft)
            .map_err(io("creating"))?;
        file.write_all(hex::encode(key).as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io("writing"))?;
        let linked = std::fs::hard_link(&draft, &path);
        let _ = std::fs::remove_file(&draft);
        match linked {
            Ok(()) => Ok(Self(key)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Self::from_hex(&std::fs::read_to_string(&path).map_err(io("reading"))?)
            }
            Err(e) => Err(io("creating")(e)),
        }
    }

    /// What the database records of the key (`secret_key_fingerprint`): keyed, so it shows
    /// nothing of the key, and the same for every process with the same key.
    pub fn fingerprint(&self) -> [u8; 32] {
        self.derive("courier secret-key fingerprint v1")
    }

    /// A subkey for one purpose.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        self.mac(purpose.as_bytes())
    }

    /// HMAC-SHA256 of `message` under this key.
    pub fn mac(&self, message: &[u8]) -> [u8; 32] {
        hmac_sha256(&self.0, message)
    }
}

/// Seals small secrets kept in the database (webhook signing secrets, TOTP keys) with
/// XChaCha20-Poly1305 under a subkey of the service's secret key for one purpose; each sealed
/// value is bound to the row it belongs to (`aad`), so one copied to another row does not open.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

const NONCE_BYTES: usize = 24;

impl Sealer {
    pub fn new(key: &SecretKey, purpose: &str) -> Self {
        Self {
            cipher: chacha20poly1305::KeyInit::new(&key.derive(purpose).into()),
        }
    }

    /// A fresh nonce, then the ciphertext of `plain` bound to `aad`.
    pub fn seal(&self, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let ciphertext = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plain, aad })
            .expect("encryption with a valid key cannot fail");
        let mut sealed = nonce.to_vec();
        sealed.extend(ciphertext);
        sealed
    }

    /// What `sealed` holds, if it was sealed for `aad` with this purpose's key.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_BYTES {
            return None;
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_BYTES);
        self.cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad,
                },
            )
            .ok()
    }
}

pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_kept_and_reused() {
        let dir = std::env::temp_dir().join(format!("courier-key-{}", uuid::Uuid::new_v4()));
        let first = SecretKey::load(None, &dir).unwrap();
        let second = SecretKey::load(None, &dir).unwrap();
        assert_eq!(first.derive("x"), second.derive("x"));
        assert_ne!(first.derive("x"), first.derive("y"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn loads_racing_for_a_new_key_all_get_the_same_whole_key() {
        let dir = std::env::temp_dir().join(format!("courier-key-{}", uuid::Uuid::new_v4()));
        let loads: Vec<_> = (0..8)
            .map(|_| {
                let dir = dir.clone();
                std::thread::spawn(move || SecretKey::load(None, &dir).unwrap().derive("x"))
            })
            .collect();
        let keys: Vec<[u8; 32]> = loads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(keys.windows(2).all(|pair| pair[0] == pair[1]));
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(files, 1, "no drafts left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn configured_keys_must_be_32_bytes_of_hex() {
        assert!(SecretKey::from_hex(&"ab".repeat(32)).is_ok());
        assert!(SecretKey::from_hex("abcd").is_err());
        assert!(SecretKey::from_hex(&"zz".repeat(32)).is_err());
    }
}
