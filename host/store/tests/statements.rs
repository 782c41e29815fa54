//! The store's statements that are built at run time, and so are not checked against the
//! schema when the crate compiles: the booking's joined writes, a job's move with what goes
//! with it, the job list's optional filters and the webhook claim. Each runs here against a
//! migrated database, as the service runs it.
//! Also: a text column holding a name the code does not know is a decode error, on the
//! compile-checked path and on the runtime one alike; and a reconciliation check's findings
//! are recorded as of its start.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::charge::CardStatus;
use courier_domain::charge::state::ChargeStatus;
use courier_domain::dispatch::{CourierStatus, OfferStatus};
use courier_domain::event::{EventDetails, EventName, JobFacts, NewEvent};
use courier_domain::job::transitions::Settlement;
use courier_domain::{Environment, JobStatus, Vehicle};
use courier_store::bookings::attempts::{self as bookings, AttemptRow};
use courier_store::bookings::claim::{self, BookingClaim};
use courier_store::bookings::write::{self, BookingWritten, ClaimedKey, KeyAndQuote};
use courier_store::cards::{self, CardRow};
use courier_store::charges::{self, ChargeRow, NewMove};
use courier_store::jobs::{self, JobRow, ListFilter};
use courier_store::quotes::{self, QuoteRow};
use courier_store::reconciliation::{NewMismatch, open_mismatches, record_check};
use courier_store::webhooks::{self, Answered, NewDelivery, NewEndpoint, Owner, Reply};
use courier_store::writes::Writes;
use courier_store::{couriers, dispatch, events, fulfilment};

use courier_store::scratch::{fresh_database_url, job_of as job, merchant, quote, quote_row};

async fn database() -> PgPool {
    PgPool::connect(&fresh_database_url().await).await.unwrap()
}

async fn card(pool: &PgPool, merchant_id: Uuid) -> CardRow {
    let row = CardRow {
        id: Uuid::new_v4(),
        merchant_id,
        environment: Environment::Test,
        provider_ref: "pm_store_test".into(),
        customer_id: "cus_store_test".into(),
        brand: "visa".into(),
        last_four: "4242".into(),
        expiry_month: 12,
        expiry_year: 2030,
        status: CardStatus::Active,
        is_default: true,
        attached_at: Utc::now(),
        dead_reason: None,
        died_at: None,
        removed_at: None,
    };
    let mut conn = pool.acquire().await.unwrap();
    cards::insert_card(&mut conn, &row).await.unwrap();
    row
}

/// A merchant's card and a booked job (with its quote), written.
async fn booked_job(pool: &PgPool) -> (CardRow, JobRow) {
    let merchant_id = merchant(pool).await;
    let now = Utc::now();
    let quote = quote(pool, merchant_id, now).await;
    let card = card(pool, merchant_id).await;
    let booked = job(&quote, JobStatus::Searching, now);
    let mut conn = pool.acquire().await.unwrap();
    Writes::new()
        .and(jobs::insert_jobs(vec![&booked]))
        .execute(&mut conn)
        .await
        .unwrap();
    (card, booked)
}

/// A pending charge of `job` on `card`, not written.
fn pending_charge(job: &JobRow, card: &CardRow) -> ChargeRow {
    ChargeRow {
        id: Uuid::new_v4(),
        merchant_id: job.merchant_id,
        environment: Environment::Test,
        job_id: job.id,
        payment_method_id: card.id,
        status: ChargeStatus::Pending,
        currency: "EUR".into(),
        amount_minor: 1290,
        refunded_amount_minor: 0,
        authorisation_ref: None,
        payment_ref: None,
        after_hold: None,
        decline_code: None,
        last_error: None,
        raised_at: job.booked_at,
        authorised_at: None,
        captured_at: None,
        voided_at: None,
        failed_at: None,
        refunded_at: None,
        updated_at: job.booked_at,
        hold_key: Some("hold-store-test".into()),
        provider_failures: 0,
    }
}

/// Quotes written together land with every field as given, or, when one row is refused,
/// none of them does.
#[tokio::test]
async fn quotes_written_together_land_whole_or_not_at_all() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    // Whole microseconds: what a timestamp keeps.
    let at = DateTime::from_timestamp_micros(1_790_000_000_123_456).unwrap();
    let mut rows: Vec<QuoteRow> = (0..3).map(|_| quote_row(merchant_id, at)).collect();
    rows[1].pickup_postcode = None;
    rows[1].dropoff_postcode = Some("9494".into());
    rows[1].scheduled_for = Some(at + Duration::hours(2));
    rows[1].vehicle = Vehicle::ElectricBicycle;
    rows[2].breakdown = json!([{"code": "base", "description": "Base", "amount_minor": 990}]);
    rows[2].environment = Environment::Live;
    quotes::insert_many(&pool, &rows).await.unwrap();
    for row in &rows {
        let read = quotes::find(&pool, row.id)
            .await
            .unwrap()
            .expect("the quote was written");
        assert_eq!(format!("{read:?}"), format!("{row:?}"));
    }

    // A batch with one id already taken: the statement fails, and the others are not written.
    let fresh = quote_row(merchant_id, at);
    let taken = rows[0].clone();
    quotes::insert_many(&pool, &[fresh.clone(), taken])
        .await
        .expect_err("a taken id is refused");
    assert!(quotes::find(&pool, fresh.id).await.unwrap().is_none());
}

/// A booking's claim: the key first, then the quote it names (locked) with the merchant's
/// settings and usable card; the same key once committed is found taken, with its stored
/// answer, and its quote is not looked up.
#[tokio::test]
async fn a_bookings_claim_takes_the_key_and_finds_its_quote_and_card() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    // Whole microseconds: what a timestamp keeps.
    let now = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
    let quote = quote(&pool, merchant_id, now).await;
    let key = format!("claim-{}", Uuid::new_v4());
    let claim = |quote_id: Option<Uuid>, hash: &'static [u8]| {
        let (pool, key) = (pool.clone(), key.clone());
        async move {
            let mut tx = pool.begin().await.unwrap();
            let claim = claim::claim_booking(
                &mut tx,
                merchant_id,
                Environment::Test,
                &key,
                hash,
                quote_id,
            )
            .await
            .unwrap();
            (tx, claim)
        }
    };

    // No card yet, and a body without a quote id: claimed, nothing found.
    let (tx, claimed) = claim(None, b"first").await;
    let BookingClaim::Claimed {
        quote: None,
        card: None,
    } = claimed
    else {
        panic!("claimed, with neither quote nor card");
    };
    tx.rollback().await.unwrap();

    let card = card(&pool, merchant_id).await;
    let (mut tx, claimed) = claim(Some(quote.id), b"first").await;
    let BookingClaim::Claimed {
        quote: Some(found),
        card: Some(found_card),
    } = claimed
    else {
        panic!("claimed, with the quote and the card");
    };
    assert_eq!(format!("{:?}", found.quote), format!("{quote:?}"));
    assert!(!found.notify_customer_default);
    assert!(!found.proof_photo_required && !found.proof_signature_required);
    assert_eq!(
        (found_card.id, &found_card.provider_ref, found_card.status),
        (card.id, &card.provider_ref, CardStatus::Active)
    );
    Writes::new()
        .and(write::store_response(
            merchant_id,
            Environment::Test,
            &key,
            201,
            &json!({"id": "job"}),
        ))
        .execute(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let (tx, taken) = claim(Some(quote.id), b"second").await;
    let BookingClaim::Taken(taken) = taken else {
        panic!("the key is taken");
    };
    assert_eq!(taken.request_hash, b"first");
    assert_eq!(taken.response, Some((201, json!({"id": "job"}))));
    tx.rollback().await.unwrap();
}

/// A booking written at once: the read finds the quote and card without claiming anything;
/// the write claims the key with its answer, marks the quote used and writes the job, all or
/// nothing. A key a twin committed, or a quote booked meanwhile, writes nothing at all, the
/// job included.
#[tokio::test]
async fn a_booking_written_at_once_lands_whole_or_writes_nothing() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
    let quote = quote(&pool, merchant_id, now).await;
    let card = card(&pool, merchant_id).await;
    let key = format!("at-once-{}", Uuid::new_v4());
    let mut conn = pool.acquire().await.unwrap();
    let find = async |conn: &mut sqlx::PgConnection, key: &str, quote_id| {
        claim::find_booking(conn, merchant_id, Environment::Test, key, quote_id)
            .await
            .unwrap()
    };
    let found = find(&mut conn, &key, Some(quote.id)).await;
    assert!(found.taken.is_none());
    assert_eq!(
        format!("{:?}", found.quote.expect("the quote is found").quote),
        format!("{quote:?}")
    );
    assert_eq!(found.card.expect("the card is found").id, card.id);
    // Finding takes nothing: the quote is still unused.
    assert_eq!(used_at(&pool, quote.id).await, None);

    let answer = json!({"id": "job"});
    // Books `quote` under `key`; the outcome, and whether the job was kept.
    async fn book(
        pool: &PgPool,
        conn: &mut sqlx::PgConnection,
        key: ClaimedKey<'_>,
        quote: &QuoteRow,
        now: DateTime<Utc>,
    ) -> (BookingWritten, bool) {
        let booked = job(quote, JobStatus::Searching, now);
        let booking = [KeyAndQuote {
            key,
            quote_id: quote.id,
            used_at: now,
        }];
        let writes = Writes::new().and(jobs::insert_jobs(vec![&booked]));
        let outcome = write::run_booking_statement(conn, &booking, writes)
            .await
            .unwrap();
        let kept = jobs::find(pool, quote.merchant_id, Environment::Test, booked.id)
            .await
            .unwrap()
            .is_some();
        (outcome, kept)
    }
    let answered = |key, request_hash| ClaimedKey {
        merchant_id,
        environment: Environment::Test,
        key,
        request_hash,
        answer: Some((201, &answer)),
    };

    let outcome = book(&pool, &mut conn, answered(&key, b"first"), &quote, now).await;
    assert_eq!(
        outcome,
        (
            BookingWritten::Written {
                events_waiting: false
            },
            true
        )
    );
    assert_eq!(used_at(&pool, quote.id).await, Some(now));
    let found = find(&mut conn, &key, Some(quote.id)).await;
    let taken = found.taken.expect("the key is taken, with its answer");
    assert_eq!(taken.request_hash, b"first");
    assert_eq!(taken.response, Some((201, answer.clone())));

    // The same key again, on another quote: the key is taken, and nothing is written.
    let other = self::quote(&pool, merchant_id, now).await;
    let outcome = book(&pool, &mut conn, answered(&key, b"second"), &other, now).await;
    assert_eq!(outcome, (BookingWritten::KeyTaken, false));
    assert_eq!(used_at(&pool, other.id).await, None);

    // The first quote again, with a new key: the quote is taken, and neither the key nor the
    // job is kept.
    let fresh_key = format!("at-once-{}", Uuid::new_v4());
    let outcome = book(
        &pool,
        &mut conn,
        answered(&fresh_key, b"third"),
        &quote,
        now,
    )
    .await;
    assert_eq!(outcome, (BookingWritten::QuoteTaken, false));
    let free = find(&mut conn, &fresh_key, None).await;
    assert!(free.taken.is_none(), "the key given up is free again");
}

/// Several bookings written by one statement land together, or, when any one of them lost
/// its key or its quote to another booking, none of them does; several read by one statement
/// each get their own answer.
#[tokio::test]
async fn bookings_written_together_land_together_or_not_at_all() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
    let mut quotes = Vec::new();
    for _ in 0..4 {
        quotes.push(quote(&pool, merchant_id, now).await);
    }
    let answer = json!({"id": "job"});
    let keys: Vec<String> = (0..6)
        .map(|_| format!("together-{}", Uuid::new_v4()))
        .collect();
    let mut conn = pool.acquire().await.unwrap();
    // Books each (key, quote) pair in one statement; the outcome, and how many jobs were kept.
    async fn book_together(
        pool: &PgPool,
        conn: &mut sqlx::PgConnection,
        pairs: &[(&str, &QuoteRow)],
        answer: &serde_json::Value,
        now: DateTime<Utc>,
    ) -> (BookingWritten, usize) {
        let booked: Vec<JobRow> = pairs
            .iter()
            .map(|(_, quote)| job(quote, JobStatus::Searching, now))
            .collect();
        let bookings: Vec<KeyAndQuote> = pairs
            .iter()
            .map(|(key, quote)| KeyAndQuote {
                key: ClaimedKey {
                    merchant_id: quote.merchant_id,
                    environment: Environment::Test,
                    key,
                    request_hash: b"together",
                    answer: Some((201, answer)),
                },
                quote_id: quote.id,
                used_at: now,
            })
            .collect();
        let writes = Writes::new().and(jobs::insert_jobs(booked.iter().collect()));
        let outcome = write::run_booking_statement(conn, &bookings, writes)
            .await
            .unwrap();
        let mut kept = 0;
        for job in &booked {
            let found = jobs::find(pool, job.merchant_id, Environment::Test, job.id).await;
            kept += usize::from(found.unwrap().is_some());
        }
        (outcome, kept)
    }
    let key_free = async |conn: &mut sqlx::PgConnection, key: &str| {
        claim::find_booking(conn, merchant_id, Environment::Test, key, None)
            .await
            .unwrap()
            .taken
            .is_none()
    };

    let both = [
        (keys[0].as_str(), &quotes[0]),
        (keys[1].as_str(), &quotes[1]),
    ];
    let outcome = book_together(&pool, &mut conn, &both, &answer, now).await;
    assert_eq!(
        outcome,
        (
            BookingWritten::Written {
                events_waiting: false
            },
            2
        )
    );
    assert_eq!(used_at(&pool, quotes[0].id).await, Some(now));
    assert_eq!(used_at(&pool, quotes[1].id).await, Some(now));
    assert!(!key_free(&mut conn, &keys[1]).await);

    // One of the two names a quote already booked: neither is written.
    let one_late = [
        (keys[2].as_str(), &quotes[2]),
        (keys[3].as_str(), &quotes[0]),
    ];
    let outcome = book_together(&pool, &mut conn, &one_late, &answer, now).await;
    assert_eq!(outcome, (BookingWritten::QuoteTaken, 0));
    assert_eq!(used_at(&pool, quotes[2].id).await, None);
    assert!(key_free(&mut conn, &keys[2]).await);
    assert!(key_free(&mut conn, &keys[3]).await);

    // Two bookings of one quote: only one could have it, so neither is written.
    let one_quote = [
        (keys[4].as_str(), &quotes[2]),
        (keys[5].as_str(), &quotes[2]),
    ];
    let outcome = book_together(&pool, &mut conn, &one_quote, &answer, now).await;
    assert_eq!(outcome, (BookingWritten::QuoteTaken, 0));
    assert_eq!(used_at(&pool, quotes[2].id).await, None);

    // One of the two names a key already taken: neither is written.
    let key_late = [
        (keys[4].as_str(), &quotes[2]),
        (keys[0].as_str(), &quotes[3]),
    ];
    let outcome = book_together(&pool, &mut conn, &key_late, &answer, now).await;
    assert_eq!(outcome, (BookingWritten::KeyTaken, 0));
    assert_eq!(used_at(&pool, quotes[2].id).await, None);
    assert_eq!(used_at(&pool, quotes[3].id).await, None);
    assert!(key_free(&mut conn, &keys[4]).await);

    // Read together, each booking gets its own lookup, in the order asked: a taken key
    // with its answer (and nothing else), a free key with its quote and the card, and a key
    // asking for no quote.
    let card = card(&pool, merchant_id).await;
    let asked = |key: &String, quote_id| claim::BookingAsked {
        merchant_id,
        environment: Environment::Test,
        key: key.clone(),
        quote_id,
    };
    let found = claim::find_bookings(
        &mut conn,
        &[
            asked(&keys[0], Some(quotes[2].id)),
            asked(&keys[4], Some(quotes[2].id)),
            asked(&keys[5], None),
        ],
    )
    .await
    .unwrap();
    assert_eq!(found.len(), 3);
    let taken = found[0].taken.as_ref().expect("the first key is taken");
    assert_eq!(taken.response, Some((201, answer.clone())));
    assert!(found[0].quote.is_none() && found[0].card.is_none());
    assert!(found[1].taken.is_none());
    let quote = found[1]
        .quote
        .as_ref()
        .expect("the free key's quote is found");
    assert_eq!(quote.quote.id, quotes[2].id);
    assert_eq!(found[1].card.as_ref().map(|c| c.id), Some(card.id));
    assert!(found[2].taken.is_none() && found[2].quote.is_none());
    assert_eq!(found[2].card.as_ref().map(|c| c.id), Some(card.id));
}

/// A job's move withdraws its open offers, records its event and owes its settlement in the
/// same statement, and only if the job moved: a move from a state the job has already left
/// writes nothing at all.
#[tokio::test]
async fn a_jobs_move_writes_what_goes_with_it_only_if_the_job_moved() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
    let quote = quote(&pool, merchant_id, now).await;
    let searching = job(&quote, JobStatus::Searching, now);
    let mut conn = pool.acquire().await.unwrap();
    Writes::new()
        .and(jobs::insert_jobs(vec![&searching]))
        .execute(&mut conn)
        .await
        .unwrap();
    let courier_id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO couriers (id, name, phone, vehicle, market_id, status, credential_key, \
         secret_hash, created_at) VALUES ($1, 'Store Test', '+4237000000', 'car', 'li', \
         'active', $2, '\\x00', now())",
    )
    .bind(courier_id)
    .bind(format!("ck_{courier_id}"))
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO courier_offers (id, job_id, courier_id, travel_seconds, status, \
         offered_at, expires_at, route_id) \
         VALUES ($1, $2, $3, 60, 'open', now(), now() + interval '1 minute', $1)",
    )
    .bind(Uuid::new_v4())
    .bind(searching.id)
    .bind(courier_id)
    .execute(&mut *conn)
    .await
    .unwrap();
    let written = async |conn: &mut sqlx::PgConnection| -> (String, i64, Option<String>) {
        sqlx::query_as(
            "SELECT (SELECT status FROM courier_offers WHERE job_id = $1), \
             (SELECT count(*) FROM events WHERE merchant_id = $2), \
             (SELECT operation FROM job_settlements WHERE job_id = $1)",
        )
        .bind(searching.id)
        .bind(merchant_id)
        .fetch_one(conn)
        .await
        .unwrap()
    };

    let mut cancelled = searching.clone();
    cancelled.status = JobStatus::Cancelled;
    cancelled.cancellation_reason = Some("changed_mind".into());
    let event = NewEvent {
        name: EventName::JobCancelled,
        merchant_id,
        environment: Environment::Test,
        occurred_at: now,
        job: None,
        details: EventDetails::default(),
    };
    let along = || fulfilment::AlongWithMove {
        offers_withdrawn_at: Some(now),
        event: Some(&event),
        settlement: Some((Settlement::Void, now)),
    };
    // From a state the job is not in: nothing is written, the job included.
    let moved = fulfilment::move_job_along(&mut conn, &cancelled, JobStatus::Assigned, along())
        .await
        .unwrap();
    assert!(moved.is_none());
    assert_eq!(written(&mut conn).await, ("open".into(), 0, None));
    let kept = jobs::find(&pool, merchant_id, Environment::Test, searching.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.status, JobStatus::Searching);

    // From the state it is in: the job moves, and everything that goes with it is written.
    let moved = fulfilment::move_job_along(&mut conn, &cancelled, JobStatus::Searching, along())
        .await
        .unwrap()
        .expect("the job moved");
    assert_eq!(moved.status, JobStatus::Cancelled);
    assert_eq!(moved.cancellation_reason.as_deref(), Some("changed_mind"));
    assert_eq!(
        written(&mut conn).await,
        ("withdrawn".into(), 1, Some("void".into()))
    );
}

async fn used_at(pool: &PgPool, quote_id: Uuid) -> Option<DateTime<Utc>> {
    quotes::find(pool, quote_id)
        .await
        .unwrap()
        .expect("the quote exists")
        .used_at
}

/// A booking's first phase writes the quote's reservation, the job and the attempt as one
/// statement: all of it lands, typed values read back as written, and a statement with one
/// failing part leaves nothing of the others behind.
#[tokio::test]
async fn a_bookings_joined_writes_land_together_or_not_at_all() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = Utc::now();
    let quote = quote(&pool, merchant_id, now).await;
    let card = card(&pool, merchant_id).await;
    let booked = job(&quote, JobStatus::Searching, now);
    let attempt = AttemptRow {
        id: Uuid::new_v4(),
        merchant_id,
        environment: Environment::Test,
        idempotency_key: "store-test-1".into(),
        quote_id: quote.id,
        payment_method_id: card.id,
        hold_key: "hold-1".into(),
        job: serde_json::to_value(&booked).unwrap(),
        created_at: now,
        recoveries: 0,
        abandoning: false,
        overdue: false,
    };
    let mut conn = pool.acquire().await.unwrap();
    Writes::new()
        .and(jobs::mark_quote_used(quote.id, now))
        .and(jobs::insert_jobs(vec![&booked]))
        .and(bookings::insert_attempts(
            vec![&attempt],
            std::time::Duration::from_secs(30),
        ))
        .execute(&mut conn)
        .await
        .unwrap();

    let stored = jobs::find(&pool, merchant_id, Environment::Test, booked.id)
        .await
        .unwrap()
        .expect("the job was written");
    assert_eq!(stored.status, JobStatus::Searching);
    assert_eq!(stored.environment, Environment::Test);
    assert_eq!(stored.vehicle, Vehicle::Car);
    assert_eq!(stored.reference, booked.reference);
    assert!(stored.proof_signature_required && !stored.proof_photo_required);
    let kept = bookings::lock_attempt(&mut conn, attempt.id)
        .await
        .unwrap()
        .expect("the attempt was written");
    assert_eq!(kept.environment, Environment::Test);
    let kept_job: JobRow = serde_json::from_value(kept.job).unwrap();
    assert_eq!(kept_job.id, booked.id);
    assert_eq!(kept_job.vehicle, Vehicle::Car);
    let reserved = quotes::find(&pool, quote.id)
        .await
        .unwrap()
        .expect("the quote exists");
    assert!(reserved.used_at.is_some());
    assert_eq!(reserved.vehicle, Vehicle::Car);

    // The second quote's reservation and a job whose id is taken: the insert fails, and the
    // reservation written in the same statement is not kept either.
    let other = self::quote(&pool, merchant_id, now).await;
    let mut twin = job(&other, JobStatus::Searching, now);
    twin.id = booked.id;
    let failed = Writes::new()
        .and(jobs::mark_quote_used(other.id, now))
        .and(jobs::insert_jobs(vec![&twin]))
        .execute(&mut conn)
        .await;
    assert!(failed.is_err(), "a duplicate job id is refused");
    let untouched = quotes::find(&pool, other.id).await.unwrap().unwrap();
    assert_eq!(untouched.used_at, None);

    // A settled attempt is deleted, and its quote released, in one statement.
    Writes::new()
        .and(bookings::delete_attempt(attempt.id))
        .and(bookings::release_quote(quote.id))
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(
        bookings::lock_attempt(&mut conn, attempt.id)
            .await
            .unwrap()
            .is_none()
    );
    let released = quotes::find(&pool, quote.id).await.unwrap().unwrap();
    assert_eq!(released.used_at, None);
}

/// A network booking's first phase claims its key without an answer, reserves its quote and
/// writes its attempt in one statement; its last writes the outcome and deletes the attempt
/// in one statement, only while the attempt is there and not marked for abandoning.
#[tokio::test]
async fn an_attempts_outcome_is_written_only_while_the_attempt_is_there() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = Utc::now();
    let card = card(&pool, merchant_id).await;
    let mut conn = pool.acquire().await.unwrap();
    let lease = std::time::Duration::from_secs(30);
    let mut attempts = Vec::new();
    for n in 0..2 {
        let quote = quote(&pool, merchant_id, now).await;
        let booked = job(&quote, JobStatus::Searching, now);
        let attempt = AttemptRow {
            id: Uuid::new_v4(),
            merchant_id,
            environment: Environment::Test,
            idempotency_key: format!("attempt-{n}"),
            quote_id: quote.id,
            payment_method_id: card.id,
            hold_key: format!("hold-{n}"),
            job: serde_json::to_value(&booked).unwrap(),
            created_at: now,
            recoveries: 0,
            abandoning: false,
            overdue: false,
        };
        let reserved = [KeyAndQuote {
            key: ClaimedKey {
                merchant_id,
                environment: Environment::Test,
                key: &attempt.idempotency_key,
                request_hash: b"body",
                answer: None,
            },
            quote_id: quote.id,
            used_at: now,
        }];
        let writes = Writes::new().and(bookings::insert_attempts(vec![&attempt], lease));
        let outcome = write::run_booking_statement(&mut conn, &reserved, writes)
            .await
            .unwrap();
        assert_eq!(
            outcome,
            BookingWritten::Written {
                events_waiting: false
            }
        );
        assert!(
            used_at(&pool, quote.id).await.is_some(),
            "the quote is reserved"
        );
        let taken = claim::taken_key(
            &mut conn,
            merchant_id,
            Environment::Test,
            &attempt.idempotency_key,
        )
        .await
        .unwrap();
        assert_eq!(taken.request_hash, b"body");
        assert!(
            taken.response.is_none(),
            "no answer while the hold is asked for"
        );
        attempts.push((attempt, booked));
    }
    let answer = json!({"id": "job"});
    let finish = |attempt: &AttemptRow, booked: &JobRow| {
        (
            vec![attempt.id],
            attempt.idempotency_key.clone(),
            booked.clone(),
        )
    };

    // Marked for abandoning: nothing is written, the attempt stays.
    let (abandoned, kept) = &attempts[0];
    assert!(
        bookings::mark_abandoning(&mut conn, abandoned.id)
            .await
            .unwrap()
    );
    let (ids, key, booked) = finish(abandoned, kept);
    let answers = [ClaimedKey {
        merchant_id,
        environment: Environment::Test,
        key: &key,
        request_hash: &[],
        answer: Some((201, &answer)),
    }];
    let writes = Writes::new()
        .and(jobs::insert_jobs(vec![&booked]))
        .and(write::store_responses(&answers));
    assert_eq!(
        write::finish_attempts(&mut conn, &ids, writes)
            .await
            .unwrap(),
        None
    );
    assert!(
        jobs::find(&pool, merchant_id, Environment::Test, booked.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        bookings::lock_attempt(&mut conn, abandoned.id)
            .await
            .unwrap()
            .is_some()
    );

    // There and not abandoning: the job and the key's answer are written, the attempt gone.
    let (finished, kept) = &attempts[1];
    let (ids, key, booked) = finish(finished, kept);
    let answers = [ClaimedKey {
        merchant_id,
        environment: Environment::Test,
        key: &key,
        request_hash: &[],
        answer: Some((201, &answer)),
    }];
    let writes = Writes::new()
        .and(jobs::insert_jobs(vec![&booked]))
        .and(write::store_responses(&answers));
    assert_eq!(
        write::finish_attempts(&mut conn, &ids, writes)
            .await
            .unwrap(),
        Some(false),
        "written; no event recorded"
    );
    assert!(
        jobs::find(&pool, merchant_id, Environment::Test, booked.id)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        bookings::lock_attempt(&mut conn, finished.id)
            .await
            .unwrap()
            .is_none()
    );
    let taken = claim::taken_key(&mut conn, merchant_id, Environment::Test, &key)
        .await
        .unwrap();
    assert_eq!(taken.response, Some((201, answer.clone())));

    // Gone: written again, it is refused (the attempt, or the job's id) and changes nothing.
    let mut again = booked.clone();
    again.reference = "CR-AGAI-NNNN".into();
    let writes = Writes::new().and(jobs::insert_jobs(vec![&again]));
    let repeated = write::finish_attempts(&mut conn, &ids, writes).await;
    assert!(!matches!(repeated, Ok(Some(_))), "{repeated:?}");
    let stored = jobs::find(&pool, merchant_id, Environment::Test, booked.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.reference, booked.reference);
}

/// Events of a merchant without an active endpoint in their environment are marked fanned out
/// by one statement; events with somewhere to go are left to a round.
#[tokio::test]
async fn events_no_endpoint_can_take_are_passed_over() {
    let pool = database().await;
    let (with_endpoint, _endpoint, subscribed) = endpoint_and_event(&pool).await;
    let without_endpoint = merchant(&pool).await;
    let mut conn = pool.acquire().await.unwrap();
    let elsewhere = events::record(&mut conn, &booked_event(with_endpoint, Environment::Live))
        .await
        .unwrap();
    let nowhere = events::record(
        &mut conn,
        &booked_event(without_endpoint, Environment::Test),
    )
    .await
    .unwrap();
    // Written fanned out, having nowhere to go; as if recorded while an endpoint was active
    // (since disabled), they wait again for the pass.
    for id in [elsewhere, nowhere] {
        assert!(fanned_out_at(&pool, id).await.is_some());
    }
    sqlx::query("UPDATE events SET fanned_out_at = NULL WHERE id = ANY($1)")
        .bind(vec![elsewhere, nowhere])
        .execute(&pool)
        .await
        .unwrap();

    let (passed, more) = webhooks::pass_over_unsubscribed(&mut conn, 256)
        .await
        .unwrap();
    assert_eq!((passed, more), (2, true));
    let awaiting: Vec<Uuid> = webhooks::claim_events(&mut conn, 256)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(awaiting, vec![subscribed]);
    assert!(!awaiting.contains(&elsewhere) && !awaiting.contains(&nowhere));

    // Only the subscribed event waits: nothing to pass over, and it still waits.
    assert_eq!(
        webhooks::pass_over_unsubscribed(&mut conn, 256)
            .await
            .unwrap(),
        (0, true)
    );
    webhooks::record_fan_out(&mut conn, &[], &[subscribed], 1000, Uuid::new_v4())
        .await
        .unwrap();
    assert_eq!(
        webhooks::pass_over_unsubscribed(&mut conn, 256)
            .await
            .unwrap(),
        (0, false)
    );
}

/// A test event is recorded only for an active endpoint of its own merchant and environment,
/// and carries that endpoint to the fan-out.
#[tokio::test]
async fn a_test_event_is_recorded_for_its_owner_s_active_endpoint_only() {
    let pool = database().await;
    let (merchant_id, endpoint, ordinary) = endpoint_and_event(&pool).await;
    let test = |merchant_id, environment| NewEvent {
        name: EventName::JobDelivered,
        merchant_id,
        environment,
        occurred_at: Utc::now(),
        job: Some(JobFacts {
            id: Uuid::new_v4(),
            reference: "test-event".into(),
            market: "test".into(),
            currency: "XTS".into(),
            price_amount_minor: 1250,
            tax_amount_minor: 250,
            scheduled_for: None,
        }),
        details: EventDetails::default(),
    };
    let stranger = merchant(&pool).await;
    for (who, environment) in [
        (stranger, Environment::Test),
        (merchant_id, Environment::Live),
    ] {
        let refused = webhooks::record_test_event(&pool, endpoint.id, &test(who, environment))
            .await
            .unwrap();
        assert_eq!(refused, None, "{environment:?}");
    }
    let recorded =
        webhooks::record_test_event(&pool, endpoint.id, &test(merchant_id, Environment::Test))
            .await
            .unwrap()
            .expect("the owner's active endpoint");
    let mut conn = pool.acquire().await.unwrap();
    let claimed = webhooks::claim_events(&mut conn, 256).await.unwrap();
    let only: Vec<(Uuid, Option<Uuid>)> =
        claimed.iter().map(|e| (e.id, e.only_endpoint_id)).collect();
    assert_eq!(only, vec![(ordinary, None), (recorded, Some(endpoint.id))]);
    let facts = claimed[1].job.clone().expect("a job event's facts");
    assert_eq!(facts["reference"], "test-event");
    drop(conn);

    sqlx::query("UPDATE webhook_endpoints SET status = 'suspended' WHERE id = $1")
        .bind(endpoint.id)
        .execute(&pool)
        .await
        .unwrap();
    let suspended =
        webhooks::record_test_event(&pool, endpoint.id, &test(merchant_id, Environment::Test))
            .await
            .unwrap();
    assert_eq!(suspended, None, "a suspended endpoint is sent nothing");
}

/// Every merchant's charges, newest first, with their merchants' names; the filters combine,
/// and a page continues where the last one ended.
#[tokio::test]
async fn charges_across_merchants_filter_and_page_newest_first() {
    let pool = database().await;
    let mut written = Vec::new();
    for (n, (status, environment)) in [
        (ChargeStatus::Captured, Environment::Test),
        (ChargeStatus::Failed, Environment::Test),
        (ChargeStatus::Captured, Environment::Live),
        (ChargeStatus::Captured, Environment::Test),
    ]
    .into_iter()
    .enumerate()
    {
        let (card, booked) = booked_job(&pool).await;
        let charge = ChargeRow {
            status,
            environment,
            raised_at: booked.booked_at + Duration::seconds(n as i64),
            ..pending_charge(&booked, &card)
        };
        let mut conn = pool.acquire().await.unwrap();
        Writes::new()
            .and(charges::insert_charges(vec![&charge]))
            .execute(&mut conn)
            .await
            .unwrap();
        written.push(charge);
    }
    let ids = |listed: &[charges::ListedCharge]| listed.iter().map(|c| c.id).collect::<Vec<_>>();
    let all = charges::charges_across(&pool, &charges::ChargeFilter::default(), 10)
        .await
        .unwrap();
    assert_eq!(
        ids(&all),
        written.iter().rev().map(|c| c.id).collect::<Vec<_>>(),
        "newest first"
    );
    assert!(
        all.iter().all(|c| c.merchant_name == "Store Test Ltd"),
        "{all:?}"
    );
    let one_merchant = charges::ChargeFilter {
        merchant_id: Some(written[2].merchant_id),
        ..Default::default()
    };
    let of_one = charges::charges_across(&pool, &one_merchant, 10)
        .await
        .unwrap();
    assert!(
        of_one
            .iter()
            .all(|c| c.merchant_id == written[2].merchant_id)
            && !of_one.is_empty(),
        "{of_one:?}"
    );
    assert!(
        of_one.len() < all.len(),
        "each job is booked by a merchant of its own"
    );
    let captured_in_test = charges::ChargeFilter {
        merchant_id: None,
        environment: Some(Environment::Test),
        status: Some(ChargeStatus::Captured),
        before: None,
    };
    let first = charges::charges_across(&pool, &captured_in_test, 1)
        .await
        .unwrap();
    assert_eq!(ids(&first), vec![written[3].id]);
    let next = charges::ChargeFilter {
        before: Some((first[0].raised_at, first[0].id)),
        ..captured_in_test
    };
    let second = charges::charges_across(&pool, &next, 10).await.unwrap();
    assert_eq!(
        ids(&second),
        vec![written[0].id],
        "the page after, and no more"
    );
}

/// The job list's filters are optional and combine; pages are newest first; the total
/// counts up to its cap and no further; another merchant's jobs never match.
#[tokio::test]
async fn the_job_list_filters_pages_and_caps_its_count() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let stranger = merchant(&pool).await;
    let start = Utc::now() - Duration::hours(10);
    let mut conn = pool.acquire().await.unwrap();
    let statuses = [
        JobStatus::Searching,
        JobStatus::Delivered,
        JobStatus::Cancelled,
    ];
    let mut written = Vec::new();
    for n in 0..9 {
        let at = start + Duration::hours(n);
        let quote = quote(&pool, merchant_id, at).await;
        let row = job(&quote, statuses[usize::try_from(n).unwrap() % 3], at);
        Writes::new()
            .and(jobs::insert_jobs(vec![&row]))
            .execute(&mut conn)
            .await
            .unwrap();
        written.push(row);
    }
    let theirs = quote(&pool, stranger, start).await;
    Writes::new()
        .and(jobs::insert_jobs(vec![&job(
            &theirs,
            JobStatus::Searching,
            start,
        )]))
        .execute(&mut conn)
        .await
        .unwrap();

    let filter = |statuses: &'static [&'static str], limit, offset, count_up_to| ListFilter {
        merchant_id,
        environment: Environment::Test,
        statuses,
        from: None,
        to: None,
        limit,
        offset,
        count_up_to,
    };
    let (all, total) = jobs::list(&pool, &filter(&[], 100, 0, 1000)).await.unwrap();
    assert_eq!(total, 9);
    let newest_first: Vec<Uuid> = written.iter().rev().map(|j| j.id).collect();
    assert_eq!(all.iter().map(|j| j.id).collect::<Vec<_>>(), newest_first);
    assert!(all.iter().all(|j| j.environment == Environment::Test));

    let (page, total) = jobs::list(&pool, &filter(&[], 3, 3, 1000)).await.unwrap();
    assert_eq!(total, 9);
    assert_eq!(
        page.iter().map(|j| j.id).collect::<Vec<_>>(),
        newest_first[3..6]
    );

    let (_, capped) = jobs::list(&pool, &filter(&[], 2, 0, 5)).await.unwrap();
    assert_eq!(capped, 5, "the count stops at its cap");

    let (ended, total) = jobs::list(&pool, &filter(&["delivered", "cancelled"], 100, 0, 1000))
        .await
        .unwrap();
    assert_eq!(total, 6);
    assert!(
        ended
            .iter()
            .all(|j| matches!(j.status, JobStatus::Delivered | JobStatus::Cancelled))
    );

    let window = ListFilter {
        from: Some(start + Duration::hours(2)),
        to: Some(start + Duration::hours(5)),
        ..filter(&["searching"], 100, 0, 1000)
    };
    let (found, total) = jobs::list(&pool, &window).await.unwrap();
    assert_eq!(total, 1, "hours 2, 3 and 4; searching only at hour 3");
    assert_eq!(found[0].id, written[3].id);

    let live = ListFilter {
        environment: Environment::Live,
        ..filter(&[], 100, 0, 1000)
    };
    assert_eq!(jobs::list(&pool, &live).await.unwrap().1, 0);
}

/// A merchant's webhook endpoint and an event of that merchant, not fanned out yet.
async fn endpoint_and_event(pool: &PgPool) -> (Uuid, webhooks::EndpointRow, Uuid) {
    let merchant_id = merchant(pool).await;
    let owner = Owner {
        merchant_id,
        environment: Environment::Test,
    };
    let endpoint = webhooks::insert_endpoint(
        pool,
        &NewEndpoint {
            id: Uuid::new_v4(),
            owner,
            url: "https://hooks.example.com/courier",
            events: &[],
            description: None,
            secret_ciphertext: b"not a real ciphertext",
        },
        16,
    )
    .await
    .unwrap()
    .expect("under the cap");
    let mut conn = pool.acquire().await.unwrap();
    let event_id = events::record(&mut conn, &booked_event(merchant_id, Environment::Test))
        .await
        .unwrap();
    (merchant_id, endpoint, event_id)
}

/// A due delivery is claimed by one worker at a time: not while another's lease holds it, not
/// when its endpoint is skipped, and once only after its lease is given back.
#[tokio::test]
async fn a_due_delivery_is_claimed_by_one_worker_at_a_time() {
    let pool = database().await;
    let (merchant_id, endpoint, event_id) = endpoint_and_event(&pool).await;
    let mut conn = pool.acquire().await.unwrap();
    let fan_out = Uuid::new_v4();
    let delivery = Uuid::new_v4();
    webhooks::record_fan_out(
        &mut conn,
        &[NewDelivery {
            id: delivery,
            endpoint_id: endpoint.id,
            merchant_id,
            event_id,
            event_name: EventName::JobBooked.as_str().to_owned(),
            occurred_at: Utc::now(),
            body: b"{}".to_vec(),
            answered: None,
        }],
        &[event_id],
        60_000,
        fan_out,
    )
    .await
    .unwrap();

    let worker = Uuid::new_v4();
    let held = webhooks::claim_due(&pool, 10, 60_000, worker, &[])
        .await
        .unwrap();
    assert!(held.is_empty(), "the fan-out's lease still holds it");

    webhooks::release_claims(&pool, &[delivery], fan_out)
        .await
        .unwrap();
    let skipped = webhooks::claim_due(&pool, 10, 60_000, worker, &[endpoint.id])
        .await
        .unwrap();
    assert!(skipped.is_empty(), "a skipped endpoint's deliveries stay");

    let claimed = webhooks::claim_due(&pool, 10, 60_000, worker, &[])
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        (claimed[0].id, claimed[0].endpoint_id),
        (delivery, endpoint.id)
    );
    let again = webhooks::claim_due(&pool, 10, 60_000, Uuid::new_v4(), &[])
        .await
        .unwrap();
    assert!(again.is_empty(), "claimed once");

    let attempt = webhooks::begin_attempt(&pool, delivery, worker, 60_000)
        .await
        .unwrap()
        .expect("the holder may attempt it");
    assert_eq!(
        attempt.endpoint_status,
        courier_domain::webhook::EndpointStatus::Active
    );
    assert!(
        webhooks::begin_attempt(&pool, delivery, Uuid::new_v4(), 60_000)
            .await
            .unwrap()
            .is_none(),
        "nobody else may"
    );
}

/// A fan-out round writes each delivery once: one answered 2xx in the round as delivered, with
/// its attempt, its endpoint marked as answering, and nothing for a worker to claim; one not
/// answered yet as pending, claimed by the round until it is recorded.
#[tokio::test]
async fn a_delivery_answered_in_its_round_is_written_once_as_delivered() {
    let pool = database().await;
    let (merchant_id, endpoint, event_id) = endpoint_and_event(&pool).await;
    let mut conn = pool.acquire().await.unwrap();
    let round = Uuid::new_v4();
    let (answered, waiting) = (Uuid::new_v4(), Uuid::new_v4());
    let delivery = |id, answered| NewDelivery {
        id,
        endpoint_id: endpoint.id,
        merchant_id,
        event_id,
        event_name: EventName::JobBooked.as_str().to_owned(),
        occurred_at: Utc::now(),
        body: b"{}".to_vec(),
        answered,
    };
    webhooks::record_fan_out(
        &mut conn,
        &[
            delivery(
                answered,
                Some(Answered {
                    status_code: 204,
                    reply: Reply {
                        took_ms: 12,
                        excerpt: Some("thanks".into()),
                    },
                }),
            ),
            delivery(waiting, None),
        ],
        &[event_id],
        60_000,
        round,
    )
    .await
    .unwrap();

    let rows = webhooks::recent_deliveries(&pool, endpoint.id, 10)
        .await
        .unwrap();
    let row = |id| rows.iter().find(|r| r.id == id).expect("written");
    let done = row(answered);
    assert_eq!(
        done.status,
        courier_domain::webhook::DeliveryStatus::Delivered
    );
    assert_eq!(
        (
            done.attempts,
            done.response_status_code,
            done.next_attempt_at
        ),
        (1, Some(204), None)
    );
    assert!(done.delivered_at.is_some());
    // The log's detail: what was sent, and what the first attempt heard back.
    let owner = Owner {
        merchant_id,
        environment: Environment::Test,
    };
    let detail = webhooks::delivery_of(&pool, owner, endpoint.id, answered)
        .await
        .unwrap()
        .expect("the endpoint's delivery");
    assert_eq!(detail.body, b"{}");
    assert_eq!(
        (detail.response_ms, detail.response_excerpt.as_deref()),
        (Some(12), Some("thanks"))
    );
    assert!(detail.last_attempt_at.is_some());
    let waiting_detail = webhooks::delivery_of(&pool, owner, endpoint.id, waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (waiting_detail.last_attempt_at, waiting_detail.response_ms),
        (None, None)
    );
    // Another endpoint's id, or another merchant, never finds it.
    let stranger = Owner {
        merchant_id: Uuid::new_v4(),
        environment: Environment::Test,
    };
    assert!(
        webhooks::delivery_of(&pool, stranger, endpoint.id, answered)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        webhooks::delivery_of(&pool, owner, Uuid::new_v4(), answered)
            .await
            .unwrap()
            .is_none()
    );
    let pending = row(waiting);
    assert_eq!(
        pending.status,
        courier_domain::webhook::DeliveryStatus::Pending
    );
    assert_eq!((pending.attempts, pending.delivered_at), (0, None));
    let listed = webhooks::list_endpoints(&pool, owner).await.unwrap();
    assert!(listed[0].last_succeeded_at.is_some(), "{listed:?}");
    assert!(fanned_out_at(&pool, event_id).await.is_some());

    // Given back, only the unanswered one is there to claim.
    webhooks::release_claims(&pool, &[answered, waiting], round)
        .await
        .unwrap();
    let claimed = webhooks::claim_due(&pool, 10, 60_000, Uuid::new_v4(), &[])
        .await
        .unwrap();
    assert_eq!(
        claimed.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![waiting]
    );
}

/// A status the code does not know (written by a newer version, or by hand) fails the read
/// loudly, naming the value, on the compile-checked path and the runtime one; it is never
/// read as some other status.
#[tokio::test]
async fn a_stored_name_the_code_does_not_know_is_a_decode_error() {
    let pool = database().await;
    let (_, row) = booked_job(&pool).await;
    let merchant_id = row.merchant_id;
    sqlx::query("UPDATE jobs SET status = 'teleported' WHERE id = $1")
        .bind(row.id)
        .execute(&pool)
        .await
        .unwrap();

    let checked = jobs::find(&pool, merchant_id, Environment::Test, row.id).await;
    let error = checked
        .expect_err("an unknown status is not read")
        .to_string();
    assert!(error.contains("teleported"), "{error}");

    let listed = jobs::list(
        &pool,
        &ListFilter {
            merchant_id,
            environment: Environment::Test,
            statuses: &[],
            from: None,
            to: None,
            limit: 10,
            offset: 0,
            count_up_to: 10,
        },
    )
    .await;
    let error = listed.expect_err("nor on the runtime path").to_string();
    assert!(error.contains("teleported"), "{error}");
}

/// A quote's commit does not wait for the disk; nothing after it on the same connection
/// (a booking, say) inherits that.
#[tokio::test]
async fn a_quotes_unwaited_commit_ends_with_its_statement() {
    let url = fresh_database_url().await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let merchant_id = merchant(&pool).await;
    let made = quote(&pool, merchant_id, Utc::now()).await;

    let (setting,): (String,) = sqlx::query_as("SHOW synchronous_commit")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        setting, "on",
        "the next statement on the connection waits again"
    );
    let (stored,): (i64,) = sqlx::query_as("SELECT total_amount_minor FROM quotes WHERE id = $1")
        .bind(made.id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(stored, made.total_amount_minor);
}

/// A market is planned by one transaction at a time: a second one is told no at once (it does
/// not wait), another market is free, and the market is free again once the first ends,
/// committed or not.
#[tokio::test]
async fn one_transaction_at_a_time_plans_a_market() {
    let pool = database().await;
    let mut first = pool.begin().await.unwrap();
    assert!(dispatch::try_plan_market(&mut first, "demo").await.unwrap());
    let mut second = pool.begin().await.unwrap();
    assert!(
        !dispatch::try_plan_market(&mut second, "demo")
            .await
            .unwrap()
    );
    assert!(dispatch::try_plan_market(&mut second, "li").await.unwrap());
    drop(second);
    // Ended without committing, as a crashed instance's transaction ends.
    first.rollback().await.unwrap();
    let mut third = pool.begin().await.unwrap();
    assert!(dispatch::try_plan_market(&mut third, "demo").await.unwrap());
    third.commit().await.unwrap();
}

/// The planner's read of a market's searching jobs: those with no open offer and ready soon
/// enough, longest searching first, test jobs only when asked for, with the couriers they
/// were offered to before. A claim then locks one that is still unoffered, and another
/// dispatcher skips it while it is held.
#[tokio::test]
async fn dispatch_reads_the_unoffered_searches_and_claims_each_once() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = Utc::now();
    let mut conn = pool.acquire().await.unwrap();
    // Booked 4, 3, 2 and 1 minutes ago: a test job, a live job, a test job offered to a
    // courier, a delivered test job.
    let mut booked = Vec::new();
    for (minutes, environment, status) in [
        (4, Environment::Test, JobStatus::Searching),
        (3, Environment::Live, JobStatus::Searching),
        (2, Environment::Test, JobStatus::Searching),
        (1, Environment::Test, JobStatus::Delivered),
    ] {
        let at = now - Duration::minutes(minutes);
        let mut row = quote_row(merchant_id, at);
        row.environment = environment;
        quotes::insert(&pool, &row).await.unwrap();
        let job = job(&row, status, at);
        Writes::new()
            .and(jobs::insert_jobs(vec![&job]))
            .execute(&mut conn)
            .await
            .unwrap();
        booked.push(job);
    }
    let [oldest, live, offered, _delivered] = &booked[..] else {
        unreachable!()
    };
    let courier = couriers::CourierRow {
        id: Uuid::new_v4(),
        name: "Store Test Rider".into(),
        phone: "+423 000 00 00".into(),
        vehicle: Vehicle::Car,
        market_id: "demo".into(),
        status: CourierStatus::Active,
        online: true,
        credential_key: format!("ck_{}", Uuid::new_v4().simple()),
        secret_hash: vec![0; 32],
        created_at: now,
        suspended_at: None,
        suspension_reason: None,
        takes_routes: false,
    };
    couriers::insert(&mut conn, &courier).await.unwrap();
    let offer = dispatch::OfferRow {
        id: Uuid::new_v4(),
        job_id: offered.id,
        courier_id: courier.id,
        travel_seconds: 300,
        status: OfferStatus::Open,
        offered_at: now,
        expires_at: now + Duration::seconds(30),
        answered_at: None,
        route_id: Uuid::nil(),
        stops: None,
        reason: None,
    };
    let offer = dispatch::OfferRow {
        route_id: offer.id,
        ..offer
    };
    assert!(dispatch::insert_offer(&mut conn, &offer).await.unwrap());

    let ready_by = now + Duration::minutes(30);
    let mut searches = async |live_only: bool, ready_by, limit| -> Vec<Uuid> {
        dispatch::open_searches(&mut conn, "demo", live_only, ready_by, limit)
            .await
            .unwrap()
            .iter()
            .map(|job| job.id)
            .collect()
    };
    assert_eq!(
        searches(false, ready_by, 10).await,
        vec![oldest.id, live.id]
    );
    assert_eq!(searches(true, ready_by, 10).await, vec![live.id]);
    assert_eq!(searches(false, ready_by, 1).await, vec![oldest.id]);
    // A parcel ready later than `ready_by` is not read yet.
    sqlx::query("UPDATE jobs SET pickup_ready_at = $2 WHERE id = $1")
        .bind(live.id)
        .bind(now + Duration::minutes(45))
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(searches(false, ready_by, 10).await, vec![oldest.id]);
    assert_eq!(
        searches(false, now + Duration::hours(1), 10).await,
        vec![oldest.id, live.id]
    );
    let pairs = dispatch::offered_pairs(&mut conn, &[oldest.id, offered.id])
        .await
        .unwrap();
    assert_eq!(pairs, vec![(offered.id, courier.id)]);

    let mut holder = pool.begin().await.unwrap();
    let claimed = dispatch::claim_unoffered_search(&mut holder, oldest.id)
        .await
        .unwrap();
    assert_eq!(claimed.map(|job| job.id), Some(oldest.id));
    let mut other = pool.begin().await.unwrap();
    let skipped = dispatch::claim_unoffered_search(&mut other, oldest.id)
        .await
        .unwrap();
    assert!(skipped.is_none(), "held by the first dispatcher");
    let offered_again = dispatch::claim_unoffered_search(&mut other, offered.id)
        .await
        .unwrap();
    assert!(offered_again.is_none(), "it has an open offer");
    drop((holder, other));
}

/// A charge move as read back: from, to, the provider's reference, the detail.
type MoveRecord = (Option<String>, String, Option<String>, Option<String>);

/// A charge raised as it stands with the moves that brought it there: one statement writes
/// the charge and its history in order; a job's second charge writes nothing.
#[tokio::test]
async fn a_charge_is_raised_with_its_history_once_per_job() {
    let pool = database().await;
    let (card, booked) = booked_job(&pool).await;
    let mut conn = pool.acquire().await.unwrap();
    let charge = ChargeRow {
        status: ChargeStatus::Authorised,
        authorisation_ref: Some("auth_store_test".into()),
        authorised_at: Some(booked.booked_at),
        ..pending_charge(&booked, &card)
    };
    let raised = NewMove {
        charge_id: charge.id,
        from_status: None,
        to_status: ChargeStatus::Pending,
        amount_minor: Some(1290),
        provider_ref: None,
        detail: Some("raised at booking"),
        actor: "system",
        at: booked.booked_at,
    };
    let authorised = NewMove {
        from_status: Some(ChargeStatus::Pending),
        to_status: ChargeStatus::Authorised,
        provider_ref: Some("auth_store_test"),
        detail: None,
        ..raised
    };
    assert!(
        charges::raise_charge(&mut conn, &charge, &[raised, authorised])
            .await
            .unwrap()
    );
    let history: Vec<MoveRecord> = sqlx::query_as(
        "SELECT from_status, to_status, provider_ref, detail FROM charge_moves \
         WHERE charge_id = $1 ORDER BY id",
    )
    .bind(charge.id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        history,
        [
            (
                None,
                "pending".into(),
                None,
                Some("raised at booking".into())
            ),
            (
                Some("pending".into()),
                "authorised".into(),
                Some("auth_store_test".into()),
                None
            ),
        ]
    );
    let (status, reference): (String, Option<String>) =
        sqlx::query_as("SELECT status, authorisation_ref FROM charges WHERE id = $1")
            .bind(charge.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), reference.as_deref()),
        ("authorised", Some("auth_store_test"))
    );

    let second = ChargeRow {
        id: Uuid::new_v4(),
        ..charge.clone()
    };
    let again = NewMove {
        charge_id: second.id,
        ..raised
    };
    assert!(
        !charges::raise_charge(&mut conn, &second, &[again])
            .await
            .unwrap(),
        "one charge per job"
    );
    let (moves,): (i64,) = sqlx::query_as("SELECT count(*) FROM charge_moves WHERE charge_id = $1")
        .bind(second.id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(moves, 0);
}

/// What a quote or a booking names (merchant, quote, card, job, charge) is not checked by
/// foreign keys on every write; what keeps those references whole is that none of these
/// rows is ever removed or renumbered.
#[tokio::test]
async fn rows_that_bookings_name_are_never_deleted_renumbered_or_truncated() {
    let pool = database().await;
    let (card, booked) = booked_job(&pool).await;
    let merchant_id = booked.merchant_id;
    let mut conn = pool.acquire().await.unwrap();
    let charge = pending_charge(&booked, &card);
    let raised = NewMove {
        charge_id: charge.id,
        from_status: None,
        to_status: ChargeStatus::Pending,
        amount_minor: Some(charge.amount_minor),
        provider_ref: None,
        detail: None,
        actor: "system",
        at: charge.raised_at,
    };
    assert!(
        charges::raise_charge(&mut conn, &charge, &[raised])
            .await
            .unwrap()
    );
    let charge_id = charge.id;

    for (table, id) in [
        ("merchants", merchant_id),
        ("quotes", booked.quote_id),
        ("payment_methods", card.id),
        ("jobs", booked.id),
        ("charges", charge_id),
    ] {
        let refusals = [
            sqlx::query(&format!("DELETE FROM {table} WHERE id = $1"))
                .bind(id)
                .execute(&pool)
                .await,
            sqlx::query(&format!("UPDATE {table} SET id = $2 WHERE id = $1"))
                .bind(id)
                .bind(Uuid::new_v4())
                .execute(&pool)
                .await,
            sqlx::query(&format!("TRUNCATE {table} CASCADE"))
                .execute(&pool)
                .await,
        ];
        for refusal in refusals {
            let error = refusal.expect_err(table);
            let code = error.as_database_error().and_then(|e| e.code());
            assert_eq!(code.as_deref(), Some("23001"), "{table}: {error}");
        }
        let (kept,): (i64,) =
            sqlx::query_as(&format!("SELECT count(*) FROM {table} WHERE id = $1"))
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(kept, 1, "{table}");
    }
    // Their other columns still change.
    sqlx::query("UPDATE merchants SET name = 'Renamed Ltd' WHERE id = $1")
        .bind(merchant_id)
        .execute(&pool)
        .await
        .unwrap();
}

/// A `job.booked` event of `merchant_id` in `environment`, occurring now, without job facts.
fn booked_event(merchant_id: Uuid, environment: Environment) -> NewEvent {
    NewEvent {
        name: EventName::JobBooked,
        merchant_id,
        environment,
        occurred_at: Utc::now(),
        job: None,
        details: EventDetails::default(),
    }
}

/// When event `event_id` was fanned out, if it was.
async fn fanned_out_at(pool: &PgPool, event_id: Uuid) -> Option<DateTime<Utc>> {
    sqlx::query_scalar("SELECT fanned_out_at FROM events WHERE id = $1")
        .bind(event_id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A statement recording events through [`events::insert_many_telling`] says whether any of
/// them awaits the fan-out: only those of a merchant with an active endpoint in their
/// environment do; the others are written fanned out.
#[tokio::test]
async fn a_statement_tells_whether_its_events_await_the_fan_out() {
    let pool = database().await;
    let (subscribed, _endpoint, _) = endpoint_and_event(&pool).await;
    let unsubscribed = merchant(&pool).await;
    let mut conn = pool.acquire().await.unwrap();
    for (merchant_id, environment, waits) in [
        (subscribed, Environment::Test, true),
        (subscribed, Environment::Live, false),
        (unsubscribed, Environment::Test, false),
    ] {
        let now = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
        let quote = quote_row(merchant_id, now);
        let quote = QuoteRow {
            environment,
            ..quote
        };
        quotes::insert(&pool, &quote).await.unwrap();
        let event = booked_event(merchant_id, environment);
        let id = Uuid::new_v4();
        let key = format!("telling-{id}");
        let booking = [KeyAndQuote {
            key: ClaimedKey {
                merchant_id,
                environment,
                key: &key,
                request_hash: b"body",
                answer: None,
            },
            quote_id: quote.id,
            used_at: now,
        }];
        let writes = Writes::new().named(
            events::RECORDED,
            events::insert_many_telling(vec![(id, &event)]),
        );
        let outcome = write::run_booking_statement(&mut conn, &booking, writes)
            .await
            .unwrap();
        assert_eq!(
            outcome,
            BookingWritten::Written {
                events_waiting: waits
            },
            "{environment:?}"
        );
        assert_eq!(fanned_out_at(&pool, id).await.is_none(), waits);
    }
}

/// A check's findings are recorded as of its start: a slow check that started before another
/// neither resolves nor rewrites what the later one found; an `unanswered` finding is resolved
/// by the first check that no longer finds it, whatever subjects that check compared.
#[tokio::test]
async fn a_checks_findings_are_recorded_as_of_its_start() {
    let pool = database().await;
    let live = Environment::Live;
    let finding = |kind: &str, subject: &str, theirs: &str| NewMismatch {
        kind: kind.into(),
        subject: subject.into(),
        charge_id: None,
        provider_ref: None,
        ours: "authorised 1500 USD".into(),
        theirs: theirs.into(),
    };
    // Whole seconds: the database keeps microseconds.
    let slow = DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap();
    let later = slow + Duration::seconds(5);
    let charge = ["c1".to_owned()];
    // The later check finds the hold released; the slow one saw it still held.
    let released = [finding("status", "c1", "released")];
    assert_eq!(
        record_check(&pool, live, &charge, &[], &released, later)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        record_check(&pool, live, &charge, &[], &[], slow)
            .await
            .unwrap(),
        1,
        "the slow check resolves nothing the later one found"
    );
    let held = [finding("status", "c1", "held")];
    record_check(&pool, live, &charge, &[], &held, slow)
        .await
        .unwrap();
    let open = open_mismatches(&pool, 10).await.unwrap();
    assert_eq!(
        (open.len(), open[0].theirs.as_str(), open[0].last_seen_at),
        (1, "released", later),
        "nor rewrites it"
    );

    // An unanswered capture, then a check that no longer finds it.
    let unanswered = [finding("unanswered", "c2:capture", "no answer")];
    let whole = ["unanswered"];
    assert_eq!(
        record_check(&pool, live, &[], &whole, &unanswered, later)
            .await
            .unwrap(),
        2
    );
    let next = later + Duration::seconds(5);
    assert_eq!(
        record_check(&pool, live, &[], &whole, &[], next)
            .await
            .unwrap(),
        1
    );
    let open = open_mismatches(&pool, 10).await.unwrap();
    assert_eq!(open[0].subject, "c1", "only the unanswered one is resolved");
}
