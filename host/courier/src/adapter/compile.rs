//! `courier adapter build [DIR]`: builds an adapter crate into its component with the wasm
//! toolchain the project's own components are built with (`plugins/build.sh`): rustup's
//! `wasm32-wasip2` target when installed, else Debian's `rustc-web` with the standard library
//! built from source. Cargo's progress goes to stderr; the component's path, size, sha256 and
//! world are the result.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;
use thiserror::Error;

/// The Debian packages of the second toolchain (as `plugins/build.sh` installs them).
const DEBIAN_PACKAGES: &str = "rustc-web cargo-web rust-web-src rust-web-llvm lld wasi-libc";
/// A 64 KiB shadow stack, as the project's components have (see `plugins/build.sh`).
const LAYOUT: &str = "-C link-arg=-zstack-size=65536";

#[derive(Debug, Error)]
pub enum BuildError {
    #[error("reading {path}: {reason}")]
    Manifest { path: String, reason: String },
    #[error(
        "no wasm toolchain: install rustup's target (`rustup target add wasm32-wasip2`), or on \
         Debian `apt-get install {DEBIAN_PACKAGES}`"
    )]
    NoToolchain,
    #[error("cargo could not be started: {0}")]
    Spawn(String),
    #[error("cargo build failed ({0}); its messages are above")]
    Failed(String),
    #[error("the build made no {0}")]
    Missing(String),
    #[error("{path} is not a component: {reason}")]
    NotAComponent { path: String, reason: String },
}

impl BuildError {
    /// 1 when the crate does not build, 2 when the command or the machine is not ready.
    pub fn exit_code(&self) -> i32 {
        match self {
            BuildError::Failed(_) | BuildError::Missing(_) | BuildError::NotAComponent { .. } => 1,
            _ => 2,
        }
    }
}

/// The built component.
#[derive(Debug, Serialize)]
pub struct Built {
    pub component: PathBuf,
    pub size: usize,
    pub sha256: String,
    pub toolchain: String,
    /// The worlds it implements, by name.
    pub worlds: Vec<&'static str>,
}

enum Toolchain {
    Rustup,
    Debian,
}

impl Toolchain {
    fn find() -> Option<Self> {
        let rustup = Command::new("rustup")
            .args(["target", "list", "--installed"])
            .output()
            .is_ok_and(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .any(|l| l.trim() == "wasm32-wasip2")
            });
        if rustup {
            return Some(Toolchain::Rustup);
        }
        let debian = Path::new("/usr/bin/rustc").exists()
            && Path::new("/usr/lib/wasm32-wasi/libc.a").exists()
            && Command::new("dpkg")
                .args(["-s", "rust-web-src"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        debian.then_some(Toolchain::Debian)
    }

    fn describe(&self) -> &'static str {
        match self {
            Toolchain::Rustup => "rustup wasm32-wasip2",
            Toolchain::Debian => "debian rustc-web with build-std",
        }
    }

    fn cargo_build(&self, dir: &Path) -> Command {
        let mut command = Command::new("cargo");
        command
            .current_dir(dir)
            .args(["build", "--release", "--target", "wasm32-wasip2"]);
        match self {
            Toolchain::Rustup => {
                command.env("RUSTFLAGS", LAYOUT);
            }
            Toolchain::Debian => {
                // Debian's toolchain lives in /usr/bin and has no prebuilt std for the target:
                // std is built from rust-web-src, which needs RUSTC_BOOTSTRAP.
                let path = std::env::var("PATH").unwrap_or_default();
                command
                    .env("PATH", format!("/usr/bin:{path}"))
                    .env("RUSTC_BOOTSTRAP", "1")
                    .env("RUSTFLAGS", format!("-L /usr/lib/wasm32-wasi {LAYOUT}"))
                    .env_remove("RUSTUP_TOOLCHAIN")
                    .env_remove("RUSTC")
                    .arg("-Zbuild-std=std,panic_abort");
            }
        }
        command
    }
}

/// Builds the adapter crate in `dir`.
pub fn build(dir: &Path) -> Result<Built, BuildError> {
    let manifest_path = dir.join("Cargo.toml");
    let unreadable = |reason: String| BuildError::Manifest {
        path: manifest_path.display().to_string(),
        reason,
    };
    let manifest: toml::Table = std::fs::read_to_string(&manifest_path)
        .map_err(|e| unreadable(e.to_string()))?
        .parse()
        .map_err(|e: toml::de::Error| unreadable(e.to_string()))?;
    let name = manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str)
        .ok_or_else(|| unreadable("no [package] name".into()))?
        .to_owned();
    let toolchain = Toolchain::find().ok_or(BuildError::NoToolchain)?;
    // Cargo's own output is progress for the person waiting: stderr, keeping stdout the result.
    let status = toolchain
        .cargo_build(dir)
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .status()
        .map_err(|e| BuildError::Spawn(e.to_string()))?;
    if !status.success() {
        return Err(BuildError::Failed(status.to_string()));
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(target) => dir.join(target),
        None => dir.join("target"),
    };
    let component = target
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    let bytes = std::fs::read(&component)
        .map_err(|_| BuildError::Missing(component.display().to_string()))?;
    let info = courier_plugins::inspect(&bytes).map_err(|e| BuildError::NotAComponent {
        path: component.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(Built {
        component: std::path::absolute(&component).unwrap_or(component),
        size: info.size,
        sha256: info.sha256,
        worlds: info.worlds.iter().map(|w| w.name()).collect(),
        toolchain: toolchain.describe().to_owned(),
    })
}
