//! The fingerprint of the secret key a database was first used with.

use sqlx::PgPool;

/// Records `fingerprint` if the database has none yet; answers the one it has (the one just
/// recorded, or the first process's).
pub async fn recorded_fingerprint(
    pool: &PgPool,
    fingerprint: &[u8],
) -> Result<Vec<u8>, sqlx::Error> {
    sqlx::query!(
        "INSERT INTO secret_key_fingerprint (fingerprint) VALUES ($1) ON CONFLICT DO NOTHING",
        fingerprint,
    )
    .execute(pool)
    .await?;
    sqlx::query_scalar!("SELECT fingerprint FROM secret_key_fingerprint")
        .fetch_one(pool)
        .await
}
