//! Free-text matching and ranking.

use std::collections::HashMap;

use crate::coords::LatLon;

use super::collect::Kind;
use super::text;
use super::{CONTEXT_SLOT, Place, PlaceIndex};

/// Longer queries are cut to this many tokens (addresses need about six).
const MAX_QUERY_TOKENS: usize = 8;

const EXACT: f32 = 1.0;
const PREFIX: f32 = 0.8;
const ONE_TYPO: f32 = 0.7;
const TWO_TYPOS: f32 = 0.55;

/// Results with the same name closer than this are one place (an address tagged on both a
/// node and its building, a street split in two).
const DUPLICATE_METRES: f64 = 250.0;

#[derive(Default)]
struct Candidate {
    /// Best match quality per query token (0 = unmatched).
    quality: [f32; MAX_QUERY_TOKENS],
    /// Which of the entry's name tokens some query token matched.
    name_mask: u32,
}

/// Small preferences between entries that match equally well.
fn kind_bonus(kind: Kind) -> f32 {
    match kind {
        Kind::Settlement => 0.08,
        Kind::Postcode => 0.06,
        Kind::Street => 0.04,
        Kind::Locality => 0.03,
        Kind::PointOfInterest => 0.02,
        Kind::Address => 0.0,
    }
}

impl PlaceIndex {
    fn term_id(&self, token: &str) -> Option<u32> {
        self.vocabulary
            .binary_search_by(|t| t.as_str().cmp(token))
            .ok()
            .map(|id| id as u32)
    }

    /// Vocabulary terms a query token may stand for, with the match quality.
    fn expansions(&self, raw: &str, is_last: bool) -> Vec<(u32, f32)> {
        let expanded = text::expand_abbreviation(raw);
        let token: &str = &expanded;
        let mut found: HashMap<u32, f32> = HashMap::new();
        let mut offer = |id: u32, quality: f32| {
            let best = found.entry(id).or_insert(0.0);
            *best = best.max(quality);
        };
        if let Some(id) = self.term_id(token) {
            offer(id, EXACT);
        }
        if is_last && raw.len() >= 2 {
            let start = self.vocabulary.partition_point(|t| t.as_str() < raw);
            for (offset, term) in self.vocabulary[start..].iter().enumerate() {
                if !term.starts_with(raw) {
                    break;
                }
                offer((start + offset) as u32, PREFIX);
            }
        }
        let budget = text::typo_budget(token);
        if budget > 0 {
            let lengths = token.len().saturating_sub(budget)..=token.len() + budget;
            for length in lengths {
                for &id in self.terms_by_length.get(length).into_iter().flatten() {
                    let term = &self.vocabulary[id as usize];
                    match text::bounded_edit_distance(token, term, budget) {
                        Some(1) => offer(id, ONE_TYPO),
                        Some(2) => offer(id, TWO_TYPOS),
                        _ => {}
                    }
                }
            }
        }
        found.into_iter().collect()
    }
}

impl PlaceIndex {
    /// Free-text search, best first; see the type docs for matching and ranking.
    pub fn search(&self, query: &str, near: Option<LatLon>, limit: usize) -> Vec<Place> {
        search(self, query, near.filter(LatLon::is_valid), limit)
    }
}

fn search(index: &PlaceIndex, query: &str, near: Option<LatLon>, limit: usize) -> Vec<Place> {
    let mut tokens = text::raw_tokens(query);
    tokens.truncate(MAX_QUERY_TOKENS);
    if tokens.is_empty() || limit == 0 {
        return Vec::new();
    }
    let count = tokens.len();
    let mut candidates: HashMap<u32, Candidate> = HashMap::new();
    for (k, token) in tokens.iter().enumerate() {
        for (term, quality) in index.expansions(token, k + 1 == count) {
            for posting in &index.postings[term as usize] {
                let candidate = candidates.entry(posting.entry).or_default();
                candidate.quality[k] = candidate.quality[k].max(quality);
                if posting.slot != CONTEXT_SLOT {
                    candidate.name_mask |= 1 << posting.slot;
                }
            }
        }
    }

    // Every token must match; a query of several tokens may miss one, at a cost, but numbers
    // alone ("12", a postcode) never carry a match when the query also has words.
    let required = if count >= 2 { count - 1 } else { count };
    let words: Vec<usize> = (0..count)
        .filter(|&k| !text::is_numeric(&tokens[k]))
        .collect();
    let mut ranked: Vec<(i64, f64, u32)> = candidates
        .into_iter()
        .filter_map(|(id, candidate)| {
            let matched = candidate.quality.iter().filter(|&&q| q > 0.0).count();
            let matched_a_word =
                words.is_empty() || words.iter().any(|&k| candidate.quality[k] > 0.0);
            if matched < required || !matched_a_word {
                return None;
            }
            let entry = &index.entries[id as usize];
            let text_quality = candidate.quality.iter().sum::<f32>() / count as f32;
            let name_tokens = entry.name_tokens.len().clamp(1, CONTEXT_SLOT as usize);
            let coverage = candidate.name_mask.count_ones() as f32 / name_tokens as f32;
            let missing = (count - matched) as f32 / count as f32;
            let score =
                0.7 * text_quality + 0.3 * coverage + kind_bonus(entry.kind) - 0.5 * missing;
            // Scores are bucketed so that near-equal matches are ordered by distance.
            let bucket = (score * 100.0).round() as i64;
            let distance = near.map_or(0.0, |p| p.distance_metres(entry.position));
            Some((bucket, distance, id))
        })
        .collect();
    let order = |a: &(i64, f64, u32), b: &(i64, f64, u32)| {
        b.0.cmp(&a.0)
            .then(a.1.total_cmp(&b.1))
            .then_with(|| {
                let (ea, eb) = (&index.entries[a.2 as usize], &index.entries[b.2 as usize]);
                ea.display.cmp(&eb.display)
            })
            .then(a.2.cmp(&b.2))
    };
    // Common words match thousands of entries; order only enough of the best to fill `limit`
    // after duplicates are dropped, and fall back to all of them when that is not enough.
    let shortlist = limit.saturating_mul(4).max(limit.saturating_add(16));
    if ranked.len() > shortlist {
        let mut best = ranked.clone();
        best.select_nth_unstable_by(shortlist - 1, order);
        best.truncate(shortlist);
        best.sort_by(order);
        let results = distinct_places(index, &best, limit);
        if results.len() == limit {
            return results;
        }
    }
    ranked.sort_by(order);
    distinct_places(index, &ranked, limit)
}

/// The first `limit` ranked entries, skipping repeats of a name already listed close by.
fn distinct_places(index: &PlaceIndex, ranked: &[(i64, f64, u32)], limit: usize) -> Vec<Place> {
    let mut results: Vec<Place> = Vec::with_capacity(limit.min(ranked.len()));
    for &(_, _, id) in ranked {
        let entry = &index.entries[id as usize];
        let duplicate = results.iter().any(|p| {
            p.name == entry.display
                && LatLon::new(p.latitude, p.longitude).distance_metres(entry.position)
                    < DUPLICATE_METRES
        });
        if !duplicate {
            results.push(Place::from_entry(entry, entry.position));
            if results.len() == limit {
                break;
            }
        }
    }
    results
}
