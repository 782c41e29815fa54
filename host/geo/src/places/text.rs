//! Text normalisation shared by indexing and querying, so both sides agree on tokens.

use std::borrow::Cow;

/// Splits `text` into lowercase ASCII tokens: accents and ligatures are transliterated
/// ("Städtle" → "stadtle", "Straße" → "strasse") and anything not alphanumeric separates.
pub(crate) fn raw_tokens(text: &str) -> Vec<String> {
    deunicode::deunicode(text)
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Common street-type and direction abbreviations and their indexed spelling.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("st", "street"),
    ("str", "strasse"),
    ("ave", "avenue"),
    ("av", "avenue"),
    ("rd", "road"),
    ("dr", "drive"),
    ("blvd", "boulevard"),
    ("ln", "lane"),
    ("pl", "place"),
    ("ct", "court"),
    ("sq", "square"),
    ("hwy", "highway"),
    ("pkwy", "parkway"),
    ("ter", "terrace"),
    ("n", "north"),
    ("s", "south"),
    ("e", "east"),
    ("w", "west"),
];

/// The indexed spelling of a token: abbreviations expanded, including German compounds cut
/// after "str" ("Zollstr." → "zollstrasse").
pub(crate) fn expand_abbreviation(token: &str) -> Cow<'_, str> {
    if let Some((_, long)) = ABBREVIATIONS.iter().find(|(short, _)| *short == token) {
        return Cow::Borrowed(long);
    }
    if token.len() > 3 && token.ends_with("str") && !is_numeric(token) {
        return Cow::Owned(format!("{token}asse"));
    }
    Cow::Borrowed(token)
}

/// Tokens as indexed: normalised and with abbreviations expanded.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    raw_tokens(text)
        .into_iter()
        .map(|t| expand_abbreviation(&t).into_owned())
        .collect()
}

pub(crate) fn is_numeric(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_digit())
}

/// Edits tolerated when matching `token` approximately: none for short words and numbers
/// (house numbers and postcodes must be exact), one from 4 letters, two from 8.
pub(crate) fn typo_budget(token: &str) -> usize {
    match token.len() {
        _ if is_numeric(token) => 0,
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// Lower bound of the edit distance: the larger of the letters `a` has in excess and the
/// letters it lacks, compared with `b` (tokens are lowercase ASCII letters and digits).
fn letter_count_difference(a: &[u8], b: &[u8]) -> usize {
    let slot = |c: u8| match c {
        b'a'..=b'z' => usize::from(c - b'a'),
        b'0'..=b'9' => 26 + usize::from(c - b'0'),
        _ => 36,
    };
    let mut balance = [0i8; 37];
    for &c in a {
        balance[slot(c)] += 1;
    }
    for &c in b {
        balance[slot(c)] -= 1;
    }
    let (excess, lack) = balance.iter().fold((0usize, 0usize), |(e, l), &n| {
        (e + n.max(0) as usize, l + (-n).max(0) as usize)
    });
    excess.max(lack)
}

/// Tokens longer than this (in bytes) are only matched exactly.
const MAX_FUZZY_LEN: usize = 48;

/// Optimal-string-alignment distance (insertions, deletions, substitutions, adjacent swaps),
/// or `None` once it must exceed `limit`. It runs over whole vocabulary buckets per query
/// token, so it avoids allocation and first rejects pairs whose letter counts alone differ by
/// more than `limit` (a lower bound of the distance).
pub(crate) fn bounded_edit_distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().abs_diff(b.len()) > limit || a.len() > MAX_FUZZY_LEN || b.len() > MAX_FUZZY_LEN {
        return None;
    }
    if letter_count_difference(a, b) > limit {
        return None;
    }

    const WIDTH: usize = MAX_FUZZY_LEN + 1;
    let mut before_previous = [0usize; WIDTH];
    let mut previous = [0usize; WIDTH];
    let mut current = [0usize; WIDTH];
    for (j, cell) in previous.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for i in 1..=a.len() {
        current[0] = i;
        let mut row_minimum = current[0];
        for j in 1..=b.len() {
            let substitution = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + substitution);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before_previous[j - 2] + 1);
            }
            current[j] = best;
            row_minimum = row_minimum.min(best);
        }
        if row_minimum > limit {
            return None;
        }
        before_previous = previous;
        previous = current;
    }
    let distance = previous[b.len()];
    (distance <= limit).then_some(distance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accents_case_and_punctuation_are_normalised() {
        assert_eq!(raw_tokens("Städtle 35, Vaduz"), ["stadtle", "35", "vaduz"]);
        assert_eq!(raw_tokens("Landstraße"), raw_tokens("LANDSTRASSE"));
        assert_eq!(raw_tokens("O'Donnell Heights"), ["o", "donnell", "heights"]);
        assert_eq!(raw_tokens("  "), Vec::<String>::new());
        assert_eq!(raw_tokens("12a"), ["12a"]);
    }

    #[test]
    fn abbreviations_expand_on_both_sides() {
        assert_eq!(
            tokens("2019 E. Pratt St"),
            ["2019", "east", "pratt", "street"]
        );
        assert_eq!(
            tokens("2019 East Pratt Street"),
            ["2019", "east", "pratt", "street"]
        );
        assert_eq!(tokens("Zollstr. 16"), ["zollstrasse", "16"]);
        assert_eq!(tokens("Zollstrasse"), ["zollstrasse"]);
        assert_eq!(
            tokens("Stadium"),
            ["stadium"],
            "only whole tokens are expanded"
        );
    }

    #[test]
    fn typo_budget_grows_with_length_and_spares_numbers() {
        assert_eq!(typo_budget("st"), 0);
        assert_eq!(typo_budget("prat"), 1);
        assert_eq!(typo_budget("landstrase"), 2);
        assert_eq!(typo_budget("21231"), 0);
        assert_eq!(typo_budget("12a"), 0);
    }

    #[test]
    fn edit_distance_with_limit() {
        assert_eq!(bounded_edit_distance("prat", "pratt", 1), Some(1));
        assert_eq!(bounded_edit_distance("stret", "street", 1), Some(1));
        assert_eq!(
            bounded_edit_distance("starsse", "strasse", 1),
            Some(1),
            "swap"
        );
        assert_eq!(bounded_edit_distance("vaduz", "vaduz", 0), Some(0));
        assert_eq!(bounded_edit_distance("balzers", "schaan", 2), None);
        assert_eq!(bounded_edit_distance("ab", "abcd", 1), None);
        assert_eq!(bounded_edit_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(bounded_edit_distance("kitten", "sitting", 2), None);
        assert_eq!(letter_count_difference(b"listen", b"silent"), 0);
        assert_eq!(letter_count_difference(b"pratt", b"prat"), 1);
        let long = "x".repeat(MAX_FUZZY_LEN + 1);
        assert_eq!(bounded_edit_distance(&long, &long, 2), None);
    }
}
