//! Vehicles as the API names them. The road networks own [`Vehicle`]; its names are listed
//! here for the API description, so the description cannot drift from the code that parses
//! them.

use courier_geo::Vehicle;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

/// A vehicle, as the API names it.
pub struct VehicleName;

impl utoipa::PartialSchema for VehicleName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("A vehicle, as the API names it"))
            .enum_values(Some(Vehicle::ALL.map(Vehicle::as_str)))
            .into()
    }
}

impl utoipa::ToSchema for VehicleName {}
