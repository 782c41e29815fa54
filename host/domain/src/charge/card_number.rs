//! Spotting raw card numbers wherever they are sent, so they are refused before anything
//! stores, logs or echoes them.
//!
//! A card number is a run of 12 to 19 digits that passes the Luhn check, written plain or in
//! groups split by up to three of the separators people type (spaces, dashes, dots, slashes,
//! underscores, tabs, no-break spaces). Three kinds of digits are never taken for one:
//! - the sandbox's designated test numbers inside a `pm_sandbox_…` reference: those are
//!   references by design, and public;
//! - a phone number in international form, whose digits follow a `+`;
//! - the digits of a UUID (`8-4-4-4-12` hexadecimal), whose groups could otherwise join into a
//!   Luhn-valid run.

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

/// Separators allowed between two groups of a card number, at most this many in a row.
const MAX_SEPARATORS: usize = 3;

/// The characters people put between the groups of a card number.
fn is_separator(c: char) -> bool {
    matches!(
        c,
        ' ' | '-'
            | '.'
            | '/'
            | '_'
            | '\t'
            | '\u{a0}'
            | '\u{2007}'
            | '\u{2009}'
            | '\u{202f}'
            | '\u{2010}'..='\u{2015}'
    )
}

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

/// Whether `text` holds a card number outside a designated sandbox reference, a phone number
/// and a UUID.
pub fn contains_card_number(text: &str) -> bool {
    // Most text has too few digits to hold one: no scan.
    if text.bytes().filter(u8::is_ascii_digit).count() < 12 {
        return false;
    }
    let text = without_uuids(text);
    digit_runs(&text).into_iter().any(|(start, digits)| {
        is_card_number(&digits)
            && !text[..start].ends_with('+')
            && !is_sandbox_reference(&text, start, &digits)
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

/// `text` with every UUID's characters replaced by `x` (same length, so offsets hold).
fn without_uuids(text: &str) -> std::borrow::Cow<'_, str> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    const LENGTH: usize = 36;
    let bytes = text.as_bytes();
    let is_uuid_at = |at: usize| {
        let Some(candidate) = bytes.get(at..at + LENGTH) else {
            return false;
        };
        let mut position = 0;
        for (index, group) in GROUPS.iter().enumerate() {
            if index > 0 {
                if candidate[position] != b'-' {
                    return false;
                }
                position += 1;
            }
            if !candidate[position..position + group]
                .iter()
                .all(u8::is_ascii_hexdigit)
            {
                return false;
            }
            position += group;
        }
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + LENGTH).copied();
        !before.is_some_and(|b| b.is_ascii_alphanumeric())
            && !after.is_some_and(|b| b.is_ascii_alphanumeric())
    };
    let starts: Vec<usize> = (0..bytes.len()).filter(|&at| is_uuid_at(at)).collect();
    if starts.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut masked = bytes.to_vec();
    for at in starts {
        masked[at..at + LENGTH].fill(b'x');
    }
    // Only ASCII was replaced by ASCII.
    std::borrow::Cow::Owned(String::from_utf8(masked).expect("still UTF-8"))
}

/// Maximal runs of digits, where up to [`MAX_SEPARATORS`] separators may sit between two
/// digits: each run's byte offset and its digit values.
fn digit_runs(text: &str) -> Vec<(usize, Vec<u8>)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let digit = |i: usize| chars.get(i).and_then(|(_, c)| c.to_digit(10));
    let mut runs = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if digit(i).is_none() {
            i += 1;
            continue;
        }
        let start = chars[i].0;
        let mut digits = Vec::new();
        loop {
            while let Some(d) = digit(i) {
                digits.push(d as u8);
                i += 1;
            }
            let mut next = i;
            while next < chars.len() && next - i < MAX_SEPARATORS && is_separator(chars[next].1) {
                next += 1;
            }
            if next > i && digit(next).is_some() {
                i = next;
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
            "4242.4242.4242.4242",
            "4242/4242/4242/4242",
            "4242_4242_4242_4242",
            "4242\t4242\t4242\t4242",
            "4242\u{a0}4242\u{a0}4242\u{a0}4242",
            "4242 - 4242 - 4242 - 4242",
            "4242  4242  4242  4242",
            "card: 4111111111111111 thanks",
            "leave with neighbour, pay with 4111.1111.1111.1111",
            "378282246310005",
            "3782 822463 10005",
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
            "+4930901820",
            "+1 (415) 555-0132",
            "2026-11-21T10:00:00Z",
            "4111    1111 1111 1111", // four separators in a row split it
        ] {
            assert!(!contains_card_number(text), "{text}");
        }
    }

    #[test]
    fn uuids_references_and_phone_numbers_are_never_card_numbers() {
        // A UUID whose last three groups join into a Luhn-valid run of 18 digits.
        let uuid = "deadbeef-abcd-ef01-2345-678901234569";
        assert!(contains_card_number("01-2345-678901234569"));
        assert!(!contains_card_number(uuid));
        for text in [
            "12345678-1234-1234-1234-123456789012",
            "job 00000000-0000-4000-8000-000000000000 and 42424242-4242-4242-4242-424242424242",
            "a1b2c3d4-1111-2222-3333-444444444444",
            "CR-7KD2-9QX4",
            "ORD-2026-000123",
            "+44 7700 900123",
            "+1-202-555-0187",
        ] {
            assert!(!contains_card_number(text), "{text}");
        }
        // Random UUIDs, as the API hands them out.
        for _ in 0..10_000 {
            let id = uuid::Uuid::new_v4().to_string();
            assert!(!contains_card_number(&id), "{id}");
            assert!(!contains_card_number(&format!("ref {id}, note")), "{id}");
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
