//! Spotting raw card numbers wherever they are sent, so they are refused before anything
//! stores, logs or echoes them.
//!
//! A card number is a run of 12 to 19 digits, possibly grouped by single spaces or dashes,
//! that passes the Luhn check. The only exception is the sandbox's designated test numbers
//! inside a `pm_sandbox_…` reference: those are references by design, and public.

use serde_json::Value;

const SANDBOX_PREFIX: &str = "pm_sandbox_";

/// The spec's designated sandbox numbers (never real cards).
const SANDBOX_NUMBERS: [&str; 6] = [
    "4242424242424242",
    "4000000000000002",
    "4000000000009995",
    "4000000000000069",
    "4000000000009987",
    "4000000000000119",
];

/// Whether any string, key or number anywhere in `value` holds a card number.
pub fn json_contains_card_number(value: &Value) -> bool {
    match value {
        Value::String(s) => contains_card_number(s),
        Value::Number(n) => contains_card_number(&n.to_string()),
        Value::Array(items) => items.iter().any(json_contains_card_number),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| contains_card_number(k) || json_contains_card_number(v)),
        Value::Bool(_) | Value::Null => false,
    }
}

/// Whether `text` holds a card number outside a designated sandbox reference.
pub fn contains_card_number(text: &str) -> bool {
    digit_runs(text).into_iter().any(|(start, digits)| {
        is_card_number(&digits) && !is_sandbox_reference(text, start, &digits)
    })
}

fn is_card_number(digits: &[u8]) -> bool {
    (12..=19).contains(&digits.len()) && luhn(digits)
}

fn is_sandbox_reference(text: &str, start: usize, digits: &[u8]) -> bool {
    text[..start].ends_with(SANDBOX_PREFIX)
        && SANDBOX_NUMBERS.iter().any(|n| {
            n.as_bytes()
                .iter()
                .map(|b| b - b'0')
                .eq(digits.iter().copied())
        })
}

/// Maximal runs of digits, where one space or dash may sit between two digits: each run's
/// byte offset and its digit values.
fn digit_runs(text: &str) -> Vec<(usize, Vec<u8>)> {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = Vec::new();
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() {
                digits.push(bytes[i] - b'0');
                i += 1;
            } else if matches!(bytes[i], b' ' | b'-')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
                && i > start
            {
                i += 1;
            } else {
                break;
            }
        }
        runs.push((start, digits));
    }
    runs
}

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_and_grouped_card_numbers_are_found() {
        for text in [
            "4242424242424242",
            "4242 4242 4242 4242",
            "4242-4242-4242-4242",
            "card: 4111111111111111 thanks",
            "378282246310005",
            "pm_live_4242424242424242",
            "pm_sandbox_4111111111111111",
            "4000000000000002",
        ] {
            assert!(contains_card_number(text), "{text}");
        }
    }

    #[test]
    fn other_digits_pass() {
        for text in [
            "",
            "pm_sandbox_4242424242424242",
            "pm_sandbox_4000000000000119",
            "4242424242424241",     // fails Luhn
            "42424242424",          // too short
            "42424242424242424242", // too long
            "+44 20 7946 0958",     // a phone number
            "2026-11-21T10:00:00Z",
        ] {
            assert!(!contains_card_number(text), "{text}");
        }
    }

    #[test]
    fn json_is_searched_everywhere() {
        assert!(json_contains_card_number(
            &json!({"provider_ref": "4242424242424242"})
        ));
        assert!(json_contains_card_number(
            &json!({"note": ["x", {"n": 4242424242424242_u64}]})
        ));
        assert!(json_contains_card_number(
            &json!({"4242 4242 4242 4242": true})
        ));
        assert!(!json_contains_card_number(
            &json!({"provider_ref": "pm_sandbox_4242424242424242", "make_default": true})
        ));
    }

    #[test]
    fn luhn_matches_known_values() {
        assert!(luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 3]));
        assert!(!luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 4]));
    }
}
