//! `cargo xtask serve` and `cargo xtask test`: the README's two commands. Each installs what is
//! missing on a Debian machine (as root, or through `sudo`; otherwise it prints the one command
//! to run), then runs the service or every test. `cargo xtask setup [serve|test|ci]` only
//! installs; CI (`.ci/run`) uses `setup ci`, which adds what the CI checks need.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// What a use of the repository needs from the machine.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Serve,
    Test,
    Ci,
}

/// A program the machine must have, and the Debian package that brings it.
struct Need {
    what: &'static str,
    packages: &'static [&'static str],
    present: fn() -> bool,
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|folder| folder.join(program).is_file())
    })
}

/// A wasm32-wasip2 toolchain, as `plugins/build.sh` and `courier adapter build` look for one:
/// rustup's target, or Debian's rustc-web with the standard library's source and wasi-libc.
fn wasm_toolchain() -> bool {
    let rustup = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == "wasm32-wasip2")
        });
    rustup
        || (std::path::Path::new("/usr/lib/wasm32-wasi/libc.a").is_file()
            && Command::new("dpkg")
                .args(["-s", "rust-web-src"])
                .output()
                .is_ok_and(|o| o.status.success()))
}

/// The PostgreSQL server binaries: on the path, or where Debian keeps them.
fn postgres_server() -> bool {
    on_path("initdb")
        || std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
            versions
                .flatten()
                .any(|v| v.path().join("bin/initdb").is_file())
        })
}

fn needs(purpose: Purpose) -> Vec<Need> {
    let mut needs = vec![Need {
        what: "the PostgreSQL server (initdb, pg_ctl)",
        packages: &["postgresql"],
        present: postgres_server,
    }];
    if purpose == Purpose::Serve {
        return needs;
    }
    needs.extend([
        Need {
            what: "headless Chromium (the browser tests)",
            packages: &["chromium"],
            present: || on_path("chromium"),
        },
        Need {
            what: "chromedriver (WebDriver for Chromium)",
            packages: &["chromium-driver"],
            present: || on_path("chromedriver"),
        },
        Need {
            what: "npm (the browser tests' accessibility checker, axe-core)",
            packages: &["npm"],
            present: || on_path("npm"),
        },
        Need {
            what: "HAProxy (the fleet tests)",
            packages: &["haproxy"],
            present: || on_path("haproxy"),
        },
        Need {
            what: "Python with venv (the meal-delivery benchmark's published evaluator)",
            packages: &["python3-venv"],
            present: python_venv,
        },
        Need {
            what: "a wasm toolchain (the partner kit's test builds an adapter)",
            packages: &[
                "rustc-web",
                "cargo-web",
                "rust-web-src",
                "rust-web-llvm",
                "lld",
                "wasi-libc",
            ],
            present: wasm_toolchain,
        },
    ]);
    if purpose == Purpose::Ci {
        needs.extend([Need {
            what: "curl (the fuzz run)",
            packages: &["curl"],
            present: || on_path("curl"),
        }]);
    }
    needs
}

/// `python3 -m venv`: for the evaluator's packages (and, in CI, Schemathesis).
fn python_venv() -> bool {
    Command::new("python3")
        .args(["-m", "venv", "--help"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn can_sudo() -> bool {
    on_path("sudo")
        && Command::new("sudo")
            .args(["-n", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .map_err(|e| format!("{shown} could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({status})"))
    }
}

/// Installs the missing packages, or says how.
fn install(purpose: Purpose) -> Result<(), String> {
    let needs = needs(purpose);
    let missing: Vec<&Need> = needs.iter().filter(|n| !(n.present)()).collect();
    if !missing.is_empty() {
        let packages: Vec<&str> = missing.iter().flat_map(|n| n.packages).copied().collect();
        for need in &missing {
            eprintln!(
                "xtask: missing {} (Debian {})",
                need.what,
                need.packages.join(" ")
            );
        }
        let apt = on_path("apt-get");
        let sudo = if is_root() {
            Some(false)
        } else if can_sudo() {
            Some(true)
        } else {
            None
        };
        match (apt, sudo) {
            (true, Some(with_sudo)) => {
                let apt_get = |args: &[&str]| {
                    let mut command = if with_sudo {
                        let mut c = Command::new("sudo");
                        c.arg("apt-get");
                        c
                    } else {
                        Command::new("apt-get")
                    };
                    command.env("DEBIAN_FRONTEND", "noninteractive").args(args);
                    command
                };
                eprintln!("xtask: installing {}", packages.join(" "));
                run(&mut apt_get(&["update", "-q"]))?;
                let mut install = apt_get(&["install", "-y", "-q"]);
                install.args(&packages);
                run(&mut install)?;
            }
            _ => {
                return Err(format!(
                    "install them first, then run this again:\n    sudo apt-get install -y {}",
                    packages.join(" ")
                ));
            }
        }
    }
    if purpose == Purpose::Ci && !on_path("sqlx") {
        install_sqlx_cli()?;
    }
    if purpose != Purpose::Serve {
        install_axe_core()?;
        install_mdrp_evaluator()?;
    }
    Ok(())
}

/// axe-core, the accessibility checker the browser tests run inside Chromium, from the npm
/// registry into `target/test-tools/` (read there by `tests/e2e/support/browser.rs`).
const AXE_CORE: &str = "axe-core@4.10.3";

fn install_axe_core() -> Result<(), String> {
    let tools = root().join("target/test-tools");
    if tools.join("node_modules/axe-core/axe.min.js").is_file() {
        return Ok(());
    }
    eprintln!("xtask: installing {AXE_CORE}");
    std::fs::create_dir_all(&tools).map_err(|e| format!("{}: {e}", tools.display()))?;
    run(Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(&tools)
        .args(["--no-save", "--no-audit", "--no-fund", "--silent", AXE_CORE]))
}

/// The meal-delivery benchmark's evaluator (`../shared/data/mdrp/MDRP_code`, run by
/// `tests/e2e/simulate.rs`) needs pandas and numpy: from PyPI into a virtual environment under
/// `target/test-tools/mdrp-venv/`.
const MDRP_EVALUATOR_PACKAGES: [&str; 2] = ["pandas==2.2.3", "numpy==2.2.6"];

fn install_mdrp_evaluator() -> Result<(), String> {
    let venv = root().join("target/test-tools/mdrp-venv");
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args(["-c", "import pandas, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ready {
        return Ok(());
    }
    eprintln!("xtask: installing {}", MDRP_EVALUATOR_PACKAGES.join(" "));
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(MDRP_EVALUATOR_PACKAGES))
}

/// sqlx-cli, which compares the compile-checked queries with a migrated database
/// (`.ci/sqlx-prepare`), built outside the project's target folder.
fn install_sqlx_cli() -> Result<(), String> {
    eprintln!("xtask: installing sqlx-cli");
    let build = std::env::temp_dir().join(format!("sqlx-cli-build-{}", std::process::id()));
    let installed = run(Command::new(cargo())
        .env("CARGO_TARGET_DIR", &build)
        .args([
            "install",
            "-q",
            "sqlx-cli",
            "--version",
            "0.8.6",
            "--locked",
        ])
        .args(["--no-default-features", "--features", "postgres,rustls"]));
    let _ = std::fs::remove_dir_all(&build);
    installed
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The repository's root: from where `cargo run` says this package is now, else where it was
/// built (a target folder shared by two copies of the repository keeps one build of the xtask,
/// made in either).
fn root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("../..")
}

/// Replaces this process with `cargo ARGS`, run from the repository's root, in the caller's
/// environment: without what `cargo run` set for the xtask itself ([`set_by_cargo_run`]), so
/// the nested cargo sees what a plain `cargo run` from the shell sees and finds its build
/// fresh, and a plain `cargo run` afterwards finds the nested one's.
fn exec_cargo(args: &[&str], more: Vec<String>) -> ExitCode {
    let mut command = Command::new(cargo());
    command.current_dir(root()).args(args).args(more);
    let paths = CargoPaths::of_this_run();
    for (name, value) in std::env::vars_os() {
        match set_by_cargo_run(&name.to_string_lossy(), &value, &paths) {
            Setting::Keep => {}
            Setting::Remove => {
                command.env_remove(&name);
            }
            Setting::Restore(original) => {
                command.env(&name, original);
            }
        }
    }
    let error = command.exec();
    eprintln!("xtask: cargo could not start: {error}");
    ExitCode::FAILURE
}

/// What to do with a variable of the xtask's environment before the nested cargo starts.
#[derive(Debug, PartialEq, Eq)]
enum Setting {
    Keep,
    Remove,
    /// The value the caller had, before `cargo run` added to it.
    Restore(OsString),
}

/// Where `cargo run` takes the library path entries it adds from: the target folder (its
/// profile folders and their `deps`) and the toolchain's own libraries.
struct CargoPaths {
    target: PathBuf,
    toolchain: Option<PathBuf>,
}

impl CargoPaths {
    /// This run's: the target folder cargo built the xtask in, and the toolchain of the cargo
    /// that runs it (`$CARGO` is `<toolchain>/bin/cargo`).
    fn of_this_run() -> Self {
        CargoPaths {
            target: std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| root().join("target"), PathBuf::from),
            toolchain: std::env::var_os("CARGO").and_then(|cargo| {
                Path::new(&cargo)
                    .parent()
                    .and_then(Path::parent)
                    .map(Path::to_path_buf)
            }),
        }
    }

    fn added(&self, entry: &Path) -> bool {
        entry.starts_with(&self.target)
            || self
                .toolchain
                .as_ref()
                .is_some_and(|toolchain| entry.starts_with(toolchain))
    }
}

/// Whether `cargo run` set `name` for the xtask (cargo's documented run-time variables: the
/// package's facts, and the dynamic library path it extends with `paths`), and so what the
/// nested cargo should see instead.
fn set_by_cargo_run(name: &str, value: &std::ffi::OsStr, paths: &CargoPaths) -> Setting {
    const PACKAGE: [&str; 5] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
    ];
    if PACKAGE.contains(&name) || name.starts_with("CARGO_PKG_") || name == "OUT_DIR" {
        return Setting::Remove;
    }
    if name != "LD_LIBRARY_PATH" {
        return Setting::Keep;
    }
    let kept: Vec<PathBuf> = std::env::split_paths(value)
        .filter(|entry| !paths.added(entry))
        .collect();
    if kept.is_empty() {
        Setting::Remove
    } else {
        Setting::Restore(std::env::join_paths(kept).unwrap_or_default())
    }
}

const USAGE: &str = "usage: cargo xtask serve [ARGS…]   install what is missing, run the service
       cargo xtask test [ARGS…]    install what is missing, run every test
       cargo xtask setup [serve|test|ci]   only install";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let (purpose, then): (Purpose, Option<&[&str]>) = match command.as_str() {
        "serve" => (
            Purpose::Serve,
            Some(&["run", "--release", "-p", "courier", "--", "serve"]),
        ),
        "test" => (Purpose::Test, Some(&["test", "--workspace"])),
        "setup" => {
            let purpose = match rest.first().map(String::as_str) {
                None | Some("test") => Purpose::Test,
                Some("serve") => Purpose::Serve,
                Some("ci") => Purpose::Ci,
                Some(other) => {
                    eprintln!("xtask: setup for {other:?}? one of serve, test, ci\n{USAGE}");
                    return ExitCode::from(2);
                }
            };
            (purpose, None)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(reason) = install(purpose) {
        eprintln!("xtask: {reason}");
        return ExitCode::FAILURE;
    }
    match then {
        Some(cargo_args) => exec_cargo(cargo_args, rest),
        None => ExitCode::SUCCESS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packages(purpose: Purpose) -> Vec<&'static str> {
        needs(purpose)
            .iter()
            .flat_map(|n| n.packages)
            .copied()
            .collect()
    }

    /// What `cargo run -p xtask` adds to the caller's environment (as cargo 1.95 does), and
    /// what the nested cargo must see instead: the caller's own. Cargo compares the variables
    /// build scripts name (ring's names `CARGO_PKG_NAME` and the like) with its own
    /// environment, so any of them left over makes the nested build differ from a plain one.
    #[test]
    fn the_nested_cargo_sees_the_caller_s_environment() {
        let toolchain = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu";
        let paths = CargoPaths {
            target: "/work/target".into(),
            toolchain: Some(toolchain.into()),
        };
        let added_paths = format!(
            "/work/target/debug:/work/target/debug/deps:{toolchain}/lib/rustlib/x86_64-unknown-linux-gnu/lib:{toolchain}/lib"
        );
        let by_cargo_run = [
            ("CARGO_MANIFEST_DIR", "/work/main/host/xtask".to_owned()),
            (
                "CARGO_MANIFEST_PATH",
                "/work/main/host/xtask/Cargo.toml".to_owned(),
            ),
            ("CARGO_PKG_NAME", "xtask".to_owned()),
            ("CARGO_PKG_VERSION", "0.1.0".to_owned()),
            ("CARGO_PKG_RUST_VERSION", "1.95".to_owned()),
            ("CARGO_PKG_AUTHORS", String::new()),
            ("CARGO_CRATE_NAME", "xtask".to_owned()),
            ("CARGO_BIN_NAME", "xtask".to_owned()),
            ("CARGO_PRIMARY_PACKAGE", "1".to_owned()),
        ];
        for (name, value) in &by_cargo_run {
            assert_eq!(
                set_by_cargo_run(name, value.as_ref(), &paths),
                Setting::Remove,
                "{name}"
            );
        }
        // The library path: cargo's entries go, the caller's own stay.
        assert_eq!(
            set_by_cargo_run("LD_LIBRARY_PATH", added_paths.as_ref(), &paths),
            Setting::Remove
        );
        assert_eq!(
            set_by_cargo_run(
                "LD_LIBRARY_PATH",
                format!("{added_paths}:/opt/vendor/lib").as_ref(),
                &paths
            ),
            Setting::Restore("/opt/vendor/lib".into())
        );
        // What the caller set, cargo's own settings included, stays as it is.
        for (name, value) in [
            ("CARGO_TARGET_DIR", "/work/target"),
            ("CARGO_HOME", "/root/.cargo"),
            ("CARGO_PROFILE_RELEASE_LTO", "thin"),
            ("DATABASE_URL", "postgres://db/courier"),
            ("RUSTFLAGS", "-C target-cpu=native"),
            ("PATH", "/usr/bin"),
        ] {
            assert_eq!(
                set_by_cargo_run(name, value.as_ref(), &paths),
                Setting::Keep,
                "{name}"
            );
        }
    }

    #[test]
    fn each_command_installs_what_it_runs_and_no_more() {
        assert_eq!(packages(Purpose::Serve), ["postgresql"]);
        assert_eq!(
            packages(Purpose::Test),
            [
                "postgresql",
                "chromium",
                "chromium-driver",
                "npm",
                "haproxy",
                "python3-venv",
                "rustc-web",
                "cargo-web",
                "rust-web-src",
                "rust-web-llvm",
                "lld",
                "wasi-libc"
            ]
        );
        assert_eq!(
            packages(Purpose::Ci),
            [
                "postgresql",
                "chromium",
                "chromium-driver",
                "npm",
                "haproxy",
                "python3-venv",
                "rustc-web",
                "cargo-web",
                "rust-web-src",
                "rust-web-llvm",
                "lld",
                "wasi-libc",
                "curl"
            ]
        );
    }

    #[test]
    fn a_program_is_found_on_the_path_only() {
        assert!(on_path("sh"));
        assert!(!on_path("no-such-program-anywhere"));
    }
}
