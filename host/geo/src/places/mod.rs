#![doc = include_str!("rules.md")]

mod collect;
mod search;
mod shapes;
mod text;

use rstar::RTree;
use rstar::primitives::GeomWithData;

use crate::coords::{LatLon, LocalProjection, interpolate};
use crate::osm::OsmExtract;
use crate::segment_grid::SegmentGrid;
use crate::storage::{Reader, Slab, StorageError, Writer};

use collect::{Entry, Kind};

/// Reverse geocoding prefers an address within this distance (metres): about a building's
/// width plus a GPS error.
pub const REVERSE_ADDRESS_RADIUS_METRES: f64 = 75.0;
/// Failing an address, the nearest named street within this distance (metres).
pub const REVERSE_STREET_RADIUS_METRES: f64 = 150.0;

/// A search or reverse-geocoding result.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// As a person writes it: "2019 East Pratt Street, Baltimore", "Landstrasse, Schaan".
    pub name: String,
    pub latitude: f64,
    pub longitude: f64,
    pub postcode: Option<String>,
}

impl Place {
    fn from_entry(entry: &Entry, at: LatLon) -> Self {
        Self {
            name: entry.display.clone(),
            latitude: at.lat,
            longitude: at.lon,
            postcode: entry.postcode.clone(),
        }
    }
}

/// Where a vocabulary term occurs.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Posting {
    entry: u32,
    /// Index among the entry's name tokens, or [`CONTEXT_SLOT`] for city and postcode.
    slot: u8,
}

/// Name tokens beyond this many share the last bit of the coverage mask.
const CONTEXT_SLOT: u8 = 31;

/// Searchable places of one extract, built with the road network.
///
#[doc = include_str!("rules.md")]
#[derive(serde::Serialize, serde::Deserialize)]
pub struct PlaceIndex {
    entries: Vec<Entry>,
    /// Sorted, unique normalised tokens.
    vocabulary: Vec<String>,
    postings: Vec<Vec<Posting>>,
    /// Term ids by token length in bytes, for typo matching.
    terms_by_length: Vec<Vec<u32>>,
    projection: LocalProjection,
    addresses: RTree<GeomWithData<[f64; 2], u32>>,
    /// Stored apart: flat arrays a prepared file maps in place.
    #[serde(skip)]
    streets: StreetLines,
}

/// Every named street's lines (a street has one per way), for finding the street at a point.
#[derive(Default)]
struct StreetLines {
    /// Points of line `l` are `points[starts[l]..starts[l + 1]]`.
    points: Slab<LatLon>,
    starts: Slab<u32>,
    /// The street entry of each line.
    entry: Slab<u32>,
    grid: SegmentGrid,
}

impl StreetLines {
    fn line(&self, line: u32) -> &[LatLon] {
        let l = line as usize;
        &self.points[self.starts[l] as usize..self.starts[l + 1] as usize]
    }
}

impl std::fmt::Debug for PlaceIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaceIndex")
            .field("entries", &self.entries.len())
            .field("vocabulary", &self.vocabulary.len())
            .finish_non_exhaustive()
    }
}

impl PlaceIndex {
    pub(crate) fn build(extract: &OsmExtract) -> Self {
        let collected = collect::collect(extract);
        let projection =
            LocalProjection::fitting(collected.entries.iter().map(|entry| entry.position));

        let mut vocabulary: Vec<String> = collected
            .entries
            .iter()
            .flat_map(|e| e.name_tokens.iter().chain(&e.context_tokens).cloned())
            .collect();
        vocabulary.sort_unstable();
        vocabulary.dedup();
        let term = |token: &str| vocabulary.binary_search_by(|t| t.as_str().cmp(token));
        let mut postings = vec![Vec::new(); vocabulary.len()];
        for (entry, e) in collected.entries.iter().enumerate() {
            let slots = e
                .name_tokens
                .iter()
                .enumerate()
                .map(|(i, t)| (t, (i as u8).min(CONTEXT_SLOT - 1)))
                .chain(e.context_tokens.iter().map(|t| (t, CONTEXT_SLOT)));
            for (token, slot) in slots {
                let id = term(token).expect("every token is in the vocabulary");
                postings[id].push(Posting {
                    entry: entry as u32,
                    slot,
                });
            }
        }
        let longest = vocabulary.iter().map(String::len).max().unwrap_or(0);
        let mut terms_by_length = vec![Vec::new(); longest + 1];
        for (id, token) in vocabulary.iter().enumerate() {
            terms_by_length[token.len()].push(id as u32);
        }

        let addresses = RTree::bulk_load(
            collected
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.kind == Kind::Address)
                .map(|(i, e)| GeomWithData::new(projection.to_plane(e.position), i as u32))
                .collect(),
        );
        let mut points = Vec::new();
        let mut starts = vec![0u32];
        for line in &collected.street_lines {
            points.extend_from_slice(&line.points);
            starts.push(points.len() as u32);
        }
        let entry: Vec<u32> = collected.street_lines.iter().map(|l| l.entry).collect();
        let grid = SegmentGrid::build(projection, entry.len(), |l| {
            &points[starts[l as usize] as usize..starts[l as usize + 1] as usize]
        });
        let streets = StreetLines {
            points: points.into(),
            starts: starts.into(),
            entry: entry.into(),
            grid,
        };
        Self {
            entries: collected.entries,
            vocabulary,
            postings,
            terms_by_length,
            projection,
            addresses,
            streets,
        }
    }

    /// Number of searchable entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The address at `at`, else the street, else `None`; see the type docs.
    pub fn reverse(&self, at: LatLon) -> Option<Place> {
        if !at.is_valid() {
            return None;
        }
        let query = self.projection.to_plane(at);
        let nearest_address = self
            .addresses
            .nearest_neighbor(query)
            .map(|hit| &self.entries[hit.data as usize])
            .filter(|e| e.position.distance_metres(at) <= REVERSE_ADDRESS_RADIUS_METRES);
        if let Some(entry) = nearest_address {
            return Some(Place::from_entry(entry, entry.position));
        }
        self.street_at(at)
    }

    /// The nearest named street within [`REVERSE_STREET_RADIUS_METRES`], ignoring addresses:
    /// where a point is without saying which door ("Oak Lane, Springfield").
    pub fn street_at(&self, at: LatLon) -> Option<Place> {
        if !at.is_valid() {
            return None;
        }
        let streets = &self.streets;
        // Planar distances are approximate; allow a margin and check exactly afterwards.
        let nearest = streets.grid.nearest(
            at,
            REVERSE_STREET_RADIUS_METRES * 1.02,
            |line| streets.line(line),
            |_| true,
        )?;
        let line = streets.line(nearest.line);
        let point = interpolate(line[nearest.segment], line[nearest.segment + 1], nearest.t);
        let entry = &self.entries[streets.entry[nearest.line as usize] as usize];
        (point.distance_metres(at) <= REVERSE_STREET_RADIUS_METRES)
            .then(|| Place::from_entry(entry, point))
    }

    pub(crate) fn write(&self, writer: &mut Writer) {
        writer.value("places", self);
        writer.records("places.street_points", &self.streets.points);
        writer.records("places.street_starts", &self.streets.starts);
        writer.records("places.street_entries", &self.streets.entry);
        self.streets.grid.write(writer, "places.street_grid");
    }

    /// Reads an index written by [`PlaceIndex::write`], checking every index it holds.
    pub(crate) fn read(reader: &Reader) -> Result<Self, StorageError> {
        let mut index: Self = reader.value("places")?;
        let points: Slab<LatLon> = reader.records("places.street_points")?;
        let starts: Slab<u32> = reader.records("places.street_starts")?;
        let entry: Slab<u32> = reader.records("places.street_entries")?;
        let lines = entry.len();
        let valid = starts.len() == lines + 1
            && starts.windows(2).all(|w| w[0] <= w[1])
            && starts
                .last()
                .is_some_and(|&end| end as usize == points.len())
            && entry.iter().all(|&e| (e as usize) < index.entries.len());
        if !valid {
            return Err(StorageError::Corrupt("places: street lines".to_owned()));
        }
        let grid = SegmentGrid::read(reader, "places.street_grid", |line| {
            let l = line as usize;
            (l < lines).then(|| (starts[l + 1] - starts[l]) as usize)
        })?;
        index.streets = StreetLines {
            points,
            starts,
            entry,
            grid,
        };
        Ok(index)
    }

    /// Bytes of the street lines this process holds of its own (mapped ones are shared).
    pub(crate) fn owned_street_bytes(&self) -> usize {
        let streets = &self.streets;
        streets.points.owned_bytes()
            + streets.starts.owned_bytes()
            + streets.entry.owned_bytes()
            + streets.grid.owned_bytes()
    }
}

#[cfg(test)]
mod tests;
