//! API description schemas for names a domain type already lists.

/// Declares `$name`, a string schema whose values are the names a domain type already lists,
/// so the API description cannot drift from the code that parses them.
#[macro_export]
macro_rules! named_values {
    ($(#[$doc:meta])* $vis:vis $name:ident: $description:literal = $values:expr) => {
        $(#[$doc])*
        $vis struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .description(Some($description))
                    .enum_values(Some($values))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}
