//! `cargo xtask serve` and `cargo xtask test`: the README's two commands. Each installs what is
//! missing on a Debian machine (as root, or through `sudo`; otherwise it prints the one command
//! to run), then runs the service or every test. `cargo xtask setup [serve|test|ci]` only
//! installs; CI (`.ci/run`) uses `setup ci`, which adds what the CI checks need.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
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
        needs.extend([
            Need {
                what: "curl (the fuzz run)",
                packages: &["curl"],
                present: || on_path("curl"),
            },
            Need {
                what: "Python with venv (Schemathesis)",
                packages: &["python3-venv"],
                present: || {
                    Command::new("python3")
                        .args(["-m", "venv", "--help"])
                        .output()
                        .is_ok_and(|o| o.status.success())
                },
            },
        ]);
    }
    needs
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
    }
    Ok(())
}

/// axe-core, the accessibility checker the browser tests run inside Chromium, from the npm
/// registry into `target/test-tools/` (read there by `tests/e2e/support/browser.rs`).
const AXE_CORE: &str = "axe-core@4.10.3";

fn install_axe_core() -> Result<(), String> {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools");
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

/// Replaces this process with `cargo ARGS`, run from the repository's root.
fn exec_cargo(args: &[&str], more: Vec<String>) -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let error = Command::new(cargo())
        .current_dir(root)
        .args(args)
        .args(more)
        .exec();
    eprintln!("xtask: cargo could not start: {error}");
    ExitCode::FAILURE
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
                "rustc-web",
                "cargo-web",
                "rust-web-src",
                "rust-web-llvm",
                "lld",
                "wasi-libc",
                "curl",
                "python3-venv"
            ]
        );
    }

    #[test]
    fn a_program_is_found_on_the_path_only() {
        assert!(on_path("sh"));
        assert!(!on_path("no-such-program-anywhere"));
    }
}
