//! What a component file is, without compiling or running it: which of our
//! worlds it implements, what it imports, its size and hash.

use wasmparser::{Encoding, Parser, Payload, Validator, WasmFeatures};

use crate::PluginError;

/// The worlds this host serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum World {
    PriceBook,
    PaymentAdapter,
    PayloadShaper,
}

impl World {
    pub const ALL: [World; 3] = [
        World::PriceBook,
        World::PaymentAdapter,
        World::PayloadShaper,
    ];

    /// e.g. `courier:pricing/price-book@1.0.0`.
    pub fn name(self) -> &'static str {
        match self {
            World::PriceBook => crate::pricing::WORLD,
            World::PaymentAdapter => crate::payments::WORLD,
            World::PayloadShaper => crate::webhooks::WORLD,
        }
    }

    /// e.g. `courier:pricing@1.0.0`.
    pub fn package(self) -> &'static str {
        match self {
            World::PriceBook => "courier:pricing@1.0.0",
            World::PaymentAdapter => "courier:payments@2.3.0",
            World::PayloadShaper => "courier:webhooks@1.0.0",
        }
    }

    /// The interfaces a component may export to implement the world: one per version the
    /// host runs.
    fn exports(self) -> &'static [&'static str] {
        match self {
            World::PriceBook => &["courier:pricing/book@1.0.0"],
            World::PaymentAdapter => &[
                "courier:payments/adapter@2.3.0",
                "courier:payments/adapter@2.2.0",
                "courier:payments/adapter@2.1.0",
                "courier:payments/adapter@2.0.0",
            ],
            World::PayloadShaper => &["courier:webhooks/shaper@1.0.0"],
        }
    }

    /// Imports the host serves for this world (its capabilities, in every version it runs),
    /// besides the package's type-only interfaces.
    fn grants(self) -> &'static [&'static str] {
        match self {
            World::PriceBook | World::PayloadShaper => &[],
            World::PaymentAdapter => &[
                "courier:payments/outbound-http@2.3.0",
                "courier:payments/config@2.3.0",
                "courier:payments/log@2.3.0",
                "courier:payments/outbound-http@2.2.0",
                "courier:payments/config@2.2.0",
                "courier:payments/log@2.2.0",
                "courier:payments/outbound-http@2.1.0",
                "courier:payments/config@2.1.0",
                "courier:payments/log@2.1.0",
                "courier:payments/outbound-http@2.0.0",
                "courier:payments/config@2.0.0",
            ],
        }
    }

    fn types(self) -> &'static [&'static str] {
        match self {
            World::PriceBook => &["courier:pricing/types@1.0.0"],
            World::PaymentAdapter => &[
                "courier:payments/types@2.3.0",
                "courier:payments/types@2.2.0",
                "courier:payments/types@2.1.0",
                "courier:payments/types@2.0.0",
            ],
            World::PayloadShaper => &["courier:webhooks/types@1.0.0"],
        }
    }
}

/// One import of a component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub name: String,
    /// Served by the host for the component's world(s). Anything else
    /// (e.g. WASI interfaces the toolchain's standard library declares) is
    /// linked to a function that traps when called.
    pub granted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInfo {
    pub size: usize,
    /// Lower-case hex.
    pub sha256: String,
    /// The worlds whose interface it exports (by name; loading it checks
    /// the full types).
    pub worlds: Vec<World>,
    pub imports: Vec<Import>,
    pub exports: Vec<String>,
}

/// Validates `bytes` as a component and reads its outer imports and exports.
pub fn inspect(bytes: &[u8]) -> Result<ComponentInfo, PluginError> {
    let invalid = |e: wasmparser::BinaryReaderError| PluginError::Compile(e.to_string());
    Validator::new_with_features(WasmFeatures::all())
        .validate_all(bytes)
        .map_err(invalid)?;
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    // Nested modules and components have their own imports and exports;
    // only the outermost ones (depth 1) are the component's interface.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(invalid)? {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding != Encoding::Component {
                    return Err(PluginError::Compile(
                        "a core wasm module, not a component".into(),
                    ));
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    imports.push(import.map_err(invalid)?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    exports.push(export.map_err(invalid)?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    let worlds: Vec<World> = World::ALL
        .into_iter()
        .filter(|w| exports.iter().any(|e| w.exports().contains(&e.as_str())))
        .collect();
    let imports = imports
        .into_iter()
        .map(|name| Import {
            granted: worlds
                .iter()
                .any(|w| w.types().contains(&name.as_str()) || w.grants().contains(&name.as_str())),
            name,
        })
        .collect();
    Ok(ComponentInfo {
        size: bytes.len(),
        sha256: crate::engine::sha256_hex(bytes),
        worlds,
        imports,
        exports,
    })
}
