//! Passwords, hashed with Argon2id (the `argon2` crate's defaults: 19 MiB, two passes, one
//! lane, as OWASP recommends), on a blocking thread so a hash never holds up other requests.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rand::RngCore;

/// The PHC string of `password`'s hash, with a fresh salt.
pub async fn hash(password: &str) -> String {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .expect("hashing does not panic")
}

fn hash_now(password: &str) -> String {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).expect("16 bytes make a salt");
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("a password of bounded length hashes")
        .to_string()
}

/// Whether `password` is the one `stored` (a PHC string) was made from. With no stored hash
/// (no such person) a hash is still checked, so an unknown address takes as long to refuse as
/// a wrong password.
pub async fn verify(stored: Option<&str>, password: &str) -> bool {
    let known = stored.is_some();
    let stored = stored.map_or_else(|| decoy().to_owned(), str::to_owned);
    let password = password.to_owned();
    let matches = tokio::task::spawn_blocking(move || {
        PasswordHash::new(&stored).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false);
    known && matches
}

/// A hash of nothing anyone can type, checked in place of an unknown person's.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash_now(&uuid::Uuid::new_v4().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let stored = hash("correct horse battery").await;
        assert!(stored.starts_with("$argon2id$v=19$"), "{stored}");
        assert!(verify(Some(&stored), "correct horse battery").await);
        assert!(!verify(Some(&stored), "correct horse batterY").await);
        assert!(!verify(None, "correct horse battery").await);
        assert!(!verify(Some("not a hash"), "correct horse battery").await);
        // Salted: the same password hashes differently each time.
        assert_ne!(stored, hash("correct horse battery").await);
    }
}
