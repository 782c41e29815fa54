//! `Idempotency-Key`: the caller's key that makes a request safe to send again (a booking, an
//! operator's refund, a courier's move). The same key with the same request answers the first result.

use thiserror::Error;

use courier_domain::error::{Code, ErrorCode};

pub const MISSING_KEY: Code = Code::new(
    422,
    "request.missing_idempotency_key",
    "A booking or an operator's refund without `Idempotency-Key`.",
);
pub const INVALID_KEY: Code = Code::new(
    422,
    "request.invalid_idempotency_key",
    "`Idempotency-Key` empty, longer than 255, or not visible ASCII (bookings, refunds, couriers' moves).",
);
pub const KEY_REUSED: Code = Code::new(
    409,
    "idempotency.key_reused",
    "The `Idempotency-Key` was used with a different body (for a refund: another charge or amount; for a courier's move: another move, offer or job).",
);
pub const IN_PROGRESS: Code = Code::new(
    409,
    "idempotency.in_progress",
    "The key's booking or refund is still waiting for the payment provider; send it again shortly for its answer.",
);

/// Longest accepted `Idempotency-Key`.
pub const MAX_KEY_LENGTH: usize = 255;

/// Why an `Idempotency-Key` header is not usable.
#[derive(Debug, Error, ErrorCode, PartialEq, Eq)]
pub enum KeyError {
    #[error("the Idempotency-Key header is required")]
    #[code(MISSING_KEY)]
    Missing,
    #[error("the Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} visible characters")]
    #[code(INVALID_KEY)]
    Invalid,
}

/// `Idempotency-Key`: present, 1–255 visible ASCII characters.
pub fn check_key(key: Option<&str>) -> Result<&str, KeyError> {
    let key = key.ok_or(KeyError::Missing)?;
    let visible = key.bytes().all(|b| b.is_ascii_graphic());
    if key.is_empty() || key.len() > MAX_KEY_LENGTH || !visible {
        return Err(KeyError::Invalid);
    }
    Ok(key)
}

/// The header's value as [`check_key`] takes it: a value that is not text is not usable.
pub fn header_key(value: Option<&[u8]>) -> Result<&str, KeyError> {
    let key = value
        .map(|bytes| std::str::from_utf8(bytes).map_err(|_| KeyError::Invalid))
        .transpose()?;
    check_key(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_present_visible_and_short() {
        assert_eq!(check_key(None), Err(KeyError::Missing));
        assert_eq!(check_key(Some("")), Err(KeyError::Invalid));
        assert_eq!(check_key(Some("has space")), Err(KeyError::Invalid));
        assert_eq!(check_key(Some(&"k".repeat(256))), Err(KeyError::Invalid));
        assert_eq!(check_key(Some("order-1234_ab")), Ok("order-1234_ab"));
        assert_eq!(header_key(Some(b"\xff\xfe")), Err(KeyError::Invalid));
        assert_eq!(header_key(None), Err(KeyError::Missing));
        assert_eq!(header_key(Some(b"r-1")), Ok("r-1"));
    }
}
