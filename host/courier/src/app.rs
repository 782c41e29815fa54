//! Start-up and shutdown of the service.

use std::future::Future;
use std::sync::Arc;

use courier_plugins::{EngineConfig, PluginEngine};
use tokio::net::TcpListener;

use courier_api::{self as api, AppServices, AppState};
use courier_core::auth::Authenticator;
use courier_core::config::Config;
use courier_core::infra::db::listen::ListenHub;
use courier_core::infra::db::{Database, DbError};
use courier_core::infra::secrets::{SecretKey, SecretKeyError};
use courier_core::infra::settings::Secret;
use courier_core::infra::telemetry;
use courier_core::markets::{Markets, MarketsError};
use courier_core::pricing::{PriceBookError, PriceBooks};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Database(#[from] DbError),
    #[error(transparent)]
    SecretKey(#[from] SecretKeyError),
    #[error(
        "this database was first used with another secret key, so credentials made here would be refused everywhere else: set COURIER_SECRET_KEY to the key the other instances use (or COURIER_DATA_DIR to their data folder, whose secret.key holds it)"
    )]
    OtherSecretKey,
    #[error("binding {address}: {source}")]
    Bind {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Markets(#[from] MarketsError),
    #[error(transparent)]
    PriceBooks(#[from] PriceBookError),
    #[error("starting the plugin engine: {0}")]
    Plugins(#[from] courier_plugins::PluginError),
    #[error("starting the webhook engine: {0}")]
    Webhooks(#[from] courier_core::webhooks::WebhookStartError),
    #[error("starting the payment adapters: {0}")]
    Payments(#[from] courier_core::payments::GatewayError),
    #[error("starting the SMS gateway client: {0}")]
    Texts(#[source] reqwest::Error),
    #[error(transparent)]
    Mail(courier_core::mail::RelayError),
    #[error("serving HTTP: {0}")]
    Serve(#[source] std::io::Error),
}

/// The database and the shared services built on it, as every entry point needs them.
pub struct Services {
    pub db: Database,
    pub authenticator: Authenticator,
    pub markets: Arc<Markets>,
    pub price_books: Arc<PriceBooks>,
    /// The one plugin engine of the process.
    pub plugin_engine: PluginEngine,
    pub webhooks: Arc<courier_core::webhooks::Webhooks>,
    pub payments: Arc<courier_core::payments::Payments>,
    pub texts: Arc<courier_core::texts::CustomerTexts>,
    pub couriers: courier_core::couriers::Couriers,
    pub courier_app_sessions: Arc<courier_core::couriers::CourierAppSessions>,
    pub fulfilment: courier_core::jobs::fulfilment::Fulfilment,
    pub merchants: courier_core::merchants::Merchants,
    /// Merchants' teams: invitations, people, sign-in.
    pub teams: courier_core::team::Teams,
    /// Operators' accounts: invitations, sign-in.
    pub operator_accounts: courier_core::operator_accounts::OperatorAccounts,
}

impl Services {
    /// Opens (or starts) the database, migrates it and builds the shared services.
    pub async fn open(config: &Config) -> Result<Self, StartError> {
        let secret_key = SecretKey::load(
            config.secret_key.as_ref().map(Secret::expose),
            &config.data_dir,
        )?;
        let db = Database::open(
            config.database_url.as_ref().map(Secret::expose),
            &config.data_dir,
            config.db_pool_size,
        )
        .await?;
        db.migrate().await?;
        let recorded =
            courier_store::secret_key::recorded_fingerprint(&db.pool, &secret_key.fingerprint())
                .await
                .map_err(DbError::Connect)?;
        if recorded.as_slice() != secret_key.fingerprint().as_slice() {
            return Err(StartError::OtherSecretKey);
        }
        let authenticator =
            Authenticator::with_cache(db.pool.clone(), &secret_key, config.auth_cache);
        let markets = Arc::new(Markets::from_file(config.markets_file.as_deref())?);
        let engine = plugin_engine(config)?;
        let price_books =
            PriceBooks::start(engine.clone(), db.pool.clone(), Arc::clone(&markets)).await?;
        let outbox = courier_core::mail::Outbox::new(&config.mail);
        let webhooks = courier_core::webhooks::Webhooks::new(
            db.pool.clone(),
            &secret_key,
            config.webhooks.clone(),
            (outbox.clone(), config.public_url()),
        )?;
        let gateways = courier_core::payments::Gateways::load(
            &engine,
            config.payments.live_adapter.as_deref(),
            config.payments.live_config.as_deref(),
            &courier_core::payments::TestNetwork {
                allow_private: config.payments.allow_private,
                extra_ca: config.payments.extra_ca.clone(),
            },
        )
        .await?;
        let payments = Arc::new(
            courier_core::payments::Payments::new(
                db.pool.clone(),
                gateways,
                config.payments.retry,
                webhooks.wakeup(),
            )
            .with_call_limits(courier_core::payments::CallLimits {
                // Each call in flight keeps a plugin instance while it waits on the network:
                // half of them at most, so price books and shapers always find one.
                max_calls: config
                    .payments
                    .calls
                    .max_calls
                    .min(usize::try_from(config.plugin_instances / 2).unwrap_or(usize::MAX))
                    .max(1),
                ..config.payments.calls
            })
            .with_card_form(courier_core::payments::CardFormDefaults {
                return_url: Some(
                    config
                        .payments
                        .card_form
                        .return_url
                        .clone()
                        .unwrap_or_else(|| config.public_url()),
                ),
                ..config.payments.card_form.clone()
            }),
        );
        let texts = Arc::new(
            courier_core::texts::CustomerTexts::new(db.pool.clone(), config.texts.clone())
                .map_err(StartError::Texts)?,
        );
        let courier_credentials =
            courier_core::couriers::CourierCredentials::new(db.pool.clone(), &secret_key);
        let courier_app_sessions = Arc::new(courier_core::couriers::CourierAppSessions::new(
            db.pool.clone(),
            config.courier_app_session,
            courier_credentials.clone(),
            &secret_key,
        ));
        let couriers = courier_core::couriers::Couriers::new(
            db.pool.clone(),
            Arc::clone(&markets),
            courier_credentials,
            config.tracking.trail_every,
        );
        let fulfilment = courier_core::jobs::fulfilment::Fulfilment::new(
            db.pool.clone(),
            Arc::clone(&payments),
            courier_core::jobs::fulfilment::CollectionTexts {
                texts: Arc::clone(&texts),
                markets: Arc::clone(&markets),
                public_url: config.public_url(),
            },
            webhooks.wakeup(),
        );
        let merchants =
            courier_core::merchants::Merchants::new(db.pool.clone(), authenticator.clone())
                .with_mail(outbox.clone());
        let teams = courier_core::team::Teams::new(
            db.pool.clone(),
            config.team.clone(),
            (config.public_url(), outbox),
            &secret_key,
        );
        let operator_accounts = courier_core::operator_accounts::OperatorAccounts::new(
            db.pool.clone(),
            teams.clone(),
            courier_core::mail::Outbox::new(&config.mail),
            config.ops_public_url(),
        );
        Ok(Self {
            couriers,
            courier_app_sessions,
            fulfilment,
            merchants,
            teams,
            operator_accounts,
            db,
            authenticator,
            markets,
            price_books,
            plugin_engine: engine,
            webhooks,
            payments,
            texts,
        })
    }
}

/// Binds `config.listen` and serves until SIGINT or SIGTERM.
pub async fn serve(config: Config) -> Result<(), StartError> {
    let listener = bind(config.listen).map_err(|source| StartError::Bind {
        address: config.listen.to_string(),
        source,
    })?;
    run(config, listener, shutdown_signal()).await
}

/// Connections the kernel holds for the server to accept (at most `net.core.somaxconn`).
const ACCEPT_QUEUE: u32 = 4096;

/// The listening socket, with a long accept queue: a burst of new connections waits there
/// while the server is busy, instead of being dropped and tried again a second later.
fn bind(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(ACCEPT_QUEUE)
}

/// Serves on `listener` until `shutdown` completes, then finishes in-flight requests and
/// releases the database.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    telemetry::init_metrics();
    let services = Services::open(&config).await?;
    // Road networks load in the background; lookups answer 503 `lookup.not_ready` meanwhile.
    let loading = Arc::clone(&services.markets);
    let prepared_dir = config.data_dir.join("networks");
    tokio::task::spawn_blocking(move || loading.load_networks(Some(&prepared_dir)));
    // Every background task runs under one lifecycle and is stopped, gracefully, after the
    // server.
    let workers = courier_core::infra::workers::Workers::new();
    // In place before the first request, so no revocation can slip past this process.
    let mut hub = ListenHub::new(services.db.pool.clone());
    let activations = hub.subscribe(courier_store::price_books::ACTIVATION_CHANNEL);
    let credential_changes = hub.subscribe(courier_core::auth::CHANGES_CHANNEL);
    // Other processes' events wake the fan-out from the relay itself: no task in between.
    let wakeup = services.webhooks.wakeup();
    hub.on(courier_core::events::EVENTS_CHANNEL, move |_| wakeup.wake());
    hub.start(&workers)
        .await
        .map_err(|e| StartError::Database(DbError::Connect(e)))?;
    services.price_books.follow(activations, &workers);
    courier_core::auth::follow_changes(
        services.authenticator.clone(),
        credential_changes,
        &workers,
    );
    services
        .webhooks
        .start_workers(&services.plugin_engine, &workers)
        .await?;
    courier_core::jobs::run_scheduler(
        services.db.pool.clone(),
        config.scheduler_interval,
        &workers,
    );
    services.payments.run_retries(&workers);
    services.payments.run_reconciliation(
        &workers,
        config.payments.reconcile.every,
        config.payments.reconcile.window,
    );
    telemetry::run_metrics_upkeep(&workers);
    let tracking = Arc::new(courier_core::tracking::Tracking::new(
        services.db.pool.clone(),
        Arc::clone(&services.markets),
        config.tracking,
    ));
    services
        .texts
        .run_sender(&workers, config.scheduler_interval);
    Arc::new(
        courier_core::mail::MailSender::new(services.db.pool.clone(), config.mail.clone())
            .map_err(StartError::Mail)?,
    )
    .run(&workers, config.scheduler_interval);
    let limits = crate::server::ConnectionLimits {
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_connections: config.max_connections,
    };
    let draining = api::Draining::default();
    let sandbox = Arc::new(courier_core::sandbox::Simulator::new(
        services.db.pool.clone(),
        Arc::clone(&services.markets),
        services.fulfilment.clone(),
        config.sandbox.clone(),
        config.dispatch.deadline,
    ));
    Arc::clone(&sandbox).run(&workers);
    Arc::new(courier_core::dispatch::Dispatcher::new(
        services.db.pool.clone(),
        Arc::clone(&services.markets),
        services.fulfilment.clone(),
        config.dispatch.clone(),
        // While the simulator moves test jobs, real couriers are never offered them.
        sandbox.is_running(),
    ))
    .run(&workers);
    courier_core::auth::flush_usage(
        services.authenticator.clone(),
        config.key_usage_flush,
        &workers,
    );
    let booking = courier_core::jobs::booking::BookingContext {
        pool: services.db.pool.clone(),
        payments: Arc::clone(&services.payments),
        markets: Arc::clone(&services.markets),
        public_url: Arc::from(config.public_url().as_str()),
        wakeup: services.webhooks.wakeup(),
        batches: courier_core::jobs::booking::BookingBatches::start(
            &services.db.pool,
            services.payments.call_lease(),
            config.payments.calls.booking_batch_window,
        ),
        dispatch_deadline: config.dispatch.deadline,
    };
    courier_core::jobs::booking::recovery::run(
        booking.clone(),
        &workers,
        std::time::Duration::from_secs(1),
    );
    let state = AppState::new(AppServices {
        booking,
        readiness: courier_core::infra::db::Readiness::new(services.db.pool.clone()),
        jobs: courier_core::jobs::reading::JobReader::new(services.db.pool.clone()),
        desk: courier_core::operations::OperationsDesk::new(
            services.db.pool.clone(),
            config.dispatch.deadline,
        ),
        merchants: services.merchants.clone(),
        teams: services.teams.clone(),
        operator_accounts: services.operator_accounts.clone(),
        audit: courier_core::audit::AuditTrail::new(services.db.pool.clone()),
        authenticator: services.authenticator.clone(),
        config: Arc::new(config.clone()),
        markets: Arc::clone(&services.markets),
        price_books: Arc::clone(&services.price_books),
        quote_writer: courier_core::quotes::QuoteWriter::start(services.db.pool.clone()),
        webhooks: Arc::clone(&services.webhooks),
        payments: Arc::clone(&services.payments),
        tracking,
        texts: Arc::clone(&services.texts),
        couriers: services.couriers.clone(),
        courier_app_sessions: Arc::clone(&services.courier_app_sessions),
        fulfilment: services.fulfilment.clone(),
        sandbox,
        operators: Arc::new(api::OperatorTokens::new(
            config.admin_token.as_ref().map(Secret::expose),
            &config.operator_tokens,
            courier_core::auth::failures::AddressBudget::new(
                config.operator_failure_limit,
                config.operator_failure_window,
            ),
        )),
        rate_limiter: Arc::new(courier_core::rate_limit::RateLimiter::new()),
        draining: draining.clone(),
        console_sessions: Arc::new(courier_core::auth::ConsoleSessions::new(
            services.db.pool.clone(),
            config.console_session,
            config.team.reauthentication,
        )),
        operator_sessions: Arc::new(
            courier_core::auth::operator_sessions::OperatorSessions::new(
                services.db.pool.clone(),
                config.console_session,
            ),
        ),
        auth_failures: Arc::new(courier_core::auth::failures::AddressBudget::new(
            config.auth_failure_limit,
            config.auth_failure_window,
        )),
        refusal_pace: Arc::new(courier_core::auth::failures::RefusalPace::new(
            config.auth_refusals_per_second,
        )),
        trusted_proxies: Arc::new(courier_core::auth::client::TrustedProxies::new(
            config.trusted_proxies.clone(),
        )),
        public_requests: Arc::new(courier_core::auth::failures::AddressBudget::new(
            config.public_request_limit,
            config.public_request_window,
        )),
        tracking_slots: Arc::new(tokio::sync::Semaphore::new(config.tracking_concurrency)),
        plugin_engine: services.plugin_engine.clone(),
    });
    let address = listener.local_addr().map_err(StartError::Serve)?;
    tracing::info!(%address, "courier is listening");
    if let Some(warning) = config.insecure_cookies(address) {
        tracing::warn!("{warning}");
    }
    let stop = drain_after(shutdown, draining, config.drain);
    match config.ops_listen {
        None => crate::server::serve(listener, api::router(state), limits, stop).await,
        Some(ops_address) => {
            let ops_listener = bind(ops_address).map_err(|source| StartError::Bind {
                address: ops_address.to_string(),
                source,
            })?;
            tracing::info!(address = %ops_address, "the operator console is listening apart");
            // Both listeners stop together.
            let stopping = tokio_util::sync::CancellationToken::new();
            let stopped = stopping.clone();
            tokio::spawn(async move {
                stop.await;
                stopped.cancel();
            });
            tokio::join!(
                crate::server::serve(
                    listener,
                    api::router_serving(state.clone(), api::Serves::AllButOperatorConsole),
                    limits,
                    stopping.clone().cancelled_owned(),
                ),
                crate::server::serve(
                    ops_listener,
                    api::router_serving(state, api::Serves::OperatorConsoleOnly),
                    limits,
                    stopping.cancelled_owned(),
                ),
            );
        }
    }
    tracing::info!("stopped accepting requests; shutting down");
    workers.stop().await;
    services.db.close().await;
    Ok(())
}

/// One plugin engine per process; compiled components are cached under the data folder.
pub(crate) fn plugin_engine(config: &Config) -> Result<PluginEngine, courier_plugins::PluginError> {
    PluginEngine::new(EngineConfig {
        cache_dir: Some(config.data_dir.join("plugin-cache")),
        max_instances: config.plugin_instances,
        limits: courier_plugins::Limits {
            adapter_deadline: config.payments.calls.deadline,
            ..courier_plugins::Limits::default()
        },
        ..EngineConfig::default()
    })
}

/// Completes `period` after `shutdown` (or at a second signal), having begun `draining`: the
/// instance keeps serving meanwhile, reporting not ready, so a load balancer's health check
/// takes it out before it stops accepting connections.
async fn drain_after(
    shutdown: impl Future<Output = ()> + Send + 'static,
    draining: api::Draining,
    period: std::time::Duration,
) {
    shutdown.await;
    draining.begin();
    if period.is_zero() {
        return;
    }
    tracing::info!(
        drain_ms = period.as_millis(),
        "stopping: /readyz answers 503 service.draining; still serving until the drain ends"
    );
    tokio::select! {
        () = tokio::time::sleep(period) => {}
        () = shutdown_signal() => tracing::info!("told again: stopping now"),
    }
}

/// SIGINT or SIGTERM. The handlers are installed when this is called, not when the future is
/// first polled: a signal arriving in between (just after the instance reported ready) would
/// otherwise end the process at once, without its drain.
fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    async fn received(listener: std::io::Result<Signal>, name: &'static str) {
        match listener {
            Ok(mut listener) => {
                listener.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for {name}");
                std::future::pending::<()>().await;
            }
        }
    }
    let interrupt = received(signal(SignalKind::interrupt()), "SIGINT");
    let terminate = received(signal(SignalKind::terminate()), "SIGTERM");
    async move {
        tokio::select! {
            () = interrupt => {},
            () = terminate => {},
        }
    }
}
