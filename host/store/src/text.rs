//! Text columns that hold a domain enum. The domain crate knows nothing of the database, so
//! the store decodes such a column as `Text<T>`, through the enum's `TryFrom<String>`: a value
//! the code does not know is a decode error, never a panic or a silent default. A query names
//! it in a column override, `status AS "status: Text<ChargeStatus>"`, and the row's field keeps
//! the enum itself.

use courier_domain::charge::ChargeStatus;
use courier_domain::{Environment, JobStatus};
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

impl<'r, T> Decode<'r, Postgres> for Text<T>
where
    T: TryFrom<String>,
    T::Error: std::error::Error + Send + Sync + 'static,
{
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <String as Decode<Postgres>>::decode(value)?;
        Ok(Text(T::try_from(text)?))
    }
}

/// The row structs hold the enum; the query macros convert each column with `.into()`.
macro_rules! text_enums {
    ($($enum:ty),* $(,)?) => {$(
        impl From<Text<$enum>> for $enum {
            fn from(text: Text<$enum>) -> Self {
                text.0
            }
        }
    )*};
}

text_enums!(ChargeStatus, Environment, JobStatus);
