//! Databases on a cluster the service manages itself.

use sqlx::PgConnection;

/// Creates `database` unless it exists; `admin` is connected to another database of the
/// cluster. Losing a race with another process that creates it is not an error.
pub async fn create_database_if_missing(
    admin: &mut PgConnection,
    database: &str,
) -> Result<(), sqlx::Error> {
    let exists: bool = sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS \"exists!\"",
        database,
    )
    .fetch_one(&mut *admin)
    .await?;
    if exists {
        return Ok(());
    }
    // Identifiers cannot be bound; callers pass fixed or generated names only.
    let quoted = database.replace('"', "\"\"");
    match sqlx::query(&format!("CREATE DATABASE \"{quoted}\""))
        .execute(admin)
        .await
    {
        Ok(_) => Ok(()),
        // Another process won the race: "already exists", or the catalogue's unique index.
        Err(sqlx::Error::Database(e))
            if matches!(e.code().as_deref(), Some("42P04") | Some("23505")) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}
