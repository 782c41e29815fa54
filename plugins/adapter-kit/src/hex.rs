//! Hexadecimal, as providers write secrets and signatures.

use alloc::vec::Vec;

/// The bytes `hex` spells (either case), or None when it is not an even run of hex digits.
pub fn decode(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn pairs_of_digits_in_either_case_and_nothing_else() {
        assert_eq!(decode("00ff7A"), Some(alloc::vec![0, 255, 122]));
        assert_eq!(decode(""), Some(alloc::vec![]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("+1"), None, "from_str_radix alone would take a sign");
        assert_eq!(decode("zz"), None);
    }
}
