//! Text columns that hold a domain enum. The domain crate knows nothing of the database, so
//! the store decodes such a column as `Text<T>`, through the enum's `FromStr`: a value the
//! code does not know is a decode error, never a panic or a silent default. A query names
//! it in a column override, `status AS "status: Text<ChargeStatus>"`, and the row's field keeps
//! the enum itself.

use std::str::FromStr;

use courier_domain::charge::{CardStatus, ChargeStatus, Move};
use courier_domain::dispatch::{CourierStatus, OfferStatus};
use courier_domain::job::proof::ProofKind;
use courier_domain::job::transitions::Settlement;
use courier_domain::operators::OperatorRole;
use courier_domain::sandbox::plan::{Scenario, Stage};
use courier_domain::team::Role;
use courier_domain::webhook::{DeliveryStatus, EndpointStatus};
use courier_domain::{Environment, JobStatus, Vehicle};

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef};
use sqlx::{Decode, Postgres, Type};

/// A text column read as the domain enum `T`.
#[derive(Debug)]
pub struct Text<T>(pub T);

impl<T> Type<Postgres> for Text<T> {
    fn type_info() -> PgTypeInfo {
        <String as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <String as Type<Postgres>>::compatible(ty)
    }
}

/// A stored name the code does not know: the database and the code disagree.
#[derive(Debug, thiserror::Error)]
#[error("{value:?} is not a {type_name} this code knows")]
struct UnknownName {
    type_name: &'static str,
    value: String,
}

impl<'r, T: FromStr> Decode<'r, Postgres> for Text<T> {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <&str as Decode<Postgres>>::decode(value)?;
        Ok(Text(parse::<T>(text)?))
    }
}

fn parse<T: FromStr>(text: &str) -> Result<T, UnknownName> {
    text.parse().map_err(|_| {
        let type_name = std::any::type_name::<T>();
        UnknownName {
            type_name: type_name.rsplit("::").next().unwrap_or(type_name),
            value: text.to_owned(),
        }
    })
}

/// Reads a text column that a `SELECT *` record holds as a string (see `jobs::JobRecord`).
pub(crate) fn column<T: FromStr>(name: &str, text: &str) -> Result<T, sqlx::Error> {
    parse(text).map_err(|e| sqlx::Error::ColumnDecode {
        index: name.into(),
        source: Box::new(e),
    })
}

/// The row structs hold the enum; the query macros convert each column with `.into()`. (A
/// blanket `impl<T> From<Text<T>> for T` is not allowed: `T` is not this crate's.)
macro_rules! text_enums {
    ($($enum:ty),* $(,)?) => {$(
        impl From<Text<$enum>> for $enum {
            fn from(text: Text<$enum>) -> Self {
                text.0
            }
        }
    )*};
}

text_enums!(
    CardStatus,
    ChargeStatus,
    CourierStatus,
    DeliveryStatus,
    EndpointStatus,
    Environment,
    JobStatus,
    Move,
    OfferStatus,
    OperatorRole,
    ProofKind,
    Role,
    Scenario,
    Settlement,
    Stage,
    Vehicle,
);
