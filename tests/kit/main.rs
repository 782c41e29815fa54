//! The partner kit end to end, as a new partner uses it with nothing but the docs:
//! `courier adapter new`, `build` and `certify` against the template's example cassettes. Two
//! deliberately broken adapters are made from the same template, one that approves on a 5xx
//! and one that drops the idempotency key, and certify must fail each for its fault.
//!
//! It builds WebAssembly, so it is a test binary of its own: cargo runs test binaries one
//! after another, and these builds do not compete with the service's tests for the cores.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_courier");

/// Where the kit's builds go: kept between runs, so only the first builds the standard library.
fn shared_target() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/adapter-kit"
    ))
}

fn courier(args: &[&str]) -> Output {
    Command::new(BINARY)
        .args(args)
        .env("CARGO_TARGET_DIR", shared_target())
        .env("COURIER_DATA_DIR", shared_target().join("data"))
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `courier adapter build DIR`: the component's path.
fn build(dir: &Path) -> PathBuf {
    let out = courier(&["adapter", "build", &dir.display().to_string()]);
    assert!(out.status.success(), "build failed: {}", text(&out.stderr));
    let built: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        built["worlds"][0], "courier:payments/payment-adapter@2.3.0",
        "{built}"
    );
    assert_eq!(built["sha256"].as_str().unwrap().len(), 64);
    PathBuf::from(built["component"].as_str().unwrap())
}

/// `courier adapter certify` with the crate's own cassettes: exit code, lines, summary.
fn certify(component: &Path, dir: &Path) -> (i32, Vec<String>, Value) {
    let out = courier(&[
        "adapter",
        "certify",
        &component.display().to_string(),
        "--config",
        &dir.join("certify/config.json").display().to_string(),
        "--cassettes",
        &dir.join("certify/cassettes").display().to_string(),
        "--deadline-ms",
        "500",
    ]);
    let stdout = text(&out.stdout);
    let mut lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    let summary = lines
        .pop()
        .and_then(|last| serde_json::from_str(&last).ok())
        .unwrap_or_else(|| panic!("no summary: {stdout}{}", text(&out.stderr)));
    (out.status.code().unwrap_or(-1), lines, summary)
}

/// A copy of the crate at `from`, named `name`, with `fault` (a snippet of its source, and
/// what replaces it) written into `file`.
fn broken(from: &Path, name: &str, file: &str, fault: (&str, &str)) -> PathBuf {
    let to = from.with_file_name(name);
    let copied = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(&to)
        .status()
        .unwrap();
    assert!(copied.success());
    let manifest = to.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("name = \"acme-pay\"", &format!("name = \"{name}\"")),
    )
    .unwrap();
    let source = to.join(file);
    let text = std::fs::read_to_string(&source).unwrap();
    assert!(text.contains(fault.0), "{file} no longer has {:?}", fault.0);
    std::fs::write(&source, text.replacen(fault.0, fault.1, 1)).unwrap();
    to
}

fn failures(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.starts_with("FAIL")).collect()
}

#[test]
fn a_new_adapter_builds_and_certifies_and_broken_ones_fail_for_their_fault() {
    let work = std::env::temp_dir().join(format!("courier-kit-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let started = Instant::now();

    let out = courier(&[
        "adapter",
        "new",
        "acme-pay",
        "--path",
        &work.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The crate is DIR/NAME, as the help says.
    let crate_dir = work.join("acme-pay");
    let help = text(&courier(&["adapter", "new", "--help"]).stdout);
    assert!(help.contains("DIR/NAME"), "{help}");
    assert!(crate_dir.join("src/operations.rs").exists());
    // A second time the crate is there: refused, nothing overwritten.
    let again = courier(&[
        "adapter",
        "new",
        "acme-pay",
        "--path",
        &work.display().to_string(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("already exists"));

    let component = build(&crate_dir);
    let (code, lines, summary) = certify(&component, &crate_dir);
    assert_eq!(code, 0, "{:#?}", failures(&lines));
    assert!(summary["scenarios"].as_u64().unwrap() >= 25, "{summary}");
    eprintln!(
        "adapter new, build and certify: {:.0?} ({summary})",
        started.elapsed()
    );

    // One drops the idempotency key: every money move fails for it.
    let no_key = broken(
        &crate_dir,
        "drops-the-key",
        "src/provider.rs",
        (
            r#"headers.push(("idempotency-key".to_string(), key.to_string()));"#,
            "let _ = key;",
        ),
    );
    let (code, lines, _) = certify(&build(&no_key), &no_key);
    assert_eq!(code, 1);
    assert!(
        failures(&lines).iter().any(|l| l.starts_with(
            "FAIL  hold-approved: replayed, answers approved: POST /v1/payments moves money \
             without the host's idempotency key"
        )),
        "{lines:#?}"
    );

    // One approves when the provider answers 5xx.
    let careless = broken(
        &crate_dir,
        "approves-on-5xx",
        "src/operations.rs",
        (
            "    match failure {\n        Failure::Declined",
            "    match failure {\n        Failure::Unreachable(m) if m.starts_with(\"the provider answered 5\") => {\n            Outcome::Approved(m)\n        }\n        Failure::Declined",
        ),
    );
    let (code, lines, _) = certify(&build(&careless), &careless);
    assert_eq!(code, 1);
    let failed = failures(&lines);
    for scenario in [
        "FAIL  hold-approved: the provider answers 500: unreachable",
        "FAIL  capture-approved: the provider answers 503: unreachable",
    ] {
        assert!(
            failed.iter().any(|l| l.starts_with(scenario)),
            "{failed:#?}"
        );
    }
    // Only the faults it has: a 429 is still unreachable.
    assert!(
        !failed.iter().any(|l| l.contains("answers 429")),
        "{failed:#?}"
    );

    let _ = std::fs::remove_dir_all(&work);
}
