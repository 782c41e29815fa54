//! Conversions between the service's types and the price-book contract's.

use chrono::{DateTime, Datelike, Timelike, Utc};
use courier_plugins::{LocalDateTime, Weekday};

pub fn vehicle(vehicle: courier_geo::Vehicle) -> courier_plugins::Vehicle {
    courier_plugins::Vehicle::from_name(vehicle.as_str())
        .expect("the road network and the price-book contract name the same five vehicles")
}

/// Wall-clock time of `at` in the market's time zone.
pub fn local_time(at: DateTime<Utc>, timezone: chrono_tz::Tz) -> LocalDateTime {
    let local = at.with_timezone(&timezone);
    LocalDateTime {
        year: u16::try_from(local.year()).unwrap_or(u16::MAX),
        month: local.month() as u8,
        day: local.day() as u8,
        hour: local.hour() as u8,
        minute: local.minute() as u8,
        weekday: match local.weekday() {
            chrono::Weekday::Mon => Weekday::Monday,
            chrono::Weekday::Tue => Weekday::Tuesday,
            chrono::Weekday::Wed => Weekday::Wednesday,
            chrono::Weekday::Thu => Weekday::Thursday,
            chrono::Weekday::Fri => Weekday::Friday,
            chrono::Weekday::Sat => Weekday::Saturday,
            chrono::Weekday::Sun => Weekday::Sunday,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_time_is_the_markets_wall_clock() {
        let at: DateTime<Utc> = "2026-03-29T00:30:00Z".parse().unwrap();
        // Vaduz moves to summer time at 02:00 local that Sunday; 00:30 UTC is 01:30 CET.
        let local = local_time(at, chrono_tz::Europe::Vaduz);
        assert_eq!((local.day, local.hour, local.minute), (29, 1, 30));
        assert_eq!(local.weekday, Weekday::Sunday);
        let later: DateTime<Utc> = "2026-03-29T01:30:00Z".parse().unwrap();
        assert_eq!(local_time(later, chrono_tz::Europe::Vaduz).hour, 3);
        let baltimore = local_time(at, chrono_tz::America::New_York);
        assert_eq!((baltimore.day, baltimore.hour), (28, 20));
        assert_eq!(baltimore.weekday, Weekday::Saturday);
    }

    #[test]
    fn every_vehicle_converts() {
        for v in courier_geo::Vehicle::ALL {
            assert_eq!(vehicle(v).as_str(), v.as_str());
        }
    }
}
