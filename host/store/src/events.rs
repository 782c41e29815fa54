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
    insert_many(vec![(id, event)])
}

/// Several events recorded by one write, in the order given ([`Writes`]).
pub fn insert_many<'a>(
    events: Vec<(Uuid, &'a NewEvent)>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(INSERT);
        query.push_values(events, |mut row, (id, event)| {
            push_values(&mut row, id, event)
        });
        query.push(INSERT_END);
    }
}

/// The name [`insert_many_telling`] gives its part of a statement ([`Writes::named`]); its
/// rows say, by `waiting`, whether each event awaits the webhook fan-out.
pub const RECORDED: &str = "recorded";

/// [`insert_many`], returning for each event whether it awaits the webhook fan-out (see
/// [`INSERT`]): the part to name [`RECORDED`], so that the statement can tell whether the
/// fan-out has anything to do.
pub fn insert_many_telling<'a>(
    events: Vec<(Uuid, &'a NewEvent)>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        insert_many(events)(query);
        query.push(" RETURNING fanned_out_at IS NULL AS waiting");
    }
}

/// [`insert`] only if the statement's part `source` returned a row (it returns one or none):
/// the event of a change that the same statement makes only under a condition.
pub fn insert_if<'a>(
    id: Uuid,
    event: &'a NewEvent,
    source: &'static str,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(INSERT).push("SELECT ");
        push_values(&mut query.separated(", "), id, event);
        query.push(format_args!(" FROM {source}")).push(INSERT_END);
    }
}

/// An event is written already fanned out when its merchant has no active webhook endpoint
/// in its environment: the fan-out would only mark it so (one statement more per event, and
/// the fan-out woken for nothing). Seen as of the statement's start, as the fan-out would see
/// it when it runs: an endpoint made active later takes the events recorded after it.
const INSERT: &str = "INSERT INTO events (id, merchant_id, environment, name, job_id, \
     occurred_at, job, details, fanned_out_at) \
     SELECT e.*, CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints w \
       WHERE w.merchant_id = e.merchant_id AND w.environment = e.environment \
         AND w.status = 'active') THEN NULL ELSE now() END \
     FROM (";

/// Closes [`INSERT`]'s rows.
const INSERT_END: &str =
    ") AS e (id, merchant_id, environment, name, job_id, occurred_at, job, details)";

fn push_values<'q, 'a>(
    row: &mut sqlx::query_builder::Separated<'q, 'a, Postgres, &'static str>,
    id: Uuid,
    event: &'a NewEvent,
) {
    let job = event
        .job
        .as_ref()
        .map(|j| serde_json::to_value(j).expect("job facts serialise"));
    let details = serde_json::to_value(&event.details).expect("event details serialise");
    row.push_bind(id)
        .push_bind(event.merchant_id)
        .push_bind(event.environment.as_str())
        .push_bind(event.name.as_str())
        .push_bind(event.job.as_ref().map(|j| j.id))
        .push_bind(event.occurred_at)
        .push_bind(job)
        .push_bind(details);
}
