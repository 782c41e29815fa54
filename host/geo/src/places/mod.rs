//! Places search and reverse geocoding over an extract's streets, addresses and named places.

use crate::coords::LatLon;
use crate::osm::OsmExtract;

/// A search or reverse-geocoding result.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub name: String,
    pub latitude: f64,
    pub longitude: f64,
    pub postcode: Option<String>,
}

/// Searchable places of one extract.
#[derive(Debug, Default)]
pub struct PlaceIndex {
    places: Vec<Place>,
}

impl PlaceIndex {
    pub(crate) fn build(_extract: &OsmExtract) -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.places.len()
    }

    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    pub fn search(&self, _query: &str, _near: Option<LatLon>, _limit: usize) -> Vec<Place> {
        Vec::new()
    }

    pub fn reverse(&self, _at: LatLon) -> Option<Place> {
        None
    }
}

/// Reverse geocoding prefers an address within this distance (metres).
pub const REVERSE_ADDRESS_RADIUS_METRES: f64 = 75.0;
/// Failing an address, the nearest named street within this distance (metres).
pub const REVERSE_STREET_RADIUS_METRES: f64 = 150.0;
