//! The system of record: connecting to Postgres (embedded or configured) and migrating it.

pub mod availability;
pub mod batches;
pub mod listen;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use thiserror::Error;

pub use courier_store::embedded::{EmbeddedError, EmbeddedPostgres, find_server_binaries};

/// The database every embedded cluster serves the application from.
pub const EMBEDDED_DATABASE: &str = "courier";

#[derive(Debug, Error)]
pub enum DbError {
    #[error(transparent)]
    Embedded(#[from] EmbeddedError),
    #[error("connecting to PostgreSQL: {0}")]
    Connect(#[source] sqlx::Error),
    #[error("applying migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("the embedded cluster task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

pub use courier_store::MIGRATOR;

/// Whether the database answers, for the readiness probe.
#[derive(Clone)]
pub struct Readiness {
    pool: PgPool,
}

impl Readiness {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// One round trip to the database.
    pub async fn check(&self) -> Result<(), sqlx::Error> {
        courier_store::ping(&self.pool).await
    }
}

/// A connection pool plus, when no `DATABASE_URL` was given, the private cluster behind it.
#[derive(Clone, Debug)]
pub struct Database {
    pub pool: PgPool,
    embedded: Option<Arc<EmbeddedPostgres>>,
}

impl Database {
    /// Connects to `database_url`, or starts (or joins) the embedded cluster under `data_dir`.
    pub async fn open(
        database_url: Option<&str>,
        data_dir: &Path,
        pool_size: u32,
    ) -> Result<Self, DbError> {
        let (url, embedded) = match database_url {
            Some(url) => (url.to_owned(), None),
            None => {
                let root = data_dir.join("pg");
                let cluster =
                    tokio::task::spawn_blocking(move || EmbeddedPostgres::start(&root)).await??;
                create_database_if_missing(&cluster, EMBEDDED_DATABASE).await?;
                (cluster.url(EMBEDDED_DATABASE), Some(Arc::new(cluster)))
            }
        };
        let pool = pool(&url, pool_size).await?;
        Ok(Self { pool, embedded })
    }

    pub async fn migrate(&self) -> Result<(), DbError> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Closes the pool, then gives up this process's use of the embedded cluster.
    pub async fn close(self) {
        self.pool.close().await;
        if let Some(cluster) = self.embedded {
            let stopped = tokio::task::spawn_blocking(move || cluster.stop()).await;
            if let Ok(Err(e)) = stopped {
                tracing::warn!(error = %e, "stopping the embedded PostgreSQL failed");
            }
        }
    }
}

/// A pool on `url` whose connections are checked on start, and kept off read-only servers
/// ([`availability`]).
pub async fn pool(url: &str, size: u32) -> Result<PgPool, DbError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(DbError::Connect)?
        .log_statements(tracing::log::LevelFilter::Trace);
    pool_options(size)
        .connect_with(options)
        .await
        .map_err(DbError::Connect)
}

/// What every pool of the service shares: at most `size` connections, a 5 s wait for one,
/// and none on a read-only server ([`availability`]).
pub fn pool_options(size: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(Duration::from_secs(5))
        .after_connect(|conn, _| Box::pin(availability::accept_new(conn)))
        // Checked by `keep_before_use` instead of a ping each time a connection is lent.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| Box::pin(availability::keep_before_use(conn, meta.idle_for)))
}

/// The connect options of `pool` with `settings` (run-time parameters) set on every new
/// connection: for a pool of a worker's own beside the main one.
pub fn options_with(pool: &PgPool, settings: &[(&str, &str)]) -> PgConnectOptions {
    pool.connect_options()
        .as_ref()
        .clone()
        .options(settings.iter().copied())
}

/// Creates `database` on the embedded cluster unless it exists.
pub async fn create_database_if_missing(
    cluster: &EmbeddedPostgres,
    database: &str,
) -> Result<(), DbError> {
    let mut admin = sqlx::PgConnection::connect(&cluster.url("postgres"))
        .await
        .map_err(DbError::Connect)?;
    courier_store::cluster::create_database_if_missing(&mut admin, database)
        .await
        .map_err(DbError::Connect)?;
    admin.close().await.ok();
    Ok(())
}
