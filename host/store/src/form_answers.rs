//! The merchant console's forms, each acted on once (migration 0240): a form's token claimed
//! by its first post, and the answer that post came to.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::Environment;

/// Whose form it is: a merchant in one environment.
#[derive(Clone, Copy, Debug)]
pub struct FormOwner {
    pub merchant_id: Uuid,
    pub environment: Environment,
}

/// What a form's first post came to, as kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptAnswer {
    pub form_path: String,
    pub answered: bool,
    pub location: Option<String>,
    pub page: Option<String>,
}

/// Claims `token` for its first post; None when it was claimed before (a repeat), with what
/// that post came to. Forgets claims older than `keep_since` on the way.
pub async fn claim(
    pool: &PgPool,
    owner: FormOwner,
    token: Uuid,
    form_path: &str,
    now: DateTime<Utc>,
    keep_since: DateTime<Utc>,
) -> Result<Option<KeptAnswer>, sqlx::Error> {
    sqlx::query!(
        "DELETE FROM console_form_answers WHERE claimed_at < $1",
        keep_since
    )
    .execute(pool)
    .await?;
    let claimed = sqlx::query_scalar!(
        "INSERT INTO console_form_answers \
           (merchant_id, environment, once_token, form_path, claimed_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING once_token",
        owner.merchant_id,
        owner.environment.as_str(),
        token,
        form_path,
        now,
    )
    .fetch_optional(pool)
    .await?;
    if claimed.is_some() {
        return Ok(None);
    }
    Ok(find(pool, owner, token).await?.or(Some(KeptAnswer {
        // Forgotten between the two statements: as good as lost.
        form_path: form_path.to_owned(),
        answered: false,
        location: None,
        page: None,
    })))
}

/// The answer kept for `token`.
pub async fn find(
    pool: &PgPool,
    owner: FormOwner,
    token: Uuid,
) -> Result<Option<KeptAnswer>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT form_path, answered_at IS NOT NULL AS \"answered!\", location, page \
         FROM console_form_answers \
         WHERE merchant_id = $1 AND environment = $2 AND once_token = $3",
        owner.merchant_id,
        owner.environment.as_str(),
        token,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| KeptAnswer {
        form_path: r.form_path,
        answered: r.answered,
        location: r.location,
        page: r.page,
    }))
}

/// Keeps what the first post came to: a redirect's `location`, or a `page` (neither for a
/// page that showed a secret).
pub async fn answer(
    pool: &PgPool,
    owner: FormOwner,
    token: Uuid,
    location: Option<&str>,
    page: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE console_form_answers SET answered_at = $4, location = $5, page = $6 \
         WHERE merchant_id = $1 AND environment = $2 AND once_token = $3",
        owner.merchant_id,
        owner.environment.as_str(),
        token,
        now,
        location,
        page,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Gives a claim back: the post was refused and did nothing, so the form may be sent again.
pub async fn release(pool: &PgPool, owner: FormOwner, token: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM console_form_answers \
         WHERE merchant_id = $1 AND environment = $2 AND once_token = $3",
        owner.merchant_id,
        owner.environment.as_str(),
        token,
    )
    .execute(pool)
    .await?;
    Ok(())
}
