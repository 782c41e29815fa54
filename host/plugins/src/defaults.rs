//! The default components, built by `plugins/build.sh` and committed in
//! `plugins/dist/`, so a machine without a wasm toolchain runs them as is.

/// `courier:pricing/price-book@1.0.0`: rates from its settings document.
pub const STANDARD_PRICE_BOOK: &[u8] =
    include_bytes!("../../../plugins/dist/standard-price-book.wasm");

/// A realistic settings document for the standard price book (London,
/// GBP); markets ship their own.
pub const STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS: &str =
    include_str!("../../../plugins/standard-price-book/settings.example.json");

/// `courier:payments/payment-adapter@2.3.0`: the spec's sandbox cards.
pub const SANDBOX_PAYMENTS: &[u8] = include_bytes!("../../../plugins/dist/sandbox-payments.wasm");

/// `courier:webhooks/payload-shaper@1.0.0`: the spec's webhook body.
pub const STANDARD_SHAPER: &[u8] = include_bytes!("../../../plugins/dist/standard-shaper.wasm");

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use sha2::{Digest, Sha256};

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn hex(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The build inputs under `dir`, as paths relative to the repository.
    fn inputs(root: &Path, dir: &str, out: &mut Vec<String>) {
        let mut stack = vec![dir.to_owned()];
        while let Some(rel) = stack.pop() {
            for entry in std::fs::read_dir(root.join(&rel)).unwrap() {
                let entry = entry.unwrap();
                let name = entry.file_name().into_string().unwrap();
                let path = format!("{rel}/{name}");
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    if path != "plugins/target" && path != "plugins/dist" {
                        stack.push(path);
                    }
                } else if kind.is_file()
                    && (name.ends_with(".rs")
                        || name.ends_with(".wit")
                        || ["Cargo.toml", "Cargo.lock", "build.sh"].contains(&name.as_str()))
                {
                    out.push(path);
                }
            }
        }
    }

    /// Mirrors `source_listing` in `plugins/build.sh`: `sha256sum` lines for
    /// every build input, sorted by path, hashed.
    fn sources_hash(root: &Path) -> String {
        let mut paths = Vec::new();
        inputs(root, "wit", &mut paths);
        inputs(root, "plugins", &mut paths);
        paths.sort();
        let listing: String = paths
            .iter()
            .map(|p| format!("{}  {p}\n", hex(&std::fs::read(root.join(p)).unwrap())))
            .collect();
        hex(listing.as_bytes())
    }

    /// Fails when a component's sources (or the WIT) changed without
    /// `plugins/build.sh` being run, or when `dist/` was edited by hand.
    #[test]
    fn dist_is_built_from_current_sources() {
        let root = repo();
        let manifest = std::fs::read_to_string(root.join("plugins/dist/SOURCES")).unwrap();
        let recorded = |key: &str| {
            manifest
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
                .unwrap_or_else(|| panic!("plugins/dist/SOURCES has no {key}"))
                .to_owned()
        };
        assert_eq!(
            recorded("sources"),
            sources_hash(&root),
            "plugins/ or wit/ changed since plugins/dist was built: run plugins/build.sh"
        );
        for name in [
            "standard-price-book",
            "sandbox-payments",
            "standard-shaper",
            "hostile",
            "http-probe",
        ] {
            let file = format!("{name}.wasm");
            let bytes = std::fs::read(root.join("plugins/dist").join(&file)).unwrap();
            assert_eq!(
                recorded(&file),
                hex(&bytes),
                "plugins/dist/{file} is not the one built"
            );
        }
    }

    #[test]
    fn embedded_defaults_are_the_dist_files() {
        let dist = repo().join("plugins/dist");
        for (file, bytes) in [
            ("standard-price-book.wasm", super::STANDARD_PRICE_BOOK),
            ("sandbox-payments.wasm", super::SANDBOX_PAYMENTS),
            ("standard-shaper.wasm", super::STANDARD_SHAPER),
        ] {
            assert_eq!(std::fs::read(dist.join(file)).unwrap(), bytes, "{file}");
        }
    }
}
