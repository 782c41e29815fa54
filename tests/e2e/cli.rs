//! The `courier` binary: merchant creation, migrations, and the embedded PostgreSQL default.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{
    Authed, Credential, TestApp, assert_refusal, eventually, fresh_database_url, status_and_json,
};

const BINARY: &str = env!("CARGO_BIN_EXE_courier");

fn courier(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BINARY);
    // A data folder of its own unless the test names one: nothing lands in the source tree.
    let scratch = crate::support::scratch_path("cli");
    command
        .args(args)
        .env("COURIER_DATA_DIR", scratch)
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "warn")
        // A stopped `serve` stops at once: no balancer waits for it to drain.
        .env("COURIER_DRAIN_MS", "0")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

fn succeed(output: Output) -> String {
    assert!(
        output.status.success(),
        "courier failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Parses `merchant create` output: exactly one JSON object with the documented fields.
fn parse_created(stdout: &str) -> Value {
    let created: Value = serde_json::from_str(stdout.trim()).expect("one JSON object on stdout");
    let fields: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "live_key",
        "live_secret",
        "merchant_id",
        "name",
        "test_key",
        "test_secret",
    ];
    expected.sort();
    let mut fields = fields;
    fields.sort();
    assert_eq!(fields, expected);
    created
}

fn credential(created: &Value, env: &str) -> Credential {
    Credential {
        key: created[format!("{env}_key")].as_str().unwrap().into(),
        secret: created[format!("{env}_secret")].as_str().unwrap().into(),
    }
}

#[tokio::test]
async fn merchant_create_prints_credentials_that_authenticate() {
    let database_url = fresh_database_url().await;
    let secret_key = "5e".repeat(32);
    let env = [
        ("DATABASE_URL", database_url.as_str()),
        ("COURIER_SECRET_KEY", secret_key.as_str()),
    ];
    succeed(courier(&["migrate"], &env).output().unwrap());
    let stdout = succeed(
        courier(&["merchant", "create", "--name", "Acme Deliveries"], &env)
            .output()
            .unwrap(),
    );
    let created = parse_created(&stdout);
    assert_eq!(created["name"], "Acme Deliveries");
    assert!(
        created["test_key"]
            .as_str()
            .unwrap()
            .starts_with("ck_test_")
    );
    assert!(
        created["live_key"]
            .as_str()
            .unwrap()
            .starts_with("ck_live_")
    );

    let url = database_url.clone();
    let app = TestApp::spawn_with(move |name| (name == "DATABASE_URL").then(|| url.clone())).await;
    for env in ["test", "live"] {
        let response = app
            .request(Method::GET, "/v1/unknown")
            .auth(&credential(&created, env))
            .send()
            .await
            .unwrap();
        assert_refusal(response, 404, "not_found").await;
    }
    app.stop().await;
}

#[tokio::test]
async fn merchant_create_refuses_an_empty_name() {
    let database_url = fresh_database_url().await;
    let output = courier(
        &["merchant", "create", "--name", "  "],
        &[
            ("DATABASE_URL", database_url.as_str()),
            ("COURIER_SECRET_KEY", &"5e".repeat(32)),
        ],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("non-empty name"));
    assert!(output.stdout.is_empty());
}

/// Waits for `courier serve` to be ready; fails at once if it exits instead.
async fn wait_for_ready(base_url: &str, child: &mut Child) {
    eventually(
        "courier serve to become ready",
        Duration::from_secs(20),
        Duration::from_millis(50),
        || {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("courier serve exited early: {status}");
            }
            let base_url = base_url.to_owned();
            async move {
                tokio::task::spawn_blocking(move || is_ready(&base_url))
                    .await
                    .unwrap()
                    .then_some(())
            }
        },
    )
    .await;
}

/// A synchronous readiness probe over a plain socket, for use outside any runtime.
fn is_ready(base_url: &str) -> bool {
    use std::io::{Read, Write};
    let address = base_url.trim_start_matches("http://");
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn cluster_is_running(data_dir: &Path) -> bool {
    data_dir.join("pg/data/postmaster.pid").exists()
}

/// The README's path on a fresh machine: no DATABASE_URL, so a private cluster is created in
/// the data folder, shared by consecutive and concurrent commands, and stopped on exit.
#[tokio::test]
async fn the_embedded_cluster_is_created_shared_and_stopped() {
    let data_dir = std::env::temp_dir().join(format!("courier-embedded-{}", uuid::Uuid::new_v4()));
    let data = data_dir.to_string_lossy().into_owned();
    let env = [("COURIER_DATA_DIR", data.as_str())];

    // Two concurrent processes on a cluster that does not exist yet.
    let first = courier(&["merchant", "create", "--name", "First"], &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let second = courier(&["merchant", "create", "--name", "Second"], &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = parse_created(&succeed(first.wait_with_output().unwrap()));
    let second = parse_created(&succeed(second.wait_with_output().unwrap()));
    assert!(
        !cluster_is_running(&data_dir),
        "the last user stops the cluster"
    );

    // A later `serve` finds both merchants: the data survived.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = courier(
        &["serve"],
        &[("COURIER_DATA_DIR", &data), ("COURIER_LISTEN", &listen)],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::inherit())
    .spawn()
    .unwrap();
    let base_url = format!("http://{listen}");
    wait_for_ready(&base_url, &mut child).await;
    let client = reqwest::Client::new();
    for created in [&first, &second] {
        let response = client
            .get(format!("{base_url}/v1/unknown"))
            .auth(&credential(created, "live"))
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
    }
    assert!(cluster_is_running(&data_dir));

    // SIGTERM: a clean exit that also stops the cluster.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "serve exits cleanly on SIGTERM: {status}");
    assert!(!cluster_is_running(&data_dir));
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The operator commands: keys, listing, settings, revocation reaching a running service at
/// once, each recorded under the `--operator` given.
#[tokio::test]
async fn merchant_keys_and_settings_through_the_cli_are_audited() {
    let database_url = fresh_database_url().await;
    let secret_key = "5e".repeat(32);
    let env = [
        ("DATABASE_URL", database_url.as_str()),
        ("COURIER_SECRET_KEY", secret_key.as_str()),
    ];
    let run = |args: &[&str]| courier(args, &env).output().unwrap();
    succeed(run(&["migrate"]));
    let created = parse_created(&succeed(run(&[
        "merchant",
        "create",
        "--name",
        "Cli Shop",
        "--operator",
        "carol",
    ])));
    let merchant_id = created["merchant_id"].as_str().unwrap().to_owned();

    // The first owner's invitation: its link, printed as JSON.
    let invitation: Value = serde_json::from_str(&succeed(run(&[
        "merchant",
        "invite",
        "--merchant",
        &merchant_id,
        "--email",
        "owner@cli.example",
        "--role",
        "owner",
        "--operator",
        "carol",
    ])))
    .unwrap();
    assert_eq!(invitation["role"], "owner");
    assert_eq!(invitation["merchant_id"], merchant_id.as_str());
    assert!(
        invitation["invitation_url"]
            .as_str()
            .unwrap()
            .contains("/console/invitations/"),
        "{invitation}"
    );
    assert_eq!(invitation["mailed"], false, "no relay: the link is printed");
    // The owner joins; a forgotten password's link is printed for them, and for no stranger.
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let teams = courier_core::team::Teams::new(
        pool.clone(),
        courier_core::team::TeamConfig::default(),
        (
            "http://127.0.0.1:8080".into(),
            courier_core::mail::Outbox::default(),
        ),
        &crate::support::secret_key(),
    );
    let token = crate::console::invitation_token(&invitation);
    teams
        .accept(&token, "Owner", "a long cli password")
        .await
        .unwrap();
    pool.close().await;
    let reset: Value = serde_json::from_str(&succeed(run(&[
        "person",
        "password-reset",
        "--email",
        "Owner@cli.example",
    ])))
    .unwrap();
    assert_eq!(reset["email"], "owner@cli.example");
    assert!(
        reset["password_reset_url"]
            .as_str()
            .unwrap()
            .contains("/console/password-reset/"),
        "{reset}"
    );
    // An operator's invitation: printed likewise, for the operator console; the audit trail
    // names who invited.
    let operator: Value = serde_json::from_str(&succeed(run(&[
        "operator",
        "invite",
        "--email",
        "ops@cli.example",
        "--role",
        "finance",
        "--operator",
        "carol",
    ])))
    .unwrap();
    assert_eq!(operator["role"], "finance");
    assert!(
        operator["invitation_url"]
            .as_str()
            .unwrap()
            .contains("/ops/invitations/"),
        "{operator}"
    );
    let wrong_role = run(&[
        "operator",
        "invite",
        "--email",
        "x@cli.example",
        "--role",
        "owner",
    ]);
    assert!(!wrong_role.status.success());
    assert!(String::from_utf8_lossy(&wrong_role.stderr).contains("not an operator role"));
    let stranger = run(&["person", "password-reset", "--email", "who@cli.example"]);
    assert!(!stranger.status.success());
    assert!(String::from_utf8_lossy(&stranger.stderr).contains("no account has the address"));
    let refused = run(&[
        "merchant",
        "invite",
        "--merchant",
        &merchant_id,
        "--email",
        "nobody",
        "--role",
        "owner",
    ]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("e-mail address"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let key: Value = serde_json::from_str(&succeed(run(&[
        "merchant",
        "key",
        "create",
        "--merchant",
        &merchant_id,
        "--env",
        "live",
        "--label",
        "till",
        "--operator",
        "carol",
    ])))
    .unwrap();
    assert!(key["key"].as_str().unwrap().starts_with("ck_live_"));
    assert_eq!(key["label"], "till");
    let till = Credential {
        key: key["key"].as_str().unwrap().into(),
        secret: key["secret"].as_str().unwrap().into(),
    };

    let refused = run(&[
        "merchant",
        "key",
        "create",
        "--merchant",
        &merchant_id,
        "--env",
        "prod",
        "--label",
        "x",
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not an environment"));

    let listed: Value = serde_json::from_str(&succeed(run(&["merchant", "list"]))).unwrap();
    assert_eq!(listed[0]["name"], "Cli Shop");
    let shown = succeed(run(&["merchant", "show", &merchant_id]));
    assert!(!shown.contains(till.secret.as_str()), "no secret in `show`");
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["keys"].as_array().unwrap().len(), 3);

    let settings: Value = serde_json::from_str(&succeed(run(&[
        "merchant",
        "settings",
        "--merchant",
        &merchant_id,
        "--sms-sender-name",
        "CliShop",
        "--rate-limit-reads-per-minute",
        "30",
        "--operator",
        "carol",
    ])))
    .unwrap();
    assert_eq!(
        (
            &settings["sms_sender_name"],
            &settings["rate_limit_reads_per_minute"]
        ),
        (&json!("CliShop"), &json!(30))
    );
    let cleared: Value = serde_json::from_str(&succeed(run(&[
        "merchant",
        "settings",
        "--merchant",
        &merchant_id,
        "--sms-sender-name",
        "",
        "--operator",
        "carol",
    ])))
    .unwrap();
    assert_eq!(cleared["sms_sender_name"], Value::Null);

    // A running service that trusts credentials for ten minutes refuses the key once the
    // CLI revokes it.
    let url = database_url.clone();
    let app = TestApp::spawn_with(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "COURIER_AUTH_CACHE_MS" => Some("600000".into()),
        _ => None,
    })
    .await;
    let ask = || app.request(Method::GET, "/v1/unknown").auth(&till).send();
    assert_eq!(ask().await.unwrap().status(), 404);
    let revoked: Value = serde_json::from_str(&succeed(run(&[
        "merchant",
        "key",
        "revoke",
        &till.key,
        "--operator",
        "dave",
    ])))
    .unwrap();
    assert!(revoked["revoked_at"].is_string());
    eventually(
        "the revoked key to be refused (still accepted)",
        Duration::from_secs(2),
        Duration::from_millis(10),
        || async { (ask().await.unwrap().status() == 401).then_some(()) },
    )
    .await;

    let (status, trail) = status_and_json(
        app.admin(Method::GET, &format!("/audit?merchant_id={merchant_id}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{trail}");
    let recorded: Vec<(&str, &str)> = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["operator"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        recorded,
        [
            ("dave", "key.revoked"),
            ("carol", "merchant.settings_changed"),
            ("carol", "merchant.settings_changed"),
            ("carol", "key.created"),
            ("owner@cli.example", "team.member_joined"),
            ("carol", "team.member_invited"),
            ("carol", "merchant.created"),
        ]
    );
    app.stop().await;
}

/// The service does not start with an operator token shorter than 32 characters, or with one
/// token under two names; it says which variable is wrong and never prints the token.
#[test]
fn serve_refuses_short_or_shared_operator_tokens() {
    const TOKEN: &str = "shared-token-0123456789abcdef0123456789";
    let shared = format!("alice={TOKEN},bob={TOKEN}");
    let also_admin = format!("bob={TOKEN}");
    let cases = [
        (
            vec![("COURIER_ADMIN_TOKEN", "too-short-token")],
            "COURIER_ADMIN_TOKEN",
        ),
        (
            vec![("COURIER_OPERATOR_TOKENS", "alice=too-short-token")],
            "COURIER_OPERATOR_TOKENS",
        ),
        (
            vec![("COURIER_OPERATOR_TOKENS", shared.as_str())],
            "COURIER_OPERATOR_TOKENS",
        ),
        (
            vec![
                ("COURIER_ADMIN_TOKEN", TOKEN),
                ("COURIER_OPERATOR_TOKENS", also_admin.as_str()),
            ],
            "COURIER_OPERATOR_TOKENS",
        ),
    ];
    for (env, variable) in cases {
        let output = courier(&["serve"], &env).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{env:?} started");
        assert!(stderr.contains(variable), "{env:?}: {stderr}");
        assert!(
            !stderr.contains(TOKEN) && !stderr.contains("too-short-token"),
            "{stderr}"
        );
    }
}

/// The database keeps a fingerprint of the secret key it was first used with: a command run
/// with another key (here another `COURIER_DATA_DIR`, so another generated key) refuses to
/// start, says which variable to set, and makes nothing; given the first key, it runs.
#[tokio::test]
async fn a_process_with_another_secret_key_refuses_to_start() {
    let database_url = fresh_database_url().await;
    let folder = |name: &str| {
        std::env::temp_dir().join(format!("courier-key-{name}-{}", uuid::Uuid::new_v4()))
    };
    let (first, other) = (folder("first"), folder("other"));
    let (first_dir, other_dir) = (first.to_str().unwrap(), other.to_str().unwrap());
    succeed(
        courier(
            &["merchant", "create", "--name", "First Ltd"],
            &[
                ("DATABASE_URL", &database_url),
                ("COURIER_DATA_DIR", first_dir),
            ],
        )
        .output()
        .unwrap(),
    );
    let refused = courier(
        &["merchant", "create", "--name", "Other Ltd"],
        &[
            ("DATABASE_URL", &database_url),
            ("COURIER_DATA_DIR", other_dir),
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("another secret key") && stderr.contains("COURIER_SECRET_KEY"),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty(), "no credentials are printed");
    let first_key = std::fs::read_to_string(first.join("secret.key")).unwrap();
    succeed(
        courier(
            &["merchant", "create", "--name", "Third Ltd"],
            &[
                ("DATABASE_URL", &database_url),
                ("COURIER_DATA_DIR", other_dir),
                ("COURIER_SECRET_KEY", first_key.trim()),
            ],
        )
        .output()
        .unwrap(),
    );
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM merchants ORDER BY created_at")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(names, ["First Ltd", "Third Ltd"]);
    pool.close().await;
    for dir in [first, other] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
