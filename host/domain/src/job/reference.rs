//! Human job references: short, unambiguous read aloud, unique.

use rand::Rng;

/// No 0/O, 1/I/L, U (which reads as V), 5/S: characters that are easy to mishear or misread.
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRTVWXYZ2346789";

/// e.g. `CR-7KQ4-93XA`: 8 characters from a 28-letter alphabet (3.8 × 10¹¹ references).
pub fn new_reference() -> String {
    let mut rng = rand::rng();
    let mut pick = || ALPHABET[rng.random_range(0..ALPHABET.len())] as char;
    let first: String = (0..4).map(|_| pick()).collect();
    let second: String = (0..4).map(|_| pick()).collect();
    format!("CR-{first}-{second}")
}

/// The reference a person typed (any case, with or without `CR`, dashes or spaces), as
/// stored; None when it cannot be one.
pub fn typed_reference(typed: &str) -> Option<String> {
    let letters: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect::<String>()
        .to_uppercase();
    let code = letters.strip_prefix("CR").unwrap_or(&letters);
    let fits = code.len() == 8 && code.bytes().all(|b| ALPHABET.contains(&b));
    fits.then(|| format!("CR-{}-{}", &code[..4], &code[4..]))
}

/// An unguessable token for the public tracking page (256 bits).
pub fn new_tracking_token() -> String {
    use base64::Engine;
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_reference_is_read_however_it_was_typed() {
        for typed in [
            "CR-7KQ4-93XA",
            "cr-7kq4-93xa",
            " 7KQ4 93XA ",
            "7kq493xa",
            "CR7KQ493XA",
        ] {
            assert_eq!(
                typed_reference(typed).as_deref(),
                Some("CR-7KQ4-93XA"),
                "{typed}"
            );
        }
        // Too short, too long, or a letter no reference has (O).
        for typed in ["7KQ4-93X", "7KQ4-93XAB", "7KQ4-93XO", "Acme Ltd", ""] {
            assert_eq!(typed_reference(typed), None, "{typed}");
        }
        let made = new_reference();
        assert_eq!(typed_reference(&made), Some(made));
    }

    #[test]
    fn references_have_the_documented_shape() {
        for _ in 0..100 {
            let reference = new_reference();
            assert_eq!(reference.len(), 12);
            assert!(reference.starts_with("CR-"));
            assert!(
                reference[3..]
                    .chars()
                    .all(|c| c == '-' || ALPHABET.contains(&(c as u8)))
            );
        }
        assert_ne!(new_reference(), new_reference());
    }

    #[test]
    fn tracking_tokens_are_long_and_url_safe() {
        let token = new_tracking_token();
        assert_eq!(token.len(), 43);
        assert!(
            token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
