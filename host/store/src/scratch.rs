//! Databases for tests: one private PostgreSQL cluster per test process (or the server
//! `DATABASE_URL` names, when set), and a fresh database per test, copied from a template
//! migrated once per process (so a service started on it finds its migrations applied).
//! Used by this crate's tests, the features' and the black-box suite; the service never calls
//! it.

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::Connection;
use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::embedded::EmbeddedPostgres;
use crate::jobs::JobRow;
use crate::quotes::QuoteRow;
use courier_domain::{Environment, JobStatus, Vehicle};
use sqlx::PgPool;

enum Server {
    External(String),
    Embedded(EmbeddedPostgres),
}

static SERVER: OnceLock<Server> = OnceLock::new();

fn server() -> &'static Server {
    SERVER.get_or_init(|| match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Server::External(url),
        _ => {
            let root = std::env::temp_dir().join(format!("courier-tests-{}", std::process::id()));
            // Started on a plain thread: the cluster outlives any one test's runtime.
            let cluster = std::thread::spawn(move || EmbeddedPostgres::start(&root))
                .join()
                .unwrap()
                .expect("starting the test cluster");
            // Statics are never dropped: stop the cluster when the test binary exits.
            // SAFETY: `stop_cluster_at_exit` is an `extern "C" fn()` that does not unwind.
            unsafe { libc::atexit(stop_cluster_at_exit) };
            Server::Embedded(cluster)
        }
    })
}

extern "C" fn stop_cluster_at_exit() {
    if let Some(Server::Embedded(cluster)) = SERVER.get() {
        let _ = cluster.stop();
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("courier-tests-{}", std::process::id())),
        );
    }
}

fn url_for(database: &str) -> String {
    match server() {
        Server::External(url) => {
            let mut url = url::Url::parse(url).expect("DATABASE_URL is a URL");
            url.set_path(database);
            url.to_string()
        }
        Server::Embedded(cluster) => cluster.url(database),
    }
}

/// The migrated database every test's database is copied from, made once per test run.
static TEMPLATE: OnceCell<String> = OnceCell::const_new();

async fn create_database(name: &str, template: Option<&str>) {
    let mut admin = sqlx::PgConnection::connect(&url_for("postgres"))
        .await
        .unwrap();
    let from = template.map_or(String::new(), |t| format!(" TEMPLATE {t}"));
    sqlx::query(&format!("CREATE DATABASE {name}{from}"))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
}

async fn template() -> &'static str {
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("courier_template_{}", std::process::id());
            create_database(&name, None).await;
            let pool = sqlx::PgPool::connect(&url_for(&name)).await.unwrap();
            crate::MIGRATOR.run(&pool).await.unwrap();
            // A template is copied only while nobody is connected to it.
            pool.close().await;
            name
        })
        .await
}

/// Creates a migrated database for one test and returns its URL.
pub async fn fresh_database_url() -> String {
    let name = format!("test_{}", Uuid::new_v4().simple());
    create_database(&name, Some(template().await)).await;
    url_for(&name)
}

/// A job of `quote`, as a booking prepares it, for tests that write jobs without booking.
pub fn job_of(quote: &QuoteRow, status: JobStatus, booked_at: DateTime<Utc>) -> JobRow {
    JobRow {
        id: Uuid::new_v4(),
        merchant_id: quote.merchant_id,
        environment: quote.environment,
        quote_id: quote.id,
        reference: format!("CR-{}", &Uuid::new_v4().simple().to_string()[..8]),
        tracking_token: Uuid::new_v4().simple().to_string(),
        status,
        market_id: quote.market_id.clone(),
        currency: quote.currency.clone(),
        price_amount_minor: quote.total_amount_minor,
        tax_amount_minor: 0,
        vehicle: quote.vehicle,
        pickup: json!({"address": "Städtle 1, Vaduz"}),
        dropoff: json!({"address": "Landstrasse 2, Schaan"}),
        items: json!([]),
        items_subtotal_minor: 0,
        discount_minor: 0,
        items_total_minor: 0,
        notify_customer: false,
        customer_notified_at: None,
        proof_photo_required: false,
        proof_signature_required: true,
        proof: None,
        courier_id: None,
        booked_at,
        scheduled_for: None,
        search_opens_at: None,
        assigned_at: None,
        completed_at: None,
        cancellation_reason: None,
        search_opened_at: None,
        pickup_ready_at: None,
    }
}

/// A merchant, written, for tests.
pub async fn merchant(pool: &PgPool) -> Uuid {
    let id = Uuid::new_v4();
    let mut conn = pool.acquire().await.unwrap();
    crate::merchants::insert_merchant(&mut conn, id, "Store Test Ltd")
        .await
        .unwrap();
    id
}

/// A quote of `merchant_id` made `at`, written, for tests.
pub async fn quote(pool: &PgPool, merchant_id: Uuid, at: DateTime<Utc>) -> QuoteRow {
    let row = quote_row(merchant_id, at);
    crate::quotes::insert(pool, &row).await.unwrap();
    row
}

/// A quote of `merchant_id` made `at`, not written, for tests.
pub fn quote_row(merchant_id: Uuid, at: DateTime<Utc>) -> QuoteRow {
    QuoteRow {
        id: Uuid::new_v4(),
        merchant_id,
        environment: Environment::Test,
        market_id: "demo".into(),
        currency: "EUR".into(),
        vehicle: Vehicle::Car,
        pickup_latitude: 47.1,
        pickup_longitude: 9.5,
        pickup_postcode: Some("9490".into()),
        dropoff_latitude: 47.2,
        dropoff_longitude: 9.6,
        dropoff_postcode: None,
        weight_grams: 1200,
        scheduled_for: None,
        priced_for: at,
        demand_permille: 1000,
        distance_metres: 5400,
        duration_seconds: 600,
        total_amount_minor: 1290,
        breakdown: json!([]),
        price_book_version: 1,
        created_at: at,
        expires_at: at + chrono::Duration::minutes(15),
        used_at: None,
    }
}
