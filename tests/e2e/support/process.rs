//! The service as a separate process (`courier serve`), for tests that kill it.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::eventually;

pub const BINARY: &str = env!("CARGO_BIN_EXE_courier");

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The settings a separate `courier serve` needs: its database, its address, its own data
/// folder, and the tests' secret key.
pub fn service_settings(
    database_url: &str,
    address: &str,
    data_dir: &std::path::Path,
) -> Vec<(String, String)> {
    [
        ("DATABASE_URL", database_url.to_owned()),
        ("COURIER_LISTEN", address.to_owned()),
        ("COURIER_DATA_DIR", data_dir.to_string_lossy().into_owned()),
        ("COURIER_SECRET_KEY", "5e".repeat(32)),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// Starts `courier serve` with `env` (and no inherited `DATABASE_URL`).
pub fn spawn_service(env: &[(String, String)]) -> Child {
    let mut command = Command::new(BINARY);
    command
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "error")
        // Test jobs move only as a test moves them, unless it starts the simulator.
        .env("COURIER_SANDBOX_SPEED", "0")
        // Stopped at once unless a test drains it.
        .env("COURIER_DRAIN_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

pub async fn wait_until_ready(client: &reqwest::Client, base_url: &str) {
    eventually(
        "the service to become ready",
        Duration::from_secs(10),
        Duration::from_millis(25),
        || async {
            let response = client.get(format!("{base_url}/readyz")).send().await.ok()?;
            (response.status() == 200).then_some(())
        },
    )
    .await;
}

/// Runs `courier payments reconcile` for the live environment with a service's settings
/// (`env`) against `database_url`, off the caller's runtime (which may be serving the
/// provider's stand-in meanwhile); answers its exit code and the lines it printed, and fails
/// with its error output when it could not check at all.
pub async fn reconcile_live(env: Vec<(String, String)>, database_url: &str) -> (i32, Vec<String>) {
    let (code, lines, errors) = reconcile_live_output(env, database_url).await;
    assert!(
        code == 0 || code == 1,
        "reconcile could not check: {errors}"
    );
    (code, lines)
}

/// [`reconcile_live`] whatever its exit code: the code, the lines printed on standard output
/// and the error output.
pub async fn reconcile_live_output(
    env: Vec<(String, String)>,
    database_url: &str,
) -> (i32, Vec<String>, String) {
    let mut command = Command::new(BINARY);
    command
        .args(["payments", "reconcile", "--environment", "live"])
        .envs(env)
        .env("DATABASE_URL", database_url)
        .env("COURIER_DATA_DIR", super::scratch_path("reconcile"))
        .env("COURIER_SECRET_KEY", "5e".repeat(32))
        .env("RUST_LOG", "error")
        .stdin(Stdio::null());
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    (
        output.status.code().unwrap_or(-1),
        lines,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
