//! One private PostgreSQL cluster per test run (or `DATABASE_URL` when set), a fresh
//! database per test, copied from a template migrated once per run (so the service finds its
//! migrations applied instead of applying them for every test).

use std::sync::OnceLock;

use sqlx::Connection;
use tokio::sync::OnceCell;
use uuid::Uuid;

use courier_core::infra::db::EmbeddedPostgres;

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
            courier_core::infra::db::MIGRATOR.run(&pool).await.unwrap();
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
