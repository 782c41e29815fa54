//! A minimal OpenStreetMap PBF writer (nodes as DenseNodes, ways; no relations, no metadata).
//!
//! Generated cities go through the same loader as downloaded extracts, so the file must be
//! real PBF: a length-prefixed `BlobHeader` + zlib `Blob` per block, an `OSMHeader` block first,
//! then `OSMData` primitive blocks (see <https://wiki.openstreetmap.org/wiki/PBF_Format>).

use std::collections::HashMap;
use std::io::Write;

use flate2::Compression;
use flate2::write::ZlibEncoder;

use crate::coords::LatLon;

/// Entities per primitive block, the customary value (the format allows up to 32 MB per blob).
const ENTITIES_PER_BLOCK: usize = 8_000;
/// Coordinates are stored as integers of 100 nanodegrees (the format's default granularity).
const COORDINATE_SCALE: f64 = 1e7;

/// Collects nodes and ways and encodes them as a PBF file.
#[derive(Debug, Default)]
pub(crate) struct PbfWriter {
    nodes: Vec<NodeRecord>,
    ways: Vec<WayRecord>,
}

type OwnedTags = Vec<(String, String)>;

#[derive(Debug)]
struct NodeRecord {
    id: i64,
    position: LatLon,
    tags: OwnedTags,
}

#[derive(Debug)]
struct WayRecord {
    id: i64,
    node_ids: Vec<i64>,
    tags: OwnedTags,
}

fn owned_tags(tags: &[(&str, &str)]) -> OwnedTags {
    tags.iter()
        .map(|&(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

impl PbfWriter {
    pub(crate) fn add_node(&mut self, id: i64, position: LatLon, tags: &[(&str, &str)]) {
        self.nodes.push(NodeRecord {
            id,
            position,
            tags: owned_tags(tags),
        });
    }

    pub(crate) fn add_way(&mut self, id: i64, node_ids: &[i64], tags: &[(&str, &str)]) {
        self.ways.push(WayRecord {
            id,
            node_ids: node_ids.to_vec(),
            tags: owned_tags(tags),
        });
    }

    /// Encodes everything added so far: header, node blocks, then way blocks.
    pub(crate) fn finish(self) -> Vec<u8> {
        let mut file = Vec::new();
        write_blob(&mut file, "OSMHeader", &header_block());
        for chunk in self.nodes.chunks(ENTITIES_PER_BLOCK) {
            write_blob(&mut file, "OSMData", &dense_node_block(chunk));
        }
        for chunk in self.ways.chunks(ENTITIES_PER_BLOCK) {
            write_blob(&mut file, "OSMData", &way_block(chunk));
        }
        file
    }
}

/// Protobuf wire-format helpers.
mod proto {
    pub(super) fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    pub(super) fn zigzag(value: i64) -> u64 {
        ((value << 1) ^ (value >> 63)) as u64
    }

    pub(super) fn key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
        varint(out, (u64::from(field) << 3) | u64::from(wire_type));
    }

    pub(super) fn uint_field(out: &mut Vec<u8>, field: u32, value: u64) {
        key(out, field, 0);
        varint(out, value);
    }

    pub(super) fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
        key(out, field, 2);
        varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }

    pub(super) fn packed_uints(out: &mut Vec<u8>, field: u32, values: impl Iterator<Item = u64>) {
        let mut packed = Vec::new();
        values.for_each(|v| varint(&mut packed, v));
        bytes_field(out, field, &packed);
    }

    /// Delta-coded, zigzagged `sint64` values, as DenseNodes and way refs store them.
    pub(super) fn packed_deltas(out: &mut Vec<u8>, field: u32, values: impl Iterator<Item = i64>) {
        let mut previous = 0;
        packed_uints(
            out,
            field,
            values.map(|v| {
                let delta = v - previous;
                previous = v;
                zigzag(delta)
            }),
        );
    }
}

fn write_blob(file: &mut Vec<u8>, kind: &str, block: &[u8]) {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::fast());
    encoder
        .write_all(block)
        .expect("writing to a Vec cannot fail");
    let compressed = encoder.finish().expect("writing to a Vec cannot fail");
    let mut blob = Vec::new();
    proto::uint_field(&mut blob, 2, block.len() as u64); // raw_size
    proto::bytes_field(&mut blob, 3, &compressed); // zlib_data
    let mut header = Vec::new();
    proto::bytes_field(&mut header, 1, kind.as_bytes()); // type
    proto::uint_field(&mut header, 3, blob.len() as u64); // datasize
    let header_len = u32::try_from(header.len()).expect("blob headers are tiny");
    file.extend_from_slice(&header_len.to_be_bytes());
    file.extend_from_slice(&header);
    file.extend_from_slice(&blob);
}

fn header_block() -> Vec<u8> {
    let mut block = Vec::new();
    proto::bytes_field(&mut block, 4, b"OsmSchema-V0.6"); // required_features
    proto::bytes_field(&mut block, 4, b"DenseNodes");
    proto::bytes_field(&mut block, 16, b"courier-geo"); // writingprogram
    block
}

/// Interns strings for one block's string table (index 0 is reserved for "").
#[derive(Default)]
struct StringTable {
    indices: HashMap<String, u64>,
    strings: Vec<String>,
}

impl StringTable {
    fn index(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.indices.get(s) {
            return i;
        }
        self.strings.push(s.to_owned());
        let i = self.strings.len() as u64;
        self.indices.insert(s.to_owned(), i);
        i
    }

    fn encode(&self) -> Vec<u8> {
        let mut table = Vec::new();
        proto::bytes_field(&mut table, 1, b"");
        for s in &self.strings {
            proto::bytes_field(&mut table, 1, s.as_bytes());
        }
        table
    }
}

fn primitive_block(strings: &StringTable, group: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    proto::bytes_field(&mut block, 1, &strings.encode()); // stringtable
    proto::bytes_field(&mut block, 2, group); // primitivegroup
    block
}

fn fixed_point(degrees: f64) -> i64 {
    (degrees * COORDINATE_SCALE).round() as i64
}

fn dense_node_block(nodes: &[NodeRecord]) -> Vec<u8> {
    let mut strings = StringTable::default();
    let mut keys_vals = Vec::new();
    for node in nodes {
        for (k, v) in &node.tags {
            keys_vals.push(strings.index(k));
            keys_vals.push(strings.index(v));
        }
        keys_vals.push(0);
    }
    let mut dense = Vec::new();
    proto::packed_deltas(&mut dense, 1, nodes.iter().map(|n| n.id)); // id
    proto::packed_deltas(
        &mut dense,
        8,
        nodes.iter().map(|n| fixed_point(n.position.lat)),
    );
    proto::packed_deltas(
        &mut dense,
        9,
        nodes.iter().map(|n| fixed_point(n.position.lon)),
    );
    proto::packed_uints(&mut dense, 10, keys_vals.into_iter()); // keys_vals
    let mut group = Vec::new();
    proto::bytes_field(&mut group, 2, &dense); // dense
    primitive_block(&strings, &group)
}

fn way_block(ways: &[WayRecord]) -> Vec<u8> {
    let mut strings = StringTable::default();
    let mut group = Vec::new();
    for record in ways {
        let mut way = Vec::new();
        proto::uint_field(&mut way, 1, record.id as u64); // id (int64)
        let (keys, values): (Vec<u64>, Vec<u64>) = record
            .tags
            .iter()
            .map(|(k, v)| (strings.index(k), strings.index(v)))
            .unzip();
        proto::packed_uints(&mut way, 2, keys.into_iter());
        proto::packed_uints(&mut way, 3, values.into_iter());
        proto::packed_deltas(&mut way, 8, record.node_ids.iter().copied()); // refs
        proto::bytes_field(&mut group, 3, &way); // ways
    }
    primitive_block(&strings, &group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::osm::read_pbf;

    #[test]
    fn varints_and_zigzag_match_the_protobuf_spec() {
        let mut out = Vec::new();
        proto::varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        assert_eq!(proto::zigzag(0), 0);
        assert_eq!(proto::zigzag(-1), 1);
        assert_eq!(proto::zigzag(1), 2);
        assert_eq!(proto::zigzag(-2), 3);
    }

    #[test]
    fn written_file_reads_back_through_the_loader() {
        let mut writer = PbfWriter::default();
        writer.add_node(1, LatLon::new(20.001, 50.002), &[]);
        writer.add_node(
            2,
            LatLon::new(-20.5, -50.25),
            &[("addr:housenumber", "12b"), ("addr:street", "Ünter Straße")],
        );
        writer.add_node(3, LatLon::new(20.0, 50.0), &[("amenity", "bench")]);
        writer.add_way(10, &[1, 2, 3], &[("highway", "residential"), ("name", "A")]);
        writer.add_way(11, &[3, 1], &[("barrier", "fence")]);
        let extract = {
            let bytes = writer.finish();
            read_pbf(|| Ok::<_, osmpbf::Error>(&bytes[..])).unwrap()
        };

        assert_eq!(extract.node_positions.len(), 3);
        let p = extract.position(2).unwrap();
        assert!((p.lat + 20.5).abs() < 1e-7 && (p.lon + 50.25).abs() < 1e-7);
        assert_eq!(
            extract.tagged_nodes.len(),
            1,
            "only the address is relevant"
        );
        assert_eq!(
            extract.tagged_nodes[0].tags.get("addr:street"),
            Some("Ünter Straße")
        );
        assert_eq!(extract.ways.len(), 1, "the fence is not relevant");
        assert_eq!(extract.ways[0].id, 10);
        assert_eq!(extract.ways[0].node_ids, [1, 2, 3]);
        assert_eq!(extract.ways[0].tags.get("name"), Some("A"));
    }

    #[test]
    fn large_inputs_span_several_blocks() {
        let mut writer = PbfWriter::default();
        let count = ENTITIES_PER_BLOCK as i64 * 2 + 5;
        for id in 1..=count {
            writer.add_node(id, LatLon::new(id as f64 * 1e-5, 0.0), &[]);
        }
        let ids: Vec<i64> = (1..=count).collect();
        writer.add_way(1, &ids, &[("highway", "service")]);
        let extract = {
            let bytes = writer.finish();
            read_pbf(|| Ok::<_, osmpbf::Error>(&bytes[..])).unwrap()
        };
        assert_eq!(extract.node_positions.len(), count as usize);
        assert_eq!(extract.ways[0].node_ids.len(), count as usize);
    }
}
