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
//!   Luhn-valid run;
//! - a decimal with a fraction (digits, one `.`, digits, with no other `.` or digit touching
//!   it), such as a coordinate `47.146417549999995`: its dot is a decimal point, not a group
//!   separator. A card grouped by dots has three of them.
//!
//! In JSON, strings and names are scanned, and whole numbers too (a card number typed as a
//! number would otherwise be echoed by the refusal of a field that wants text); a number with
//! a fraction or an exponent never is.

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

/// Whether any string, name or whole number anywhere in `value` holds a card number.
pub fn json_contains_card_number(value: &Value) -> bool {
    card_number_path(value, &contains_card_number).is_some()
}

/// Where in `value` the first string, name or whole number that `holds` finds a card number in
/// is, as a JSON pointer (RFC 6901; empty for `value` itself): for saying where, not only
/// whether.
pub fn json_card_number_pointer<F: Fn(&str) -> bool>(value: &Value, holds: &F) -> Option<String> {
    let path = card_number_path(value, holds)?;
    Some(
        path.iter()
            .rev()
            .map(|step| format!("/{}", step.replace('~', "~0").replace('/', "~1")))
            .collect(),
    )
}

/// The steps to the first hit, innermost first: nothing is allocated while nothing is found.
fn card_number_path<F: Fn(&str) -> bool>(value: &Value, holds: &F) -> Option<Vec<String>> {
    match value {
        Value::String(s) => holds(s).then(Vec::new),
        Value::Number(n) => ((n.is_u64() || n.is_i64()) && holds(&n.to_string())).then(Vec::new),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let mut path = card_number_path(item, holds)?;
            path.push(i.to_string());
            Some(path)
        }),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let mut path = if holds(key) {
                Vec::new()
            } else {
                card_number_path(item, holds)?
            };
            path.push(key.clone());
            Some(path)
        }),
        Value::Bool(_) | Value::Null => None,
    }
}

/// Whether `text` holds a card number outside a designated sandbox reference, a phone number,
/// a UUID and a decimal with a fraction.
pub fn contains_card_number(text: &str) -> bool {
    // Most text has too few digits to hold one: no scan.
    if text.bytes().filter(u8::is_ascii_digit).count() < 12 {
        return false;
    }
    let text = without_decimals(&without_uuids(text)).into_owned();
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

/// `text` with every decimal with a fraction masked by `x` (same length, so offsets hold): a
/// maximal run of ASCII digits and dots holding exactly one dot, with a digit on either side.
fn without_decimals(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let in_token = |b: u8| b.is_ascii_digit() || b == b'.';
    let mut decimals = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !in_token(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && in_token(bytes[at]) {
            at += 1;
        }
        let token = &bytes[start..at];
        let dots: Vec<usize> = (0..token.len()).filter(|&i| token[i] == b'.').collect();
        if let [dot] = dots[..]
            && dot > 0
            && dot + 1 < token.len()
        {
            decimals.push(start..at);
        }
    }
    if decimals.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut masked = bytes.to_vec();
    for range in decimals {
        masked[range].fill(b'x');
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

    #[test]
    fn a_card_number_in_json_is_found_by_its_pointer() {
        let value = serde_json::json!({"amount": 1290, "items": [{"name": "tea"},
            {"a/b": {"note": "card 4242 4242 4242 4242"}}]});
        assert_eq!(
            json_card_number_pointer(&value, &contains_card_number).as_deref(),
            Some("/items/1/a~1b/note")
        );
        assert!(json_contains_card_number(&value));
        let key = serde_json::json!({"4242424242424242": true});
        assert_eq!(
            json_card_number_pointer(&key, &contains_card_number).as_deref(),
            Some("/4242424242424242")
        );
        let whole = serde_json::json!("4242424242424242");
        assert_eq!(
            json_card_number_pointer(&whole, &contains_card_number).as_deref(),
            Some("")
        );
        // A latitude is never one.
        let quote = serde_json::json!({"pickup": {"lat": 20.01892160703919}});
        assert_eq!(
            json_card_number_pointer(&quote, &contains_card_number),
            None
        );
    }
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
        assert!(json_contains_card_number(&json!([-4242424242424242_i64])));
        assert!(json_contains_card_number(
            &json!({"4242 4242 4242 4242": true})
        ));
        assert!(!json_contains_card_number(
            &json!({"provider_ref": "pm_sandbox_4242424242424242", "make_default": true})
        ));
    }

    /// Midpoints of real road segments in Vaduz (OpenStreetMap), as a client that interpolates
    /// an address computes them: each latitude's sixteen or seventeen digits pass the Luhn
    /// check when the decimal point is read as a separator.
    const VADUZ_POINTS: [(f64, f64); 12] = [
        (47.146417549999995, 9.51789075),
        (47.14219704999999, 9.52429815),
        (47.144838500000006, 9.52137595),
        (47.143020899999996, 9.521405999999999),
        (47.140984200000005, 9.521787100000001),
        (47.132560749999996, 9.522251),
        (47.13261395000001, 9.521977450000001),
        (47.131797649999996, 9.51304025),
        (47.139933150000005, 9.52050695),
        (47.140519600000005, 9.519546349999999),
        (47.133654050000004, 9.518537349999999),
        (47.135438449999995, 9.52011045),
    ];

    #[test]
    fn coordinates_are_never_card_numbers() {
        for (latitude, longitude) in VADUZ_POINTS {
            let digits: Vec<u8> = latitude
                .to_string()
                .bytes()
                .filter(u8::is_ascii_digit)
                .map(|b| b - b'0')
                .collect();
            assert!(is_card_number(&digits), "{latitude} is a lookalike");
            let stop = json!({"pickup": {"latitude": latitude, "longitude": longitude}});
            assert!(!json_contains_card_number(&stop), "{stop}");
            let negative = json!({"latitude": -latitude, "longitude": -longitude});
            assert!(!json_contains_card_number(&negative), "{negative}");
            for text in [
                latitude.to_string(),
                format!("{latitude},{longitude}"),
                format!("{latitude}, {longitude}"),
                format!("{latitude} {longitude}"),
                format!("-{latitude} / -{longitude}"),
                format!("pin at {latitude} {longitude} by the door"),
            ] {
                assert!(!contains_card_number(&text), "{text}");
            }
        }
        // The spec's Demo City, at the latitude a client sent.
        assert!(!json_contains_card_number(
            &json!({"latitude": 20.01892160703919})
        ));
        assert!(!contains_card_number("20.01892160703919"));
    }

    /// The card networks' published test numbers, however they are written, are still found
    /// beside coordinates.
    #[test]
    fn test_card_numbers_are_found_beside_coordinates() {
        for number in [
            "4111111111111111",
            "5555555555554444",
            "2223003122003222",
            "378282246310005",
            "6011111111111117",
            "3056930009020004",
            "3566002020360505",
            "6200000000000005",
        ] {
            let grouped: Vec<String> = number
                .as_bytes()
                .chunks(4)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            for written in [
                number.to_owned(),
                grouped.join(" "),
                grouped.join("."),
                grouped.join("-"),
            ] {
                for text in [
                    written.clone(),
                    format!("47.146417549999995, 9.51789075 card {written}"),
                    format!("{written} at 47.146417549999995"),
                ] {
                    assert!(contains_card_number(&text), "{text}");
                }
                assert!(json_contains_card_number(
                    &json!({"latitude": 47.146417549999995, "notes": written})
                ));
            }
        }
    }

    #[test]
    fn luhn_matches_known_values() {
        assert!(luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 3]));
        assert!(!luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 4]));
    }
}
