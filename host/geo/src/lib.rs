//! Road networks, routing and places from OpenStreetMap extracts.
