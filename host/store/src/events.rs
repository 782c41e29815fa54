//! The events outbox: each event is written in the transaction of the change that raised it.

use courier_domain::event::NewEvent;
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::writes::Writes;

/// Records `event` on `conn`, which must be the transaction of the change that raised it;
/// the caller wakes the fan-out after that transaction commits.
pub async fn record(conn: &mut PgConnection, event: &NewEvent) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::new_v4();
    Writes::new().and(insert(id, event)).execute(conn).await?;
    Ok(id)
}

/// [`record`] as one write of a statement that makes others ([`Writes`]).
pub fn insert<'a>(
    id: Uuid,
    event: &'a NewEvent,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| push_insert(query, id, event, None)
}

/// [`insert`] only if the statement's part `source` returned a row (it returns one or none):
/// the event of a change that the same statement makes only under a condition.
pub fn insert_if<'a>(
    id: Uuid,
    event: &'a NewEvent,
    source: &'static str,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| push_insert(query, id, event, Some(source))
}

fn push_insert<'a>(
    query: &mut QueryBuilder<'a, Postgres>,
    id: Uuid,
    event: &'a NewEvent,
    source: Option<&'static str>,
) {
    let job = event
        .job
        .as_ref()
        .map(|j| serde_json::to_value(j).expect("job facts serialise"));
    let details = serde_json::to_value(&event.details).expect("event details serialise");
    query.push(
        "INSERT INTO events (id, merchant_id, environment, name, job_id, occurred_at, job, \
         details) ",
    );
    query.push(if source.is_some() {
        "SELECT "
    } else {
        "VALUES ("
    });
    query
        .separated(", ")
        .push_bind(id)
        .push_bind(event.merchant_id)
        .push_bind(event.environment.as_str())
        .push_bind(event.name.as_str())
        .push_bind(event.job.as_ref().map(|j| j.id))
        .push_bind(event.occurred_at)
        .push_bind(job)
        .push_bind(details);
    match source {
        Some(source) => query.push(format_args!(" FROM {source}")),
        None => query.push(")"),
    };
}
