//! Start-up and shutdown of the service.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::api::{self, AppState};
use crate::auth::Authenticator;
use crate::config::Config;
use crate::db::{Database, DbError};
use crate::markets::{Markets, MarketsError};
use crate::secrets::{SecretKey, SecretKeyError};
use crate::telemetry;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Database(#[from] DbError),
    #[error(transparent)]
    SecretKey(#[from] SecretKeyError),
    #[error("binding {address}: {source}")]
    Bind {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Markets(#[from] MarketsError),
    #[error("serving HTTP: {0}")]
    Serve(#[source] std::io::Error),
}

/// The database and the shared services built on it, as every entry point needs them.
pub struct Services {
    pub db: Database,
    pub authenticator: Authenticator,
}

impl Services {
    /// Opens (or starts) the database, migrates it and builds the shared services.
    pub async fn open(config: &Config) -> Result<Self, StartError> {
        let secret_key = SecretKey::load(config.secret_key.as_deref(), &config.data_dir)?;
        let db = Database::open(
            config.database_url.as_deref(),
            &config.data_dir,
            config.db_pool_size,
        )
        .await?;
        db.migrate().await?;
        let authenticator = Authenticator::new(db.pool.clone(), &secret_key);
        Ok(Self { db, authenticator })
    }
}

/// Binds `config.listen` and serves until SIGINT or SIGTERM.
pub async fn serve(config: Config) -> Result<(), StartError> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            address: config.listen.to_string(),
            source,
        })?;
    run(config, listener, shutdown_signal()).await
}

/// Serves on `listener` until `shutdown` completes, then finishes in-flight requests and
/// releases the database.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    telemetry::init_metrics();
    let markets = Arc::new(Markets::from_file(config.markets_file.as_deref())?);
    let services = Services::open(&config).await?;
    // Road networks load in the background; lookups answer 503 `lookup.not_ready` meanwhile.
    let loading = Arc::clone(&markets);
    tokio::task::spawn_blocking(move || loading.load_networks());
    let state = AppState {
        pool: services.db.pool.clone(),
        authenticator: services.authenticator.clone(),
        config: Arc::new(config),
        markets,
    };
    let address = listener.local_addr().map_err(StartError::Serve)?;
    tracing::info!(%address, "courier is listening");
    let served = axum::serve(listener, api::router(state))
        .with_graceful_shutdown(shutdown)
        .await;
    tracing::info!("stopped accepting requests; shutting down");
    services.db.close().await;
    served.map_err(StartError::Serve)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}
