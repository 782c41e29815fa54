//! Prepared networks: a network built once from an extract and written to disk, then mapped
//! by every later start (and every process on the host) instead of being built again.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::network::{LoadError, LoadOptions, Progress, RoadNetwork, Step, no_progress};
use crate::storage::{Reader, StorageError, Writer};
use crate::vehicle::Vehicle;

/// Changes whenever the vehicle rules, junction rules or places rules change what a network
/// built from the same extract contains.
pub const RULES_VERSION: u32 = 1;

/// What a prepared file was built from; a file whose key differs is rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PreparedKey {
    extract_sha256: String,
    rules_version: u32,
    vehicles: Vec<Vehicle>,
}

/// Where an extract's bytes come from.
#[derive(Debug, Clone, Copy)]
pub enum ExtractSource<'a> {
    File(&'a Path),
    Bytes(&'a [u8]),
}

/// How [`RoadNetwork::load_or_prepare`] obtained its network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Mapped from the prepared file.
    Loaded,
    /// Built from the extract (and written, unless `written` is false), because the prepared
    /// file was missing, stale or damaged (`reason`).
    Prepared { reason: String, written: bool },
}

/// Timings and sizes of one load or preparation.
#[derive(Debug, Clone, PartialEq)]
pub struct PrepareReport {
    pub origin: Origin,
    /// Hashing the extract to check the prepared file's key.
    pub hash_time: Duration,
    /// Mapping and checking the prepared file, or building the network.
    pub load_time: Duration,
    pub write_time: Duration,
    /// Size of the prepared file.
    pub file_bytes: u64,
}

fn sha256_hex(source: ExtractSource) -> Result<String, LoadError> {
    let mut hasher = Sha256::new();
    match source {
        ExtractSource::Bytes(bytes) => hasher.update(bytes),
        ExtractSource::File(path) => {
            let open_error = |source| LoadError::Open {
                path: path.to_owned(),
                source,
            };
            let mut file = File::open(path).map_err(open_error)?;
            let mut buffer = vec![0u8; 1 << 20];
            loop {
                let read = file.read(&mut buffer).map_err(open_error)?;
                if read == 0 {
                    break;
                }
                hasher.update(&buffer[..read]);
            }
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn key_for(source: ExtractSource, options: &LoadOptions) -> Result<PreparedKey, LoadError> {
    let mut vehicles = options.vehicles.clone();
    vehicles.sort();
    vehicles.dedup();
    Ok(PreparedKey {
        extract_sha256: sha256_hex(source)?,
        rules_version: RULES_VERSION,
        vehicles,
    })
}

fn build(
    source: ExtractSource,
    options: &LoadOptions,
    progress: Progress,
) -> Result<RoadNetwork, LoadError> {
    match source {
        ExtractSource::File(path) => RoadNetwork::from_pbf_file_reporting(path, options, progress),
        ExtractSource::Bytes(bytes) => {
            RoadNetwork::from_pbf_bytes_reporting(bytes, options, progress)
        }
    }
}

impl RoadNetwork {
    /// The network of `source` for `options`' vehicles: mapped from `prepared` when that file
    /// was prepared from the same extract bytes, rules and vehicles; otherwise built from the
    /// extract and written to `prepared` for the next start. A damaged file (bad checksum,
    /// truncated) is never trusted: it is rebuilt. Failing to write is reported, not fatal.
    pub fn load_or_prepare(
        source: ExtractSource,
        options: &LoadOptions,
        prepared: &Path,
    ) -> Result<(Self, PrepareReport), LoadError> {
        let started = Instant::now();
        let key = key_for(source, options)?;
        let hash_time = started.elapsed();
        let loading = Instant::now();
        let reason = match Self::read_prepared(prepared, &key) {
            Ok(network) => {
                let file_bytes = std::fs::metadata(prepared).map_or(0, |m| m.len());
                let report = PrepareReport {
                    origin: Origin::Loaded,
                    hash_time,
                    load_time: loading.elapsed(),
                    write_time: Duration::ZERO,
                    file_bytes,
                };
                return Ok((network, report));
            }
            Err(StorageError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                "not prepared yet".to_owned()
            }
            Err(e) => e.to_string(),
        };
        let network = build(source, options, &no_progress)?;
        let load_time = loading.elapsed();
        let writing = Instant::now();
        let written = network.write_prepared(prepared, &key);
        let report = PrepareReport {
            origin: Origin::Prepared {
                reason,
                written: written.is_ok(),
            },
            hash_time,
            load_time,
            write_time: writing.elapsed(),
            file_bytes: written.unwrap_or(0),
        };
        Ok((network, report))
    }

    /// Builds the network of `source` and writes it to `prepared`, whatever is there,
    /// reporting each step to `progress`.
    pub fn prepare(
        source: ExtractSource,
        options: &LoadOptions,
        prepared: &Path,
        progress: Progress,
    ) -> Result<(Self, PrepareReport), LoadError> {
        let started = Instant::now();
        let key = key_for(source, options)?;
        let hash_time = started.elapsed();
        if let ExtractSource::File(path) = source {
            progress(Step {
                what: "hashed the extract".into(),
                seconds: hash_time.as_secs_f64(),
                count: std::fs::metadata(path).map_or(0, |m| m.len()),
                unit: "bytes",
            });
        }
        let building = Instant::now();
        let network = build(source, options, progress)?;
        let load_time = building.elapsed();
        let writing = Instant::now();
        let file_bytes = network
            .write_prepared(prepared, &key)
            .map_err(LoadError::Prepared)?;
        progress(Step {
            what: format!("wrote {}", prepared.display()),
            seconds: writing.elapsed().as_secs_f64(),
            count: file_bytes,
            unit: "bytes",
        });
        let report = PrepareReport {
            origin: Origin::Prepared {
                reason: "prepared on request".to_owned(),
                written: true,
            },
            hash_time,
            load_time,
            write_time: writing.elapsed(),
            file_bytes,
        };
        Ok((network, report))
    }

    fn write_prepared(&self, path: &Path, key: &PreparedKey) -> Result<u64, StorageError> {
        let mut writer = Writer::new();
        self.graph.write(&mut writer);
        // Vehicles sharing a routing graph share its sections.
        let mut owners: Vec<&Arc<crate::routing_graph::RoutingGraph>> = Vec::new();
        let mut vehicles: Vec<(Vehicle, usize)> = Vec::new();
        for (vehicle, routing) in &self.routing {
            let index = match owners.iter().position(|o| Arc::ptr_eq(o, routing)) {
                Some(index) => index,
                None => {
                    routing.write(&mut writer, &format!("routing.{}", owners.len()));
                    owners.push(routing);
                    owners.len() - 1
                }
            };
            vehicles.push((*vehicle, index));
        }
        writer.value("routing.vehicles", &vehicles);
        self.snapper.write(&mut writer);
        writer.value("area", &self.area);
        self.places.write(&mut writer);
        writer.value("stats", &self.stats);
        writer.write(path, key)
    }

    fn read_prepared(path: &Path, key: &PreparedKey) -> Result<Self, StorageError> {
        let reader = Reader::open(path, key)?;
        let graph = crate::graph::RoadGraph::read(&reader)?;
        let vehicles: Vec<(Vehicle, usize)> = reader.value("routing.vehicles")?;
        let mut owners: Vec<Arc<crate::routing_graph::RoutingGraph>> = Vec::new();
        let mut routing = Vec::with_capacity(vehicles.len());
        for (vehicle, index) in vehicles {
            while owners.len() <= index {
                let prefix = format!("routing.{}", owners.len());
                owners.push(Arc::new(crate::routing_graph::RoutingGraph::read(
                    &reader, &prefix, &graph,
                )?));
            }
            routing.push((vehicle, Arc::clone(&owners[index])));
        }
        let snapper = crate::snap::Snapper::read(&reader, &graph)?;
        Ok(Self {
            graph,
            snapper,
            routing,
            area: reader.value("area")?,
            places: crate::places::PlaceIndex::read(&reader)?,
            stats: reader.value("stats")?,
        })
    }

    /// Bytes this process holds of its own for the network's flat arrays; mapped ones are
    /// shared through the page cache. (The places index's entries, vocabulary and address tree
    /// are always copied.)
    pub fn owned_array_bytes(&self) -> usize {
        let mut seen: Vec<&Arc<crate::routing_graph::RoutingGraph>> = Vec::new();
        let mut total = self.graph.owned_bytes()
            + self.snapper.owned_bytes()
            + self.places.owned_street_bytes();
        for (_, routing) in &self.routing {
            if !seen.iter().any(|s| Arc::ptr_eq(s, routing)) {
                total += routing.owned_bytes();
                seen.push(routing);
            }
        }
        total
    }
}
