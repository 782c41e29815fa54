use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::charge::CardStatus;
use courier_domain::{Environment, JobStatus, Vehicle};

use crate::text::{Text, column};
use crate::writes::Writes;

/// A job as stored (and, as JSON, as a booking between its phases keeps it).
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct JobRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    #[sqlx(try_from = "Text<Environment>")]
    pub environment: Environment,
    pub quote_id: Uuid,
    pub reference: String,
    pub tracking_token: String,
    #[sqlx(try_from = "Text<JobStatus>")]
    pub status: JobStatus,
    pub market_id: String,
    pub currency: String,
    pub price_amount_minor: i64,
    pub tax_amount_minor: i64,
    #[sqlx(try_from = "Text<Vehicle>")]
    pub vehicle: Vehicle,
    pub pickup: serde_json::Value,
    pub dropoff: serde_json::Value,
    pub items: serde_json::Value,
    pub items_subtotal_minor: i64,
    pub discount_minor: i64,
    pub items_total_minor: i64,
    pub notify_customer: bool,
    pub customer_notified_at: Option<DateTime<Utc>>,
    pub proof_photo_required: bool,
    pub proof_signature_required: bool,
    pub proof: Option<serde_json::Value>,
    pub courier_id: Option<Uuid>,
    pub booked_at: DateTime<Utc>,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub search_opens_at: Option<DateTime<Utc>>,
    pub assigned_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub cancellation_reason: Option<String>,
    /// When the job last entered `searching`, when it did after booking.
    pub search_opened_at: Option<DateTime<Utc>>,
}

/// A `jobs` row as the query macros read it from `SELECT *`, its names still text: [`JobRow`]'s
/// conversion reads them, and a name this code does not know is a decode error.
pub(crate) struct JobRecord {
    pub(crate) id: Uuid,
    pub(crate) merchant_id: Uuid,
    pub(crate) environment: String,
    pub(crate) quote_id: Uuid,
    pub(crate) reference: String,
    pub(crate) tracking_token: String,
    pub(crate) status: String,
    pub(crate) market_id: String,
    pub(crate) currency: String,
    pub(crate) price_amount_minor: i64,
    pub(crate) tax_amount_minor: i64,
    pub(crate) vehicle: String,
    pub(crate) pickup: serde_json::Value,
    pub(crate) dropoff: serde_json::Value,
    pub(crate) items: serde_json::Value,
    pub(crate) items_subtotal_minor: i64,
    pub(crate) discount_minor: i64,
    pub(crate) items_total_minor: i64,
    pub(crate) notify_customer: bool,
    pub(crate) customer_notified_at: Option<DateTime<Utc>>,
    pub(crate) proof_photo_required: bool,
    pub(crate) proof_signature_required: bool,
    pub(crate) proof: Option<serde_json::Value>,
    pub(crate) courier_id: Option<Uuid>,
    pub(crate) booked_at: DateTime<Utc>,
    pub(crate) scheduled_for: Option<DateTime<Utc>>,
    pub(crate) search_opens_at: Option<DateTime<Utc>>,
    pub(crate) assigned_at: Option<DateTime<Utc>>,
    pub(crate) completed_at: Option<DateTime<Utc>>,
    pub(crate) cancellation_reason: Option<String>,
    pub(crate) search_opened_at: Option<DateTime<Utc>>,
}

impl TryFrom<JobRecord> for JobRow {
    type Error = sqlx::Error;

    fn try_from(record: JobRecord) -> Result<Self, Self::Error> {
        Ok(JobRow {
            environment: column("environment", &record.environment)?,
            status: column("status", &record.status)?,
            vehicle: column("vehicle", &record.vehicle)?,
            id: record.id,
            merchant_id: record.merchant_id,
            quote_id: record.quote_id,
            reference: record.reference,
            tracking_token: record.tracking_token,
            market_id: record.market_id,
            currency: record.currency,
            price_amount_minor: record.price_amount_minor,
            tax_amount_minor: record.tax_amount_minor,
            pickup: record.pickup,
            dropoff: record.dropoff,
            items: record.items,
            items_subtotal_minor: record.items_subtotal_minor,
            discount_minor: record.discount_minor,
            items_total_minor: record.items_total_minor,
            notify_customer: record.notify_customer,
            customer_notified_at: record.customer_notified_at,
            proof_photo_required: record.proof_photo_required,
            proof_signature_required: record.proof_signature_required,
            proof: record.proof,
            courier_id: record.courier_id,
            booked_at: record.booked_at,
            scheduled_for: record.scheduled_for,
            search_opens_at: record.search_opens_at,
            assigned_at: record.assigned_at,
            completed_at: record.completed_at,
            cancellation_reason: record.cancellation_reason,
            search_opened_at: record.search_opened_at,
        })
    }
}

impl JobRow {
    /// When the job's search opened (or opens, for a scheduled job).
    pub fn search_start(&self) -> chrono::DateTime<chrono::Utc> {
        self.search_opened_at
            .or(self.search_opens_at)
            .unwrap_or(self.booked_at)
    }
}

/// Marks the quote used, at the booking time ([`Writes`]).
pub fn mark_quote_used<'a>(
    quote_id: Uuid,
    at: DateTime<Utc>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("UPDATE quotes SET used_at = ")
            .push_bind(at)
            .push(" WHERE id = ")
            .push_bind(quote_id);
    }
}

/// Inserts newly booked jobs, one row each ([`Writes`]).
pub fn insert_jobs<'a>(
    jobs: Vec<&'a JobRow>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "INSERT INTO jobs (id, merchant_id, environment, quote_id, reference, tracking_token, \
             status, market_id, currency, price_amount_minor, tax_amount_minor, vehicle, pickup, \
             dropoff, items, items_subtotal_minor, discount_minor, items_total_minor, \
             notify_customer, proof_photo_required, proof_signature_required, booked_at, \
             scheduled_for, search_opens_at) ",
        );
        query.push_values(jobs, |mut row, j| {
            row.push_bind(j.id)
                .push_bind(j.merchant_id)
                .push_bind(j.environment.as_str())
                .push_bind(j.quote_id)
                .push_bind(&j.reference)
                .push_bind(&j.tracking_token)
                .push_bind(j.status.as_str())
                .push_bind(&j.market_id)
                .push_bind(&j.currency)
                .push_bind(j.price_amount_minor)
                .push_bind(j.tax_amount_minor)
                .push_bind(j.vehicle.as_str())
                .push_bind(&j.pickup)
                .push_bind(&j.dropoff)
                .push_bind(&j.items)
                .push_bind(j.items_subtotal_minor)
                .push_bind(j.discount_minor)
                .push_bind(j.items_total_minor)
                .push_bind(j.notify_customer)
                .push_bind(j.proof_photo_required)
                .push_bind(j.proof_signature_required)
                .push_bind(j.booked_at)
                .push_bind(j.scheduled_for)
                .push_bind(j.search_opens_at);
        });
    }
}

/// The merchant's own job in that environment; another merchant's job is not found.
pub async fn find(
    pool: &PgPool,
    merchant_id: Uuid,
    environment: Environment,
    id: Uuid,
) -> Result<Option<JobRow>, sqlx::Error> {
    // By the primary key alone, the owner checked here: with the owner in the statement, a
    // table not yet analyzed (a new database, a burst of bookings) is read through the
    // merchant's index, every one of the merchant's jobs, on every read (BENCHMARKS.md).
    let job = sqlx::query_as!(JobRecord, "SELECT * FROM jobs WHERE id = $1", id)
        .fetch_optional(pool)
        .await?
        .map(JobRow::try_from)
        .transpose()?;
    Ok(job.filter(|j| j.merchant_id == merchant_id && j.environment == environment))
}

pub struct ListFilter<'a> {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub statuses: &'a [&'a str],
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub limit: i64,
    pub offset: i64,
    /// `total` counts matches up to this many, no further.
    pub count_up_to: i64,
}

fn push_filter<'a>(query: &mut QueryBuilder<'a, Postgres>, filter: &'a ListFilter<'a>) {
    query
        .push(" WHERE merchant_id = ")
        .push_bind(filter.merchant_id)
        .push(" AND environment = ")
        .push_bind(filter.environment.as_str());
    if !filter.statuses.is_empty() {
        query
            .push(" AND status = ANY(")
            .push_bind(filter.statuses)
            .push(")");
    }
    if let Some(from) = filter.from {
        query.push(" AND booked_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND booked_at < ").push_bind(to);
    }
}

/// One page of the merchant's jobs, newest first, and how many match, counted up to
/// `filter.count_up_to`.
pub async fn list(
    pool: &PgPool,
    filter: &ListFilter<'_>,
) -> Result<(Vec<JobRow>, i64), sqlx::Error> {
    let mut query = QueryBuilder::new("SELECT * FROM jobs");
    push_filter(&mut query, filter);
    query
        .push(" ORDER BY booked_at DESC, id DESC LIMIT ")
        .push_bind(filter.limit)
        .push(" OFFSET ")
        .push_bind(filter.offset);
    let rows = query.build_query_as().fetch_all(pool).await?;
    let mut count = QueryBuilder::new("SELECT count(*) FROM (SELECT 1 FROM jobs");
    push_filter(&mut count, filter);
    count
        .push(" LIMIT ")
        .push_bind(filter.count_up_to)
        .push(") AS matches");
    let total: i64 = count.build_query_scalar().fetch_one(pool).await?;
    Ok((rows, total))
}

/// Opens the search of pending jobs whose time has come; returns how many moved. One
/// statement, so concurrent workers on several instances never move a job twice.
pub async fn open_due_searches(pool: &PgPool, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let moved = sqlx::query!(
        "UPDATE jobs SET status = 'searching', search_opened_at = $1 WHERE id IN ( \
             SELECT id FROM jobs WHERE status = 'pending' AND search_opens_at <= $1 \
             ORDER BY search_opens_at LIMIT 500 FOR UPDATE SKIP LOCKED)",
        now,
    )
    .execute(pool)
    .await?;
    Ok(moved.rows_affected())
}

/// A quote being booked, with the account settings of the merchant it was made for.
pub struct QuoteToBook {
    pub quote: crate::quotes::QuoteRow,
    pub notify_customer_default: bool,
    pub proof_photo_required: bool,
    pub proof_signature_required: bool,
}

/// What claiming a booking's idempotency key found.
// Made once per booking and taken apart at once: the size of the claimed variant costs one
// move, where a box would cost an allocation.
#[allow(clippy::large_enum_variant)]
pub enum BookingClaim {
    /// This request owns the key (its response is stored before the transaction commits),
    /// with the quote it names, locked for this transaction, and the card a charge would go
    /// on, where they exist.
    Claimed {
        quote: Option<QuoteToBook>,
        card: Option<crate::payments::CardRow>,
    },
    /// An earlier request with this key committed.
    Taken(TakenKey),
}

/// What a booking reads before it writes: the key, when an earlier request holds it, the
/// quote named (with its merchant's settings) and the usable card, where they exist. One row
/// of [`claim_booking`] or [`find_booking`], taken apart by [`BookingFound::parts`].
struct BookingFound {
    taken: bool,
    taken_request_hash: Option<Vec<u8>>,
    taken_response_status: Option<i32>,
    taken_response_body: Option<serde_json::Value>,
    quote_id: Option<Uuid>,
    quote_merchant_id: Option<Uuid>,
    quote_environment: Option<Text<Environment>>,
    market_id: Option<String>,
    currency: Option<String>,
    vehicle: Option<Text<Vehicle>>,
    pickup_latitude: Option<f64>,
    pickup_longitude: Option<f64>,
    pickup_postcode: Option<String>,
    dropoff_latitude: Option<f64>,
    dropoff_longitude: Option<f64>,
    dropoff_postcode: Option<String>,
    weight_grams: Option<i32>,
    scheduled_for: Option<DateTime<Utc>>,
    priced_for: Option<DateTime<Utc>>,
    demand_permille: Option<i64>,
    distance_metres: Option<i32>,
    duration_seconds: Option<i32>,
    total_amount_minor: Option<i64>,
    breakdown: Option<serde_json::Value>,
    price_book_version: Option<i32>,
    created_at: Option<DateTime<Utc>>,
    expires_at: Option<DateTime<Utc>>,
    used_at: Option<DateTime<Utc>>,
    notify_customer_default: Option<bool>,
    proof_photo_required: Option<bool>,
    proof_signature_required: Option<bool>,
    card_id: Option<Uuid>,
    card_merchant_id: Option<Uuid>,
    card_environment: Option<Text<Environment>>,
    card_provider_ref: Option<String>,
    card_customer_id: Option<String>,
    card_brand: Option<String>,
    card_last_four: Option<String>,
    card_expiry_month: Option<i32>,
    card_expiry_year: Option<i32>,
    card_status: Option<Text<CardStatus>>,
    card_is_default: Option<bool>,
    card_attached_at: Option<DateTime<Utc>>,
    card_dead_reason: Option<String>,
    card_died_at: Option<DateTime<Utc>>,
    card_removed_at: Option<DateTime<Utc>>,
}

impl BookingFound {
    /// The key as an earlier request left it: its body's hash and stored answer.
    fn taken_key(&mut self) -> Option<TakenKey> {
        Some(TakenKey {
            request_hash: self.taken_request_hash.take()?,
            response: self
                .taken_response_status
                .zip(self.taken_response_body.take()),
        })
    }

    fn parts(self) -> Result<(Option<QuoteToBook>, Option<crate::payments::CardRow>), sqlx::Error> {
        let r = self;
        // A row the statement found has every column it declares not null.
        let missing = || sqlx::Error::Decode("a found quote or card lacks a column".into());
        let quote = match r.quote_id {
            None => None,
            Some(id) => Some(QuoteToBook {
                quote: crate::quotes::QuoteRow {
                    id,
                    merchant_id: r.quote_merchant_id.ok_or_else(missing)?,
                    environment: r.quote_environment.ok_or_else(missing)?.into(),
                    market_id: r.market_id.ok_or_else(missing)?,
                    currency: r.currency.ok_or_else(missing)?,
                    vehicle: r.vehicle.ok_or_else(missing)?.into(),
                    pickup_latitude: r.pickup_latitude.ok_or_else(missing)?,
                    pickup_longitude: r.pickup_longitude.ok_or_else(missing)?,
                    pickup_postcode: r.pickup_postcode,
                    dropoff_latitude: r.dropoff_latitude.ok_or_else(missing)?,
                    dropoff_longitude: r.dropoff_longitude.ok_or_else(missing)?,
                    dropoff_postcode: r.dropoff_postcode,
                    weight_grams: r.weight_grams.ok_or_else(missing)?,
                    scheduled_for: r.scheduled_for,
                    priced_for: r.priced_for.ok_or_else(missing)?,
                    demand_permille: r.demand_permille.ok_or_else(missing)?,
                    distance_metres: r.distance_metres.ok_or_else(missing)?,
                    duration_seconds: r.duration_seconds.ok_or_else(missing)?,
                    total_amount_minor: r.total_amount_minor.ok_or_else(missing)?,
                    breakdown: r.breakdown.ok_or_else(missing)?,
                    price_book_version: r.price_book_version.ok_or_else(missing)?,
                    created_at: r.created_at.ok_or_else(missing)?,
                    expires_at: r.expires_at.ok_or_else(missing)?,
                    used_at: r.used_at,
                },
                notify_customer_default: r.notify_customer_default.ok_or_else(missing)?,
                proof_photo_required: r.proof_photo_required.ok_or_else(missing)?,
                proof_signature_required: r.proof_signature_required.ok_or_else(missing)?,
            }),
        };
        let card = match r.card_id {
            None => None,
            Some(id) => Some(crate::payments::CardRow {
                id,
                merchant_id: r.card_merchant_id.ok_or_else(missing)?,
                environment: r.card_environment.ok_or_else(missing)?.into(),
                provider_ref: r.card_provider_ref.ok_or_else(missing)?,
                customer_id: r.card_customer_id.ok_or_else(missing)?,
                brand: r.card_brand.ok_or_else(missing)?,
                last_four: r.card_last_four.ok_or_else(missing)?,
                expiry_month: r.card_expiry_month.ok_or_else(missing)?,
                expiry_year: r.card_expiry_year.ok_or_else(missing)?,
                status: r.card_status.ok_or_else(missing)?.into(),
                is_default: r.card_is_default.ok_or_else(missing)?,
                attached_at: r.card_attached_at.ok_or_else(missing)?,
                dead_reason: r.card_dead_reason,
                died_at: r.card_died_at,
                removed_at: r.card_removed_at,
            }),
        };
        Ok((quote, card))
    }
}

/// An idempotency key an earlier request holds: its body's hash and stored answer (none
/// while its booking is between phases).
pub struct TakenKey {
    pub request_hash: Vec<u8>,
    pub response: Option<(i32, serde_json::Value)>,
}

/// Claims a booking's idempotency key and, once it is this request's, locks the quote and
/// reads the merchant's settings and usable card, in one statement: the key first, so a
/// concurrent twin waits on the key's unique index until this transaction ends and never
/// takes the quote's lock. No quote is looked up without `quote_id` (a body that does not
/// parse is still checked against the key).
pub async fn claim_booking(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    key: &str,
    request_hash: &[u8],
    quote_id: Option<Uuid>,
) -> Result<BookingClaim, sqlx::Error> {
    // The card is chosen as `payments::usable_card` chooses it.
    let found = sqlx::query_as!(
        BookingFound,
        "WITH claimed AS ( \
           INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash) \
           VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1), \
         quote AS ( \
           SELECT q.*, m.notify_customer_default, m.proof_photo_required, \
             m.proof_signature_required \
           FROM quotes q JOIN merchants m ON m.id = q.merchant_id \
           WHERE q.id = $5 AND EXISTS (SELECT 1 FROM claimed) FOR UPDATE OF q), \
         card AS ( \
           SELECT * FROM payment_methods \
           WHERE merchant_id = $1 AND environment = $2 AND status = 'active' \
             AND removed_at IS NULL AND EXISTS (SELECT 1 FROM claimed) \
           ORDER BY is_default DESC, attached_at DESC, id LIMIT 1) \
         SELECT NOT EXISTS (SELECT 1 FROM claimed) AS \"taken!\", \
           NULL::bytea AS taken_request_hash, NULL::integer AS taken_response_status, \
           NULL::jsonb AS taken_response_body, \
           q.id AS \"quote_id?\", q.merchant_id AS \"quote_merchant_id?\", \
           q.environment AS \"quote_environment?: Text<Environment>\", \
           q.market_id AS \"market_id?\", q.currency AS \"currency?\", \
           q.vehicle AS \"vehicle?: Text<Vehicle>\", \
           q.pickup_latitude AS \"pickup_latitude?\", \
           q.pickup_longitude AS \"pickup_longitude?\", q.pickup_postcode, \
           q.dropoff_latitude AS \"dropoff_latitude?\", \
           q.dropoff_longitude AS \"dropoff_longitude?\", q.dropoff_postcode, \
           q.weight_grams AS \"weight_grams?\", q.scheduled_for, \
           q.priced_for AS \"priced_for?\", q.demand_permille AS \"demand_permille?\", \
           q.distance_metres AS \"distance_metres?\", \
           q.duration_seconds AS \"duration_seconds?\", \
           q.total_amount_minor AS \"total_amount_minor?\", q.breakdown AS \"breakdown?\", \
           q.price_book_version AS \"price_book_version?\", \
           q.created_at AS \"created_at?\", q.expires_at AS \"expires_at?\", q.used_at, \
           q.notify_customer_default AS \"notify_customer_default?\", \
           q.proof_photo_required AS \"proof_photo_required?\", \
           q.proof_signature_required AS \"proof_signature_required?\", \
           c.id AS \"card_id?\", c.merchant_id AS \"card_merchant_id?\", \
           c.environment AS \"card_environment?: Text<Environment>\", \
           c.provider_ref AS \"card_provider_ref?\", c.customer_id AS \"card_customer_id?\", \
           c.brand AS \"card_brand?\", c.last_four AS \"card_last_four?\", \
           c.expiry_month AS \"card_expiry_month?\", c.expiry_year AS \"card_expiry_year?\", \
           c.status AS \"card_status?: Text<CardStatus>\", \
           c.is_default AS \"card_is_default?\", c.attached_at AS \"card_attached_at?\", \
           c.dead_reason AS card_dead_reason, c.died_at AS card_died_at, \
           c.removed_at AS card_removed_at \
         FROM (SELECT 1) AS one LEFT JOIN quote q ON true LEFT JOIN card c ON true",
        merchant_id,
        environment.as_str(),
        key,
        request_hash,
        quote_id,
    )
    .fetch_one(&mut *conn)
    .await?;
    if found.taken {
        // Committed by a twin this statement waited for, so not in the statement's snapshot.
        return Ok(BookingClaim::Taken(
            taken_key(conn, merchant_id, environment, key).await?,
        ));
    }
    let (quote, card) = found.parts()?;
    Ok(BookingClaim::Claimed { quote, card })
}

/// What [`find_booking`] read.
pub struct BookingLookup {
    /// The key, when an earlier request holds it (then nothing else is read).
    pub taken: Option<TakenKey>,
    pub quote: Option<QuoteToBook>,
    pub card: Option<crate::payments::CardRow>,
}

/// What a booking asks [`find_bookings`] for.
pub struct BookingAsked<'a> {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key: &'a str,
    pub quote_id: Option<Uuid>,
}

/// Reads what a booking needs, without locking or writing anything: the key if an earlier
/// request committed it, else the quote with its merchant's settings and the usable card
/// (chosen as [`claim_booking`] chooses it). [`book_at_once`] then checks what could have
/// changed.
pub async fn find_booking(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    key: &str,
    quote_id: Option<Uuid>,
) -> Result<BookingLookup, sqlx::Error> {
    let asked = BookingAsked {
        merchant_id,
        environment,
        key,
        quote_id,
    };
    let mut found = find_bookings(conn, &[asked]).await?;
    found
        .pop()
        .ok_or_else(|| sqlx::Error::Protocol("a booking's read returned no row".into()))
}

/// [`find_booking`] for several bookings in one statement: one lookup each, in their order.
pub async fn find_bookings(
    conn: &mut PgConnection,
    asked: &[BookingAsked<'_>],
) -> Result<Vec<BookingLookup>, sqlx::Error> {
    let merchant_ids: Vec<Uuid> = asked.iter().map(|a| a.merchant_id).collect();
    let environments: Vec<&str> = asked.iter().map(|a| a.environment.as_str()).collect();
    let keys: Vec<&str> = asked.iter().map(|a| a.key).collect();
    let quote_ids: Vec<Option<Uuid>> = asked.iter().map(|a| a.quote_id).collect();
    // One row per booking asked, whatever is found: the key by its primary key, and the
    // quote and the card only when the key is free. Each lookup is a `LATERAL … LIMIT 1`, a
    // lookup per booking: with the key as a plain join, a batch read cost 29 buffers and
    // 141 µs a booking, where one booking read alone had cost 10 buffers and 79 µs.
    let found = sqlx::query_as!(
        BookingFound,
        "SELECT k.request_hash IS NOT NULL AS \"taken!\", \
           k.request_hash AS \"taken_request_hash?\", \
           k.response_status AS taken_response_status, \
           k.response_body AS taken_response_body, \
           q.id AS \"quote_id?\", q.merchant_id AS \"quote_merchant_id?\", \
           q.environment AS \"quote_environment?: Text<Environment>\", \
           q.market_id AS \"market_id?\", q.currency AS \"currency?\", \
           q.vehicle AS \"vehicle?: Text<Vehicle>\", \
           q.pickup_latitude AS \"pickup_latitude?\", \
           q.pickup_longitude AS \"pickup_longitude?\", q.pickup_postcode, \
           q.dropoff_latitude AS \"dropoff_latitude?\", \
           q.dropoff_longitude AS \"dropoff_longitude?\", q.dropoff_postcode, \
           q.weight_grams AS \"weight_grams?\", q.scheduled_for, \
           q.priced_for AS \"priced_for?\", q.demand_permille AS \"demand_permille?\", \
           q.distance_metres AS \"distance_metres?\", \
           q.duration_seconds AS \"duration_seconds?\", \
           q.total_amount_minor AS \"total_amount_minor?\", q.breakdown AS \"breakdown?\", \
           q.price_book_version AS \"price_book_version?\", \
           q.created_at AS \"created_at?\", q.expires_at AS \"expires_at?\", q.used_at, \
           q.notify_customer_default AS \"notify_customer_default?\", \
           q.proof_photo_required AS \"proof_photo_required?\", \
           q.proof_signature_required AS \"proof_signature_required?\", \
           c.id AS \"card_id?\", c.merchant_id AS \"card_merchant_id?\", \
           c.environment AS \"card_environment?: Text<Environment>\", \
           c.provider_ref AS \"card_provider_ref?\", c.customer_id AS \"card_customer_id?\", \
           c.brand AS \"card_brand?\", c.last_four AS \"card_last_four?\", \
           c.expiry_month AS \"card_expiry_month?\", c.expiry_year AS \"card_expiry_year?\", \
           c.status AS \"card_status?: Text<CardStatus>\", \
           c.is_default AS \"card_is_default?\", c.attached_at AS \"card_attached_at?\", \
           c.dead_reason AS card_dead_reason, c.died_at AS card_died_at, \
           c.removed_at AS card_removed_at \
         FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::uuid[]) \
           WITH ORDINALITY AS a (merchant_id, environment, key, quote_id, n) \
         LEFT JOIN LATERAL ( \
           SELECT request_hash, response_status, response_body FROM idempotency_keys \
           WHERE merchant_id = a.merchant_id AND environment = a.environment \
             AND key = a.key LIMIT 1) k ON true \
         LEFT JOIN LATERAL ( \
           SELECT q.*, m.notify_customer_default, m.proof_photo_required, \
             m.proof_signature_required \
           FROM quotes q JOIN merchants m ON m.id = q.merchant_id \
           WHERE q.id = a.quote_id AND k.request_hash IS NULL LIMIT 1) q ON true \
         LEFT JOIN LATERAL ( \
           SELECT * FROM payment_methods p \
           WHERE p.merchant_id = a.merchant_id AND p.environment = a.environment \
             AND p.status = 'active' AND p.removed_at IS NULL AND k.request_hash IS NULL \
           ORDER BY p.is_default DESC, p.attached_at DESC, p.id LIMIT 1) c ON true \
         ORDER BY a.n",
        &merchant_ids,
        &environments as &[&str],
        &keys as &[&str],
        &quote_ids as &[Option<Uuid>],
    )
    .fetch_all(&mut *conn)
    .await?;
    if found.len() != asked.len() {
        return Err(sqlx::Error::Protocol(format!(
            "{} bookings' reads returned {} rows",
            asked.len(),
            found.len()
        )));
    }
    found
        .into_iter()
        .map(|mut found| {
            let taken = found.taken_key();
            let (quote, card) = found.parts()?;
            Ok(BookingLookup { taken, quote, card })
        })
        .collect()
}

/// The key an earlier request committed.
pub async fn taken_key(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    key: &str,
) -> Result<TakenKey, sqlx::Error> {
    let taken = sqlx::query!(
        "SELECT request_hash, response_status, response_body FROM idempotency_keys \
         WHERE merchant_id = $1 AND environment = $2 AND key = $3",
        merchant_id,
        environment.as_str(),
        key,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(TakenKey {
        request_hash: taken.request_hash,
        response: taken.response_status.zip(taken.response_body),
    })
}

/// A booking's idempotency key with the answer it stores for replays.
pub struct AnsweredKey<'a> {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key: &'a str,
    pub request_hash: &'a [u8],
    pub status: i32,
    pub body: &'a serde_json::Value,
}

/// How [`book_at_once`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum BookedAtOnce {
    /// Everything written and committed.
    Booked,
    /// A twin committed the key first (read it with [`taken_key`]); nothing written.
    KeyTaken,
    /// The quote was booked meanwhile; nothing written.
    QuoteTaken,
}

/// SQLSTATE of `booking_conflict` (migration 0110).
const BOOKING_CONFLICT: &str = "CB409";

/// A booking's key with its stored answer, and the quote it marks used.
pub struct KeyAndQuote<'a> {
    pub key: AnsweredKey<'a>,
    pub quote_id: Uuid,
    pub used_at: DateTime<Utc>,
}

/// Books in one statement outside any explicit transaction, so in one round trip with its
/// commit: claims each booking's key with its stored answer, marks its quote used and makes
/// `writes` (the jobs and what goes with them), all or nothing. What [`find_booking`] read is
/// checked where it could have changed: a twin holding a key is waited for, as is a
/// concurrent booking of a quote, and any of them having won writes nothing. With several
/// bookings, the outcome says the first conflict found.
pub async fn book_at_once<'a>(
    conn: &mut PgConnection,
    bookings: &'a [KeyAndQuote<'a>],
    writes: Writes<'a>,
) -> Result<BookedAtOnce, sqlx::Error> {
    let count = i64::try_from(bookings.len()).expect("a batch fits an i64");
    let claim = move |query: &mut QueryBuilder<'a, Postgres>| {
        query.push(
            "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash, \
             response_status, response_body) ",
        );
        query.push_values(bookings, |mut row, b| {
            row.push_bind(b.key.merchant_id)
                .push_bind(b.key.environment.as_str())
                .push_bind(b.key.key)
                .push_bind(b.key.request_hash)
                .push_bind(b.key.status)
                .push_bind(b.key.body);
        });
        query.push(" ON CONFLICT DO NOTHING RETURNING 1");
    };
    // Only once every key is claimed: a key found taken undoes the statement anyway, and
    // its quote's row is then neither waited for nor locked.
    let mark = move |query: &mut QueryBuilder<'a, Postgres>| {
        query.push("UPDATE quotes SET used_at = booked.used_at FROM (");
        query.push_values(bookings, |mut row, b| {
            row.push_bind(b.quote_id).push_bind(b.used_at);
        });
        query
            .push(
                ") AS booked (id, used_at) WHERE quotes.id = booked.id \
                   AND quotes.used_at IS NULL AND (SELECT count(*) FROM claimed) = ",
            )
            .push_bind(count)
            .push(" RETURNING 1");
    };
    let statement = Writes::new()
        .named("claimed", claim)
        .named("marked", mark)
        .then(writes);
    // A quote named twice is marked once, so it counts as taken.
    let ended = statement
        .execute_ending(
            conn,
            &format!(
                "SELECT booking_conflict(CASE \
                   WHEN (SELECT count(*) FROM claimed) < {count} THEN 'key_taken' \
                   WHEN (SELECT count(*) FROM marked) < {count} THEN 'quote_taken' END)"
            ),
        )
        .await;
    match ended {
        Ok(()) => Ok(BookedAtOnce::Booked),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(BOOKING_CONFLICT) => {
            Ok(match e.message() {
                "key_taken" => BookedAtOnce::KeyTaken,
                _ => BookedAtOnce::QuoteTaken,
            })
        }
        Err(e) => Err(e),
    }
}

/// The latest position of a courier, if seen since `fresh_since`.
pub async fn courier_position(
    pool: &PgPool,
    courier_id: Uuid,
    fresh_since: DateTime<Utc>,
) -> Result<Option<(f64, f64, DateTime<Utc>)>, sqlx::Error> {
    let position = sqlx::query!(
        "SELECT latitude, longitude, seen_at FROM courier_positions \
         WHERE courier_id = $1 AND seen_at >= $2",
        courier_id,
        fresh_since,
    )
    .fetch_optional(pool)
    .await?;
    Ok(position.map(|p| (p.latitude, p.longitude, p.seen_at)))
}

/// Stores the response of the booking that claimed the key, for its replays ([`Writes`]).
pub fn store_response<'a>(
    merchant_id: Uuid,
    environment: Environment,
    key: &'a str,
    status: i32,
    body: &'a serde_json::Value,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("UPDATE idempotency_keys SET response_status = ")
            .push_bind(status)
            .push(", response_body = ")
            .push_bind(body)
            .push(" WHERE merchant_id = ")
            .push_bind(merchant_id)
            .push(" AND environment = ")
            .push_bind(environment.as_str())
            .push(" AND key = ")
            .push_bind(key);
    }
}

/// Forgets keys older than `before`.
pub async fn expire_keys(pool: &PgPool, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query!("DELETE FROM idempotency_keys WHERE created_at < $1", before,)
            .execute(pool)
            .await?
            .rows_affected(),
    )
}
