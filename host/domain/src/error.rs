//! Stable error codes. Each code is one [`Code`] constant, declared beside the errors that
//! answer with it; each error enum names, per variant, the code it answers with
//! (`#[derive(ErrorCode)]`). The HTTP layer turns an [`Answer`] into a response, and the docs'
//! list of codes is generated from the same constants.

pub use courier_derive::ErrorCode;

pub const INTERNAL: Code = Code::new(
    500,
    "internal",
    "A fault of the service; details go to the log only, never to the caller.",
)
.with_fixed_message("internal error");
pub const DATABASE_UNAVAILABLE: Code = Code::new(
    503,
    "service.database_unavailable",
    "The database cannot be reached; retry. Also `GET /readyz` while the database does not answer.",
)
.with_fixed_message("the database is unavailable; try again shortly");
pub const INVALID_BODY: Code = Code::new(
    422,
    "request.invalid_body",
    "JSON, but not the expected shape (the message names the field), or a string holding NUL (`\\u0000`). Account settings: an unknown field, or a value of the wrong type. Webhooks: `events` is neither null nor an array of strings. Price-book upload: the body is not `{component_base64, settings}` or the component is not base64.",
);
pub const UNKNOWN_VEHICLE: Code = Code::new(
    422,
    "request.unknown_vehicle",
    "`vehicle` is not one of the five vehicle names (quotes, routes); creating a courier with a vehicle that is not one of them.",
);

/// A stable, machine-readable error code and the HTTP status it is answered with.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code {
    pub code: &'static str,
    pub status: u16,
    /// What it means, for the docs.
    pub meaning: &'static str,
    /// The message callers always see with this code, when the error's own message carries
    /// detail meant for the log only.
    pub fixed_message: Option<&'static str>,
}

impl Code {
    pub const fn new(status: u16, code: &'static str, meaning: &'static str) -> Self {
        Code {
            code,
            status,
            meaning,
            fixed_message: None,
        }
    }

    /// This code, answered with `message` whatever the error says.
    pub const fn with_fixed_message(self, message: &'static str) -> Self {
        Code {
            fixed_message: Some(message),
            ..self
        }
    }
}

/// How an error is answered.
#[derive(Debug)]
pub enum Answer<'a> {
    /// A refusal the caller can act on: this code, with the error's own message.
    Refused(&'static Code),
    /// The service's own fault: the HTTP layer decides the answer (the database being away is
    /// not the same as a statement failing), the log keeps this error, the caller learns
    /// nothing of it.
    Fault(&'a (dyn std::error::Error + 'static)),
}

/// An error that knows how it is answered. Derive it: `#[derive(ErrorCode)]` with one
/// `#[code(..)]` per variant (see `courier_derive`).
pub trait ErrorCode {
    fn answer(&self) -> Answer<'_>;

    /// Appends every code this error can answer with (repeats allowed).
    fn codes(codes: &mut Vec<&'static Code>);
}

/// Every code `E` can answer with, each once, sorted by code.
pub fn catalogue<E: ErrorCode>() -> Vec<&'static Code> {
    let mut codes = Vec::new();
    E::codes(&mut codes);
    codes.sort();
    codes.dedup();
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    const GONE: Code = Code::new(404, "thing.gone", "No such thing");
    const BAD: Code = Code::new(422, "thing.bad", "The thing is malformed");

    #[derive(Debug, thiserror::Error, ErrorCode)]
    enum Inner {
        #[error("gone")]
        #[code(GONE)]
        Gone,
        #[error("bad: {0}")]
        #[code(BAD)]
        Bad(String),
    }

    #[derive(Debug, thiserror::Error, ErrorCode)]
    enum Outer {
        #[error(transparent)]
        #[code(via)]
        Inner(Inner),
        #[error("also gone")]
        #[code(GONE)]
        AlsoGone { id: u32 },
        #[error("broken")]
        #[code(fault)]
        Broken(std::io::Error),
    }

    #[test]
    fn variants_answer_with_their_codes_and_faults_keep_their_cause() {
        assert!(matches!(Outer::Inner(Inner::Gone).answer(), Answer::Refused(c) if c == &GONE));
        assert!(matches!(
            Outer::Inner(Inner::Bad("x".into())).answer(),
            Answer::Refused(c) if c.code == "thing.bad"
        ));
        assert!(matches!(Outer::AlsoGone { id: 1 }.answer(), Answer::Refused(c) if c == &GONE));
        let broken = Outer::Broken(std::io::Error::other("disk"));
        let Answer::Fault(cause) = broken.answer() else {
            panic!("a fault");
        };
        assert!(cause.downcast_ref::<std::io::Error>().is_some());
    }

    #[test]
    fn the_catalogue_lists_each_code_once() {
        let codes: Vec<_> = catalogue::<Outer>().iter().map(|c| c.code).collect();
        assert_eq!(codes, ["thing.bad", "thing.gone"]);
    }
}
