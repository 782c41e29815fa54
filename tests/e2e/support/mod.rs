//! The test harness: one cluster per test run, one database and one service per test.

pub mod adyen;
pub mod browser;
pub mod chaos;
pub mod eventually;
pub mod fleet;
pub mod forwarder;
pub mod passkey;
pub mod process;
pub mod receiver;
pub mod smtp;
pub mod stripe;
pub mod tls;

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::oneshot;
use uuid::Uuid;

use courier_core::config::Config;
use courier_core::merchants::NewMerchant;

pub use courier_store::scratch::fresh_database_url;
pub use eventually::eventually;

/// The operator token every test service accepts.
pub const ADMIN_TOKEN: &str = "test-operator-token-0123456789abcdef";

/// A running service on its own database.
pub struct TestApp {
    pub address: SocketAddr,
    pub base_url: String,
    pub database_url: String,
    pub data_dir: std::path::PathBuf,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| None).await
    }

    /// Starts the service with extra environment (`COURIER_*` names) on top of the test's own.
    pub async fn spawn_with(extra: impl Fn(&str) -> Option<String>) -> Self {
        let database_url = match extra("DATABASE_URL") {
            Some(url) => url,
            None => fresh_database_url().await,
        };
        let data_dir = std::env::temp_dir().join(format!("courier-test-{}", Uuid::new_v4()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let config = {
            let database_url = database_url.clone();
            let data_dir = data_dir.to_string_lossy().into_owned();
            // A setting may name the port the service was given: `{port}`.
            let port = address.port().to_string();
            Config::from_lookup(move |name| {
                extra(name)
                    .map(|value| value.replace("{port}", &port))
                    .or_else(|| match name {
                        "DATABASE_URL" => Some(database_url.clone()),
                        "COURIER_DATA_DIR" => Some(data_dir.clone()),
                        "COURIER_SECRET_KEY" => Some("5e".repeat(32)),
                        "COURIER_DB_POOL_SIZE" => Some("4".into()),
                        "COURIER_ADMIN_TOKEN" => Some(ADMIN_TOKEN.into()),
                        "COURIER_PLUGIN_INSTANCES" => Some("16".into()),
                        // Test jobs move only as a test moves them, unless it starts the simulator.
                        "COURIER_SANDBOX_SPEED" => Some("0".into()),
                        // Stopped at once: no balancer waits for these to drain.
                        "COURIER_DRAIN_MS" => Some("0".into()),
                        _ => None,
                    })
            })
            .unwrap()
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            courier::app::run(config, listener, shutdown)
                .await
                .expect("the service ran");
        });
        let app = Self {
            address,
            base_url: format!("http://{address}"),
            database_url,
            data_dir,
            client: reqwest::Client::new(),
            stop: Some(stop),
            server: Some(server),
        };
        app.wait_until_ready().await;
        app
    }

    async fn wait_until_ready(&self) {
        eventually(
            "the service to become ready",
            Duration::from_secs(5),
            Duration::from_millis(25),
            || async {
                let response = self.client.get(self.url("/readyz")).send().await.ok()?;
                (response.status() == 200).then_some(())
            },
        )
        .await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// A request without credentials.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// A request to the operator API with the operator token.
    pub fn admin(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(&format!("/admin/v1{path}")))
            .bearer_auth(ADMIN_TOKEN)
    }

    /// A request to the operator API with another operator token (see
    /// `COURIER_OPERATOR_TOKENS`).
    pub fn operator(&self, token: &str, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(&format!("/admin/v1{path}")))
            .bearer_auth(token)
    }

    /// A direct connection to the test's database, for checks the API cannot show.
    pub async fn pool(&self) -> PgPool {
        PgPool::connect(&self.database_url).await.unwrap()
    }

    /// Creates a merchant the way the CLI does and returns its credentials.
    pub async fn create_merchant(&self, name: &str) -> NewMerchant {
        create_merchant_in(&self.database_url, name).await
    }

    /// Stops the service gracefully and waits for it.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap();
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// The secret key every test service runs with.
pub fn secret_key() -> courier_core::infra::secrets::SecretKey {
    courier_core::infra::secrets::SecretKey::from_hex(&"5e".repeat(32)).unwrap()
}

/// Creates a merchant in the database at `database_url` the way the CLI does (with the tests'
/// secret key), for a service running in this process or another.
pub async fn create_merchant_in(database_url: &str, name: &str) -> NewMerchant {
    let pool = PgPool::connect(database_url).await.unwrap();
    let key = secret_key();
    let authenticator = courier_core::auth::Authenticator::new(pool.clone(), &key);
    let merchant = courier_core::merchants::Merchants::new(pool.clone(), authenticator.clone())
        .create(name)
        .await
        .unwrap();
    pool.close().await;
    merchant
}

/// The markets file of the four shared OpenStreetMap extracts, or `None` (with a note) when
/// the extracts are not beside the repository.
pub fn shared_osm_markets() -> Option<String> {
    let osm = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/osm");
    if !std::path::Path::new(osm).is_dir() {
        eprintln!("skipping: the shared OpenStreetMap extracts are not at {osm}");
        return None;
    }
    Some(concat!(env!("CARGO_MANIFEST_DIR"), "/markets/shared-osm.toml").to_owned())
}

/// Credentials of one environment of a merchant.
#[derive(Clone, Debug)]
pub struct Credential {
    pub key: String,
    pub secret: String,
}

pub trait MerchantCredentials {
    fn test(&self) -> Credential;
    fn live(&self) -> Credential;
}

impl MerchantCredentials for NewMerchant {
    fn test(&self) -> Credential {
        Credential {
            key: self.test_key.clone(),
            secret: self.test_secret.clone(),
        }
    }
    fn live(&self) -> Credential {
        Credential {
            key: self.live_key.clone(),
            secret: self.live_secret.clone(),
        }
    }
}

pub trait Authed {
    fn auth(self, credential: &Credential) -> Self;
}

impl Authed for RequestBuilder {
    fn auth(self, credential: &Credential) -> Self {
        self.basic_auth(&credential.key, Some(&credential.secret))
    }
}

/// The status and the JSON body of a response (Null when empty or not JSON).
pub async fn status_and_json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Asserts a refusal: status, the common body shape and its code.
pub async fn assert_refusal(response: Response, status: u16, code: &str) -> Value {
    let (actual, body) = status_and_json(response).await;
    assert_eq!(actual, status, "unexpected status; body: {body}");
    assert_eq!(body["code"], code, "unexpected code; body: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "refusals carry a message: {body}"
    );
    body
}

/// Gives the merchant a working sandbox card (the default) so bookings can place their hold.
pub async fn attach_working_card(app: &TestApp, credential: &Credential) {
    let response = app
        .request(Method::POST, "/v1/payment-methods")
        .auth(credential)
        .json(&serde_json::json!({"provider_ref": "pm_sandbox_4242424242424242"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

/// Two Demo City addresses (docs/markets-and-routing.md): 41 4th Street and 102 17th Street.
pub const FOURTH_STREET_41: (f64, f64) = (20.00285, 50.0043);
pub const SEVENTEENTH_STREET_102: (f64, f64) = (20.01615, 50.0103);

/// A quote request body across Demo City, from 41 4th Street to 102 17th Street.
pub fn journey(vehicle: Option<&str>) -> Value {
    let mut body = serde_json::json!({
        "pickup": {"latitude": FOURTH_STREET_41.0, "longitude": FOURTH_STREET_41.1},
        "dropoff": {"latitude": SEVENTEENTH_STREET_102.0, "longitude": SEVENTEENTH_STREET_102.1},
    });
    if let Some(vehicle) = vehicle {
        body["vehicle"] = serde_json::json!(vehicle);
    }
    body
}

/// The parent of the files and folders tests make for the service (data folders, markets
/// files, adapter configurations), removed when the test process exits.
static SCRATCH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// A fresh path under this test process's scratch folder, named after `what`.
pub fn scratch_path(what: &str) -> std::path::PathBuf {
    let root = SCRATCH.get_or_init(|| {
        // SAFETY: registers a plain function; atexit has no other preconditions.
        unsafe { libc::atexit(remove_scratch) };
        std::env::temp_dir().join(format!("courier-e2e-{}", std::process::id()))
    });
    std::fs::create_dir_all(root).unwrap();
    root.join(format!("{what}-{}", Uuid::new_v4()))
}

extern "C" fn remove_scratch() {
    if let Some(root) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(root);
    }
}

/// A markets file with one market on the shared OpenStreetMap extract of Liechtenstein
/// (`liechtenstein`, cars only, in CHF, couriers paid 4 a job and 0.90 a km); None, and the
/// caller skips, without the extracts.
pub fn liechtenstein_market_file() -> Option<std::path::PathBuf> {
    let extract = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/osm/liechtenstein.osm.pbf"
    );
    if !std::path::Path::new(extract).is_file() {
        eprintln!("skipping: the shared OpenStreetMap extract is not at {extract}");
        return None;
    }
    let path = scratch_path("markets").with_extension("toml");
    let settings = concat!(env!("CARGO_MANIFEST_DIR"), "/markets/settings/chf.json");
    std::fs::write(
        &path,
        format!(
            r#"
[[market]]
id = "liechtenstein"
name = "Liechtenstein"
currency = "CHF"
timezone = "Europe/Vaduz"
country = "LI"
osm = "{extract}"
price_book = "standard-price-book"
vehicles = ["car"]
price_book_settings_file = "{settings}"

[market.courier_pay]
per_job_minor = 400
per_km_minor = 90
"#
        ),
    )
    .unwrap();
    Some(path)
}

/// A markets file with one market on Demo City that offers only cars, in EUR, with a coverage
/// polygon reaching kilometres past its roads (so a covered point can have no road near it).
pub fn car_only_market_file() -> std::path::PathBuf {
    let path = scratch_path("markets").with_extension("toml");
    let settings = concat!(env!("CARGO_MANIFEST_DIR"), "/markets/settings/eur.json");
    std::fs::write(
        &path,
        format!(
            r#"
[[market]]
id = "wide"
name = "Wide"
currency = "EUR"
timezone = "Asia/Riyadh"
osm = "builtin:demo-city"
price_book = "standard-price-book"
vehicles = ["car"]
coverage = [[49.90, 19.90], [50.12, 19.90], [50.12, 20.12], [49.90, 20.12]]
price_book_settings_file = "{settings}"
"#
        ),
    )
    .unwrap();
    path
}
