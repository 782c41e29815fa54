//! `application/x-www-form-urlencoded` bodies (the encoding Stripe's API takes for every POST),
//! and path segments made safe.

use alloc::string::String;

/// Encodes `pairs` as a form body: unreserved characters as they are,
/// space as `+`, everything else percent-encoded (keys too, so nested
/// names like `metadata[merchant]` arrive intact).
pub fn encode(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        push_encoded(&mut out, name);
        out.push('=');
        push_encoded(&mut out, value);
    }
    out
}

/// Percent-encodes one path segment (an id Stripe gave, or one the merchant
/// sent, which must not be able to change the path).
pub fn path_segment(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            push_percent(&mut out, byte);
        }
    }
    out
}

fn push_encoded(out: &mut String, text: &str) {
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => push_percent(out, byte),
        }
    }
}

fn push_percent(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(char::from(HEX[usize::from(byte >> 4)]));
    out.push(char::from(HEX[usize::from(byte & 15)]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_encode_names_and_values() {
        assert_eq!(
            encode(&[("amount", "1250"), ("metadata[merchant]", "a b&c=d/é")]),
            "amount=1250&metadata%5Bmerchant%5D=a+b%26c%3Dd%2F%C3%A9"
        );
        assert_eq!(encode(&[]), "");
    }

    #[test]
    fn path_segments_cannot_climb_or_query() {
        assert_eq!(path_segment("pm_123"), "pm_123");
        assert_eq!(path_segment("../x?y#z"), "..%2Fx%3Fy%23z");
    }
}
