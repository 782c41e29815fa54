//! Vehicles as the API names them. The road networks own [`courier_geo::Vehicle`]; its names
//! are listed here for the API description.

crate::named_values!(
    /// A vehicle, as the API names it.
    pub VehicleName: "A vehicle, as the API names it" =
        courier_geo::Vehicle::ALL.map(courier_geo::Vehicle::as_str)
);
