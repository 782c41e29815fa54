//! The on-disk form of a prepared network: a versioned file of checksummed sections, read by
//! memory-mapping it so that processes on one host share its pages.
//!
//! Layout: a 32-byte prelude (magic, format version, length and CRC-32 of the table of
//! contents), the table of contents (JSON: the key the file was prepared for and, per section,
//! its name, offset, length and CRC-32), then the sections, each aligned to 64 bytes. Flat
//! arrays of plain records ([`Slab`]) are used in place from the mapping; the other
//! structures are serialised with `bincode` and copied into each process on load.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use bytemuck::Pod;
use memmap2::Mmap;
use serde::{Deserialize, Serialize};

/// Changes whenever the file layout or any stored structure changes.
pub const FORMAT_VERSION: u32 = 2;
const MAGIC: &[u8; 8] = b"CRNETv\x00\x01";
const PRELUDE_LEN: usize = 32;
const SECTION_ALIGN: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("cannot read or write prepared data: {0}")]
    Io(#[from] std::io::Error),
    #[error("the prepared data is damaged: {0}")]
    Corrupt(String),
    #[error("the prepared data was made for another extract, rules or format")]
    Stale,
}

/// A slice of plain records, owned or borrowed from a mapped file (shared between processes).
#[derive(Clone)]
pub(crate) enum Slab<T: Pod> {
    Owned(Vec<T>),
    Mapped {
        file: Arc<Mmap>,
        bytes: Range<usize>,
    },
}

impl<T: Pod> Default for Slab<T> {
    fn default() -> Self {
        Slab::Owned(Vec::new())
    }
}

impl<T: Pod> From<Vec<T>> for Slab<T> {
    fn from(records: Vec<T>) -> Self {
        Slab::Owned(records)
    }
}

impl<T: Pod> Deref for Slab<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Slab::Owned(records) => records,
            Slab::Mapped { file, bytes } => bytemuck::cast_slice(&file[bytes.clone()]),
        }
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Slab<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Slab::Owned(_) => "owned",
            Slab::Mapped { .. } => "mapped",
        };
        write!(f, "Slab({kind}, {} records)", self.len())
    }
}

impl<T: Pod> Slab<T> {
    /// The records as a vector to append to; a mapped slab is copied first.
    pub(crate) fn vec_mut(&mut self) -> &mut Vec<T> {
        if let Slab::Mapped { .. } = self {
            *self = Slab::Owned(self.to_vec());
        }
        match self {
            Slab::Owned(records) => records,
            Slab::Mapped { .. } => unreachable!("converted above"),
        }
    }

    /// Bytes held by this process alone (mapped records live in the shared page cache).
    pub(crate) fn owned_bytes(&self) -> usize {
        match self {
            Slab::Owned(records) => std::mem::size_of_val(records.as_slice()),
            Slab::Mapped { .. } => 0,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SectionEntry {
    name: String,
    offset: u64,
    len: u64,
    crc32: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Contents<K> {
    key: K,
    sections: Vec<SectionEntry>,
}

/// Collects sections in memory order and writes them to a file in one go.
pub(crate) struct Writer {
    sections: Vec<(String, Vec<u8>)>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Self {
            sections: Vec::new(),
        }
    }

    pub(crate) fn records<T: Pod>(&mut self, name: &str, records: &[T]) {
        self.sections
            .push((name.to_owned(), bytemuck::cast_slice(records).to_vec()));
    }

    pub(crate) fn value<V: Serialize>(&mut self, name: &str, value: &V) {
        let bytes = bincode::serialize(value).expect("in-memory structures serialise");
        self.sections.push((name.to_owned(), bytes));
    }

    /// Writes to a temporary file beside `path`, then renames it into place, so a reader never
    /// sees half a file.
    pub(crate) fn write<K: Serialize>(self, path: &Path, key: &K) -> Result<u64, StorageError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // The offsets depend on the table's length, which depends on the offsets' digits:
        // lay out with room to spare, then pad the table to the reserved length.
        let mut entries: Vec<SectionEntry> = self
            .sections
            .iter()
            .map(|(name, bytes)| SectionEntry {
                name: name.clone(),
                offset: u64::MAX,
                len: bytes.len() as u64,
                crc32: crc32fast::hash(bytes),
            })
            .collect();
        let reserved = serde_json::to_vec(&Contents {
            key,
            sections: entries.clone(),
        })
        .expect("contents serialise")
        .len();
        let mut offset = align(PRELUDE_LEN + reserved);
        for entry in &mut entries {
            entry.offset = offset as u64;
            offset = align(offset + entry.len as usize);
        }
        let mut contents = serde_json::to_vec(&Contents {
            key,
            sections: entries.clone(),
        })
        .expect("contents serialise");
        contents.resize(reserved, b' ');

        let temporary = path.with_extension(format!("tmp{}", std::process::id()));
        let mut out = BufWriter::new(File::create(&temporary)?);
        let mut prelude = [0u8; PRELUDE_LEN];
        prelude[..8].copy_from_slice(MAGIC);
        prelude[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        prelude[12..20].copy_from_slice(&(contents.len() as u64).to_le_bytes());
        prelude[20..24].copy_from_slice(&crc32fast::hash(&contents).to_le_bytes());
        out.write_all(&prelude)?;
        out.write_all(&contents)?;
        let mut written = PRELUDE_LEN + contents.len();
        for ((_, bytes), entry) in self.sections.iter().zip(&entries) {
            let padding = entry.offset as usize - written;
            out.write_all(&vec![0u8; padding])?;
            out.write_all(bytes)?;
            written = entry.offset as usize + bytes.len();
        }
        out.flush()?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&temporary, path)?;
        Ok(written as u64)
    }
}

fn align(offset: usize) -> usize {
    offset.div_ceil(SECTION_ALIGN) * SECTION_ALIGN
}

/// A mapped prepared file whose prelude, contents and key have been checked.
pub(crate) struct Reader {
    file: Arc<Mmap>,
    sections: HashMap<String, SectionEntry>,
}

impl Reader {
    /// Maps `path` and checks that it was prepared for `key`; every section's checksum is
    /// verified before use, so a damaged file is refused rather than trusted.
    pub(crate) fn open<K>(path: &Path, key: &K) -> Result<Self, StorageError>
    where
        K: Serialize + for<'de> Deserialize<'de> + PartialEq,
    {
        let file = File::open(path)?;
        // SAFETY: the file is only ever replaced by rename, never written in place, so the
        // mapping stays consistent for the process's lifetime; every byte read from it is
        // checked against the checksums below before use.
        let map = unsafe { Mmap::map(&file)? };
        let corrupt = |what: &str| StorageError::Corrupt(what.to_owned());
        if map.len() < PRELUDE_LEN || &map[..8] != MAGIC {
            return Err(corrupt("not a prepared network file"));
        }
        let version = u32::from_le_bytes(map[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION {
            return Err(StorageError::Stale);
        }
        let contents_len = u64::from_le_bytes(map[12..20].try_into().expect("8 bytes")) as usize;
        let contents_crc = u32::from_le_bytes(map[20..24].try_into().expect("4 bytes"));
        let contents = map
            .get(PRELUDE_LEN..PRELUDE_LEN + contents_len)
            .ok_or_else(|| corrupt("truncated table of contents"))?;
        if crc32fast::hash(contents) != contents_crc {
            return Err(corrupt("table of contents checksum"));
        }
        let contents: Contents<K> =
            serde_json::from_slice(contents).map_err(|_| corrupt("table of contents"))?;
        if contents.key != *key {
            return Err(StorageError::Stale);
        }
        let file = Arc::new(map);
        let mut sections = HashMap::new();
        // Every byte of the file is accounted for: sections follow each other in order and
        // the padding between them is zero, so no change anywhere goes unnoticed.
        let mut covered = PRELUDE_LEN + contents_len;
        for entry in &contents.sections {
            let start = entry.offset as usize;
            if start < covered || file.len() < start {
                return Err(corrupt("section layout"));
            }
            if file[covered..start].iter().any(|&b| b != 0) {
                return Err(corrupt("padding"));
            }
            covered = start.saturating_add(entry.len as usize);
        }
        if covered != file.len() {
            return Err(corrupt("file length"));
        }
        for entry in contents.sections {
            let end = entry.offset.checked_add(entry.len);
            if end.is_none_or(|end| end > file.len() as u64) {
                return Err(corrupt(&format!("section {} is truncated", entry.name)));
            }
            let bytes = &file[entry.offset as usize..(entry.offset + entry.len) as usize];
            if crc32fast::hash(bytes) != entry.crc32 {
                return Err(corrupt(&format!("section {} checksum", entry.name)));
            }
            sections.insert(entry.name.clone(), entry);
        }
        Ok(Self { file, sections })
    }

    fn section(&self, name: &str) -> Result<&SectionEntry, StorageError> {
        self.sections
            .get(name)
            .ok_or_else(|| StorageError::Corrupt(format!("section {name} is missing")))
    }

    pub(crate) fn records<T: Pod>(&self, name: &str) -> Result<Slab<T>, StorageError> {
        let entry = self.section(name)?;
        let (start, len) = (entry.offset as usize, entry.len as usize);
        let size = std::mem::size_of::<T>();
        if (size > 0 && len % size != 0) || start % std::mem::align_of::<T>() != 0 {
            return Err(StorageError::Corrupt(format!(
                "section {name} has a bad size"
            )));
        }
        Ok(Slab::Mapped {
            file: Arc::clone(&self.file),
            bytes: start..start + len,
        })
    }

    pub(crate) fn value<V: for<'de> Deserialize<'de>>(
        &self,
        name: &str,
    ) -> Result<V, StorageError> {
        let entry = self.section(name)?;
        let bytes = &self.file[entry.offset as usize..(entry.offset + entry.len) as usize];
        bincode::deserialize(bytes)
            .map_err(|e| StorageError::Corrupt(format!("section {name}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Key {
        extract: String,
    }

    fn key(extract: &str) -> Key {
        Key {
            extract: extract.to_owned(),
        }
    }

    fn sample(path: &Path) {
        let mut writer = Writer::new();
        writer.records("numbers", &[1u32, 2, 3, 4]);
        writer.value("names", &vec!["a".to_owned(), "b".to_owned()]);
        writer.records("pairs", &[[7u64, 8], [9, 10]]);
        writer.write(path, &key("x")).unwrap();
    }

    #[test]
    fn sections_round_trip_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.net");
        sample(&path);
        let reader = Reader::open(&path, &key("x")).unwrap();
        let numbers: Slab<u32> = reader.records("numbers").unwrap();
        assert_eq!(&numbers[..], &[1, 2, 3, 4]);
        assert_eq!(numbers.owned_bytes(), 0);
        let pairs: Slab<[u64; 2]> = reader.records("pairs").unwrap();
        assert_eq!(&pairs[..], &[[7, 8], [9, 10]]);
        let names: Vec<String> = reader.value("names").unwrap();
        assert_eq!(names, ["a", "b"]);
        assert!(matches!(
            reader.records::<u32>("missing"),
            Err(StorageError::Corrupt(_))
        ));
    }

    #[test]
    fn another_key_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.net");
        sample(&path);
        assert!(matches!(
            Reader::open(&path, &key("y")),
            Err(StorageError::Stale)
        ));
    }

    #[test]
    fn damage_and_truncation_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.net");
        sample(&path);
        let good = std::fs::read(&path).unwrap();
        // A flipped byte in the last section.
        let mut flipped = good.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 0x40;
        std::fs::write(&path, &flipped).unwrap();
        assert!(matches!(
            Reader::open(&path, &key("x")),
            Err(StorageError::Corrupt(_))
        ));
        // Cut short.
        std::fs::write(&path, &good[..good.len() - 10]).unwrap();
        assert!(matches!(
            Reader::open(&path, &key("x")),
            Err(StorageError::Corrupt(_))
        ));
        // Not ours at all.
        std::fs::write(&path, b"hello").unwrap();
        assert!(matches!(
            Reader::open(&path, &key("x")),
            Err(StorageError::Corrupt(_))
        ));
    }
}
