use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

pub async fn lock_market(conn: &mut PgConnection, market_id: &str) -> Result<(), sqlx::Error> {
    // Serialises version numbering per market across processes, for this transaction.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtext('price_books:' || $1))",
        market_id,
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn insert_component(
    conn: &mut PgConnection,
    sha256: &str,
    world: &str,
    bytes: &[u8],
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO plugin_components (sha256, world, bytes) VALUES ($1, $2, $3) \
         ON CONFLICT (sha256) DO NOTHING",
        sha256,
        world,
        bytes,
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn component_bytes(pool: &PgPool, sha256: &str) -> Result<Vec<u8>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT bytes FROM plugin_components WHERE sha256 = $1",
        sha256,
    )
    .fetch_one(pool)
    .await
}

pub struct NewUpload<'a> {
    pub market_id: &'a str,
    pub sha256: &'a str,
    pub name: &'a str,
    pub version_label: &'a str,
    pub settings: &'a serde_json::Value,
    pub uploaded_by: &'a str,
}

/// Inserts an upload with the market's next version number; the caller holds the market lock.
pub async fn insert_upload(
    conn: &mut PgConnection,
    new: &NewUpload<'_>,
) -> Result<i32, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO price_book_uploads \
             (market_id, version, sha256, name, version_label, settings, uploaded_by) \
         SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5, $6 \
         FROM price_book_uploads WHERE market_id = $1 \
         RETURNING version",
        new.market_id,
        new.sha256,
        new.name,
        new.version_label,
        new.settings,
        new.uploaded_by,
    )
    .fetch_one(conn)
    .await
}

pub async fn upload_exists(
    conn: &mut PgConnection,
    market_id: &str,
    version: i32,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM price_book_uploads WHERE market_id = $1 AND version = $2) AS \"exists!\"",
        market_id,
        version,
    )
    .fetch_one(conn)
    .await
}

/// Records an activation with the market's next price_book_version; the caller holds the lock.
pub async fn insert_activation(
    conn: &mut PgConnection,
    market_id: &str,
    upload_version: i32,
    activated_by: &str,
) -> Result<i32, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO price_book_activations \
             (market_id, price_book_version, upload_version, activated_by) \
         SELECT $1, COALESCE(MAX(price_book_version), 0) + 1, $2, $3 \
         FROM price_book_activations WHERE market_id = $1 \
         RETURNING price_book_version",
        market_id,
        upload_version,
        activated_by,
    )
    .fetch_one(conn)
    .await
}

/// The upload in force in `market_id` (its latest activation's), read in the caller's
/// transaction.
pub async fn active_upload_version(
    conn: &mut PgConnection,
    market_id: &str,
) -> Result<Option<i32>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT upload_version FROM price_book_activations WHERE market_id = $1 \
         ORDER BY price_book_version DESC LIMIT 1",
        market_id,
    )
    .fetch_optional(conn)
    .await
}

pub async fn has_activation(conn: &mut PgConnection, market_id: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM price_book_activations WHERE market_id = $1) AS \"exists!\"",
        market_id,
    )
    .fetch_one(conn)
    .await
}

/// The channel every process listens on for activations; the payload is the market id.
pub const ACTIVATION_CHANNEL: &str = "courier_price_book_activated";

pub async fn notify_activation(
    conn: &mut PgConnection,
    market_id: &str,
) -> Result<(), sqlx::Error> {
    super::notify(conn, ACTIVATION_CHANNEL, market_id).await
}

/// The upload a market's latest activation points at.
#[derive(sqlx::FromRow)]
pub struct ActiveRow {
    pub price_book_version: i32,
    pub upload_version: i32,
    pub sha256: String,
    pub settings: serde_json::Value,
}

pub async fn active(pool: &PgPool, market_id: &str) -> Result<Option<ActiveRow>, sqlx::Error> {
    sqlx::query_as!(
        ActiveRow,
        "SELECT a.price_book_version, a.upload_version, u.sha256, u.settings \
         FROM price_book_activations a \
         JOIN price_book_uploads u ON u.market_id = a.market_id AND u.version = a.upload_version \
         WHERE a.market_id = $1 ORDER BY a.price_book_version DESC LIMIT 1",
        market_id,
    )
    .fetch_optional(pool)
    .await
}

#[derive(sqlx::FromRow)]
pub struct UploadRow {
    pub version: i32,
    pub sha256: String,
    pub name: String,
    pub version_label: String,
    pub settings: serde_json::Value,
    pub uploaded_by: String,
    pub uploaded_at: DateTime<Utc>,
    /// The price_book_versions under which this upload was activated.
    pub activations: Vec<i32>,
}

/// The uploads of a market (all, or only `version`), oldest first, with their activations.
async fn uploads_where(
    pool: &PgPool,
    market_id: &str,
    version: Option<i32>,
) -> Result<Vec<UploadRow>, sqlx::Error> {
    sqlx::query_as!(
        UploadRow,
        "SELECT u.version, u.sha256, u.name, u.version_label, u.settings, u.uploaded_by, \
                u.uploaded_at, \
                COALESCE(ARRAY_AGG(a.price_book_version ORDER BY a.price_book_version) \
                         FILTER (WHERE a.price_book_version IS NOT NULL), '{}') AS \"activations!\" \
         FROM price_book_uploads u \
         LEFT JOIN price_book_activations a \
             ON a.market_id = u.market_id AND a.upload_version = u.version \
         WHERE u.market_id = $1 AND ($2::integer IS NULL OR u.version = $2) \
         GROUP BY u.market_id, u.version ORDER BY u.version",
        market_id,
        version,
    )
    .fetch_all(pool)
    .await
}

pub async fn uploads(pool: &PgPool, market_id: &str) -> Result<Vec<UploadRow>, sqlx::Error> {
    uploads_where(pool, market_id, None).await
}

pub async fn upload(
    pool: &PgPool,
    market_id: &str,
    version: i32,
) -> Result<Option<UploadRow>, sqlx::Error> {
    Ok(uploads_where(pool, market_id, Some(version)).await?.pop())
}
