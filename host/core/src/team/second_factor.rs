//! The second factor: TOTP (RFC 6238: HMAC-SHA1, six digits, 30-second steps, one step of
//! clock drift either way, as authenticator apps use), each code accepted once; and recovery
//! codes, ten at a time, each used once.

use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use totp_rs::{Algorithm, TOTP};
use uuid::Uuid;

/// Bytes of a TOTP secret: 160 bits, as RFC 4226 recommends.
const SECRET_BYTES: usize = 20;
const STEP_SECS: u64 = 30;
const DIGITS: usize = 6;
/// Recovery codes made at a time.
pub const RECOVERY_CODES: usize = 10;
/// Who the authenticator app says the code is for.
const ISSUER: &str = "Courier";

/// A fresh TOTP secret.
pub fn new_secret() -> Vec<u8> {
    let mut secret = vec![0u8; SECRET_BYTES];
    rand::fill(&mut secret[..]);
    secret
}

fn totp(secret: &[u8], email: &str) -> Option<TOTP> {
    TOTP::new(
        Algorithm::SHA1,
        DIGITS,
        1,
        STEP_SECS,
        secret.to_vec(),
        Some(ISSUER.to_owned()),
        email.to_owned(),
    )
    .ok()
}

/// What an authenticator app is given: the secret in base32 (typed) and the `otpauth://` URL
/// (scanned from the QR code).
pub struct Enrolment {
    pub secret_base32: String,
    pub otpauth_url: String,
}

/// The enrolment of `secret` for the person at `email`.
pub fn enrolment(secret: &[u8], email: &str) -> Option<Enrolment> {
    let totp = totp(secret, email)?;
    Some(Enrolment {
        secret_base32: totp.get_secret_base32(),
        otpauth_url: totp.get_url(),
    })
}

/// The time step of `code` for `secret` at `now_secs` (the step before, this one or the one
/// after), when it is one later than `last_step` (a code is used once); None otherwise.
pub fn matching_step(
    secret: &[u8],
    code: &str,
    now_secs: u64,
    last_step: Option<i64>,
) -> Option<i64> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != DIGITS || !code.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let totp = totp(secret, "")?;
    let now_step = now_secs / STEP_SECS;
    [now_step.saturating_sub(1), now_step, now_step + 1]
        .into_iter()
        .filter(|step| i64::try_from(*step).is_ok_and(|s| last_step.is_none_or(|last| s > last)))
        .find(|step| {
            let expected = totp.generate(step * STEP_SECS);
            subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), code.as_bytes()).into()
        })
        .and_then(|step| i64::try_from(step).ok())
}

/// Fresh recovery codes, `xxxxx-xxxxx` in lower-case letters and digits.
pub fn new_recovery_codes() -> Vec<String> {
    (0..RECOVERY_CODES)
        .map(|_| {
            let raw = Alphanumeric
                .sample_string(&mut rand::rng(), 10)
                .to_lowercase();
            format!("{}-{}", &raw[..5], &raw[5..])
        })
        .collect()
}

/// What is kept of `person_id`'s recovery code: its SHA-256 with the person's id, as typed
/// without spaces or case.
pub fn recovery_hash(person_id: Uuid, code: &str) -> Vec<u8> {
    let code: String = code
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_lowercase();
    let mut hasher = Sha256::new();
    hasher.update(person_id.as_bytes());
    hasher.update(code.as_bytes());
    hasher.finalize().to_vec()
}

/// Whether `code` looks like a recovery code rather than a TOTP code.
pub fn is_recovery_code(code: &str) -> bool {
    code.trim().len() == 11 && code.trim().as_bytes()[5] == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's SHA-1 key, and its test vectors cut to six digits.
    const RFC_SECRET: &[u8] = b"12345678901234567890";

    #[test]
    fn codes_are_those_of_rfc_6238() {
        for (time, code) in [
            (59, "287082"),
            (1_111_111_109, "081804"),
            (1_234_567_890, "005924"),
            (2_000_000_000, "279037"),
        ] {
            assert_eq!(
                matching_step(RFC_SECRET, code, time, None),
                Some(i64::try_from(time / 30).unwrap()),
                "{time}"
            );
        }
    }

    #[test]
    fn a_step_of_drift_either_way_and_no_more() {
        let totp = totp(RFC_SECRET, "").unwrap();
        let code = totp.generate(1_000_020);
        assert!(matching_step(RFC_SECRET, &code, 1_000_020 + 30, None).is_some());
        assert!(matching_step(RFC_SECRET, &code, 1_000_020 - 30, None).is_some());
        assert!(matching_step(RFC_SECRET, &code, 1_000_020 + 90, None).is_none());
    }

    #[test]
    fn a_code_is_used_once_and_must_look_like_one() {
        let step = matching_step(RFC_SECRET, "287082", 59, None).unwrap();
        assert_eq!(matching_step(RFC_SECRET, "287082", 59, Some(step)), None);
        assert_eq!(matching_step(RFC_SECRET, "287 082", 59, None), Some(step));
        assert_eq!(matching_step(RFC_SECRET, "28708", 59, None), None);
        assert_eq!(matching_step(RFC_SECRET, "28708a", 59, None), None);
        assert_eq!(matching_step(RFC_SECRET, "000000", 59, None), None);
    }

    #[test]
    fn recovery_codes_are_ten_distinct_and_kept_only_hashed() {
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        assert!(codes.iter().all(|c| is_recovery_code(c)));
        let distinct: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(distinct.len(), RECOVERY_CODES);
        let person = Uuid::new_v4();
        let typed = codes[0].to_uppercase();
        assert_eq!(
            recovery_hash(person, &typed),
            recovery_hash(person, &codes[0])
        );
        assert_ne!(
            recovery_hash(Uuid::new_v4(), &codes[0]),
            recovery_hash(person, &codes[0])
        );
        assert!(!is_recovery_code("287082"));
    }

    #[test]
    fn the_enrolment_names_the_service_and_the_person() {
        let enrolment = enrolment(&new_secret(), "ana@shop.example").unwrap();
        assert!(
            enrolment
                .otpauth_url
                .starts_with("otpauth://totp/Courier:ana%40shop.example?")
        );
        assert!(enrolment.otpauth_url.contains("issuer=Courier"));
        assert_eq!(enrolment.secret_base32.len(), 32);
    }
}
