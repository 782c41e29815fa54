//! A booking's first step: what it reads before its hold. The idempotency key (claimed for this
//! request, or found taken by an earlier one), the quote it names with the merchant's
//! settings, and the card its charge would go on, in one statement.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use courier_domain::charge::CardStatus;
use courier_domain::{Environment, Vehicle};

use crate::cards::CardRow;
use crate::text_columns::Text;

/// A quote being booked, with the account settings of the merchant it was made for.
pub struct QuoteToBook {
    pub quote: crate::quotes::QuoteRow,
    pub notify_customer_default: bool,
    pub proof_photo_required: bool,
    pub proof_signature_required: bool,
    /// The merchant's default time from booking to the parcel's being ready.
    pub preparation_minutes: Option<i32>,
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
        card: Option<CardRow>,
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
    preparation_minutes: Option<i32>,
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

    fn parts(self) -> Result<(Option<QuoteToBook>, Option<CardRow>), sqlx::Error> {
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
                preparation_minutes: r.preparation_minutes,
            }),
        };
        let card = match r.card_id {
            None => None,
            Some(id) => Some(CardRow {
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
             m.proof_signature_required, m.preparation_minutes \
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
           q.preparation_minutes AS \"preparation_minutes?\", \
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
    pub card: Option<CardRow>,
}

/// What a booking asks [`find_bookings`] for.
pub struct BookingAsked {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key: String,
    pub quote_id: Option<Uuid>,
}

/// Reads what a booking needs, without locking or writing anything: the key if an earlier
/// request committed it, else the quote with its merchant's settings and the usable card
/// (chosen as [`claim_booking`] chooses it). [`super::write::run_booking_statement`] then
/// checks what could have changed.
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
        key: key.to_owned(),
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
    asked: &[BookingAsked],
) -> Result<Vec<BookingLookup>, sqlx::Error> {
    let merchant_ids: Vec<Uuid> = asked.iter().map(|a| a.merchant_id).collect();
    let environments: Vec<&str> = asked.iter().map(|a| a.environment.as_str()).collect();
    let keys: Vec<&str> = asked.iter().map(|a| a.key.as_str()).collect();
    let quote_ids: Vec<Option<Uuid>> = asked.iter().map(|a| a.quote_id).collect();
    // One row per booking asked, whatever is found: the key by its primary key, and the
    // quote and the card only when the key is free. Each lookup is a `LATERAL … LIMIT 1`, a
    // lookup per booking: with the key as a plain join, a batch read cost 29 buffers and
    // 141 µs a booking, where one booking read on its own had cost 10 buffers and 79 µs.
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
           q.preparation_minutes AS \"preparation_minutes?\", \
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
             m.proof_signature_required, m.preparation_minutes \
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
