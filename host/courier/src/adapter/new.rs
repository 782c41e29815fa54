//! `courier adapter new NAME [--path DIR]`: a payment adapter crate of its own, written as
//! `DIR/NAME`, from the template (`plugins/adapter-template`, embedded in the binary): the
//! example provider's adapter with its unit tests and cassettes, the contract, the adapter kit
//! (the WIT boundary every adapter shares) and the `no_std` runtime, so it builds, tests and
//! certifies as it stands, outside Courier's sources.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use thiserror::Error;

static TEMPLATE: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../plugins/adapter-template");
static KIT: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../plugins/adapter-kit/src");
const GUEST_RT: &str = include_str!("../../../../plugins/guest-rt/src/lib.rs");
const CONTRACT: &str = include_str!("../../../../wit/payments/payments.wit");
/// The versions the project's own components are built with.
const LOCKFILE: &str = include_str!("../../../../plugins/Cargo.lock");

/// Where the kit's component finds the contract in Courier's sources, and in the new crate
/// (which keeps the kit in `adapter-kit/` and the contract in `wit/`).
const KIT_WIT_PATH: &str = r#"path: "../../wit/payments","#;
const CRATE_KIT_WIT_PATH: &str = r#"path: "../wit","#;

#[derive(Debug, Error)]
pub enum NewError {
    #[error(
        "{0:?} is not a crate name for an adapter: lower-case letters, digits and dashes, \
         starting with a letter, at most 64"
    )]
    Name(String),
    #[error("{0} already exists: choose another name or --path")]
    Exists(String),
    #[error("writing {path}: {reason}")]
    Write { path: String, reason: String },
}

/// Writes the crate `name` under `parent`; returns its directory and the files written.
pub fn create(name: &str, parent: &Path) -> Result<(PathBuf, Vec<String>), NewError> {
    check_name(name)?;
    let dir = parent.join(name);
    if dir.exists() {
        return Err(NewError::Exists(dir.display().to_string()));
    }
    let files = files(name);
    for (path, contents) in &files {
        let target = dir.join(path);
        let write = |reason: String| NewError::Write {
            path: target.display().to_string(),
            reason,
        };
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).map_err(|e| write(e.to_string()))?;
        }
        std::fs::write(&target, contents).map_err(|e| write(e.to_string()))?;
    }
    Ok((dir, files.into_iter().map(|(path, _)| path).collect()))
}

fn check_name(name: &str) -> Result<(), NewError> {
    let fits = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !["guest-rt", "adapter-kit"].contains(&name);
    if fits {
        Ok(())
    } else {
        Err(NewError::Name(name.to_owned()))
    }
}

/// Every file of the new crate, by its path in it.
fn files(name: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    collect(&TEMPLATE, &mut files);
    // The template's manifest takes its settings from Courier's plugins workspace; the new
    // crate is a workspace of its own.
    files.retain(|(path, _)| path != "Cargo.toml");
    let mut kit = Vec::new();
    collect(&KIT, &mut kit);
    files.extend(kit.into_iter().map(|(path, contents)| {
        let contents = if path == "component.rs" {
            contents.replace(KIT_WIT_PATH, CRATE_KIT_WIT_PATH)
        } else {
            contents
        };
        (format!("adapter-kit/src/{path}"), contents)
    }));
    files.extend([
        ("Cargo.toml".to_owned(), manifest(name)),
        ("Cargo.lock".to_owned(), LOCKFILE.to_owned()),
        (".gitignore".to_owned(), "/target\n".to_owned()),
        ("wit/payments.wit".to_owned(), CONTRACT.to_owned()),
        ("adapter-kit/Cargo.toml".to_owned(), KIT_MANIFEST.to_owned()),
        ("guest-rt/src/lib.rs".to_owned(), GUEST_RT.to_owned()),
        (
            "guest-rt/Cargo.toml".to_owned(),
            GUEST_RT_MANIFEST.to_owned(),
        ),
    ]);
    files.sort();
    files
}

fn collect(dir: &Dir<'_>, files: &mut Vec<(String, String)>) {
    for file in dir.files() {
        if let Some(text) = file.contents_utf8() {
            files.push((file.path().display().to_string(), text.to_owned()));
        }
    }
    for sub in dir.dirs() {
        collect(sub, files);
    }
}

fn manifest(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false
description = "A payment adapter for Courier (courier:payments/payment-adapter@2.3.0)"

[lib]
crate-type = ["cdylib"]

[dependencies]
adapter-kit = {{ path = "adapter-kit" }}
serde_json = {{ version = "1", default-features = false, features = ["alloc"] }}
# HMAC-SHA256 of the provider's notifications, without std.
hmac = {{ version = "0.12", default-features = false }}
sha2 = {{ version = "0.10", default-features = false }}

[workspace]

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = true
debug = false
"#
    )
}

/// The kit as the new crate keeps it: its own manifest, the versions Courier's are built with.
const KIT_MANIFEST: &str = r#"[package]
name = "adapter-kit"
version = "1.0.0"
edition = "2024"
publish = false
description = "What every payment adapter shares: the contract's types, the host's HTTP, form encoding, and the WIT boundary"

[target.'cfg(target_family = "wasm")'.dependencies]
guest-rt = { path = "../guest-rt" }
wit-bindgen = { version = "0.46", default-features = false, features = ["macros", "realloc"] }

# wit-bindgen's `std_feature` option gates code on a `std` feature this crate deliberately
# lacks (it is no_std on wasm).
[lints.rust]
unexpected_cfgs = { level = "warn", check-cfg = ['cfg(feature, values("std"))'] }
"#;

const GUEST_RT_MANIFEST: &str = r#"[package]
name = "guest-rt"
version = "1.0.0"
edition = "2024"
publish = false
description = "What a no_std component needs on wasm32-wasip2: allocator, panic handler, cabi_realloc"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_crate_names() {
        for good in ["acme-pay", "pay2", "a"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Acme",
            "2pay",
            "acme_pay",
            "acme-",
            "guest-rt",
            "adapter-kit",
            "a/b",
            "../x",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_crate_has_the_template_the_contract_and_the_runtime_and_finds_its_contract() {
        let files = files("acme-pay");
        let named = |path: &str| {
            files
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, c)| c.as_str())
                .unwrap_or_else(|| panic!("{path} is missing"))
        };
        assert!(named("Cargo.toml").contains(r#"name = "acme-pay""#));
        assert!(named("src/lib.rs").contains("export_adapter!"));
        let component = named("adapter-kit/src/component.rs");
        assert!(component.contains(CRATE_KIT_WIT_PATH));
        assert!(!component.contains(KIT_WIT_PATH));
        assert!(named("adapter-kit/src/lib.rs").contains("pub trait PaymentAdapter"));
        assert!(named("wit/payments.wit").contains("package courier:payments@"));
        assert!(named("guest-rt/src/lib.rs").contains("cabi_realloc"));
        assert!(named("certify/config.json").contains("api_base"));
        assert_eq!(
            files
                .iter()
                .filter(|(p, _)| p.starts_with("certify/cassettes/"))
                .count(),
            17
        );
        assert!(named("src/notifications.rs").contains("example-pay-signature"));
    }

    /// The new crate's dependencies are the ones the project's components are built with.
    #[test]
    fn the_manifest_asks_for_the_workspace_s_versions() {
        let workspace: toml::Table =
            toml::from_str(include_str!("../../../../plugins/Cargo.toml")).unwrap();
        let ours: toml::Table = toml::from_str(&manifest("acme-pay")).unwrap();
        let kit: toml::Table = toml::from_str(KIT_MANIFEST).unwrap();
        let version = |table: &toml::Table, path: &[&str]| {
            let mut at = table;
            for key in path {
                at = at[*key].as_table().unwrap();
            }
            at["version"].as_str().unwrap().to_owned()
        };
        let wasm_deps = ["target", "cfg(target_family = \"wasm\")", "dependencies"];
        assert_eq!(
            version(&kit, &[wasm_deps.as_slice(), &["wit-bindgen"]].concat()),
            version(&workspace, &["workspace", "dependencies", "wit-bindgen"])
        );
        assert_eq!(
            version(&ours, &["dependencies", "serde_json"]),
            version(&workspace, &["workspace", "dependencies", "serde_json"])
        );
        let template: toml::Table = toml::from_str(include_str!(
            "../../../../plugins/adapter-template/Cargo.toml"
        ))
        .unwrap();
        for dependency in ["hmac", "sha2"] {
            assert_eq!(
                version(&ours, &["dependencies", dependency]),
                version(&template, &["dependencies", dependency]),
                "{dependency}"
            );
        }
    }
}
