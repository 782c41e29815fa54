//! An instance as its folder holds it: `orders.txt`, `restaurants.txt`, `couriers.txt` and
//! `instance_parameters.txt`, tab-separated with a header line each.

use std::collections::HashMap;

use thiserror::Error;

/// A point in the instance's plane, in metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    fn metres_to(self, other: Point) -> f64 {
        ((other.x - self.x).powi(2) + (other.y - self.y).powi(2)).sqrt()
    }
}

/// Where a courier can be: its on-location, a restaurant, or an order's drop-off.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    Start(usize),
    Restaurant(usize),
    Dropoff(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Order {
    pub id: String,
    pub dropoff: Point,
    /// Minutes, as every time of an instance.
    pub placed_at: i64,
    pub restaurant: usize,
    pub ready_at: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Restaurant {
    pub id: String,
    pub at: Point,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Courier {
    pub id: String,
    pub start: Point,
    pub on_at: i64,
    pub off_at: i64,
}

/// `instance_parameters.txt`.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameters {
    pub metres_per_minute: f64,
    pub pickup_service: i64,
    pub dropoff_service: i64,
    pub target_click_to_door: i64,
    pub max_click_to_door: i64,
    pub pay_per_order: f64,
    pub pay_per_hour: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// In placement order.
    pub orders: Vec<Order>,
    pub restaurants: Vec<Restaurant>,
    pub couriers: Vec<Courier>,
    pub parameters: Parameters,
}

/// Why an instance cannot be read: the file, the line (1-based; 0 for the file as a whole)
/// and what is wrong there.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{file}{}: {reason}", if *line > 0 { format!(", line {line}") } else { String::new() })]
pub struct InstanceError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

impl Instance {
    /// Reads an instance from its files' contents, by file name.
    pub fn parse(read: impl Fn(&str) -> Result<String, String>) -> Result<Self, InstanceError> {
        let table = |file: &str,
                     columns: usize|
         -> Result<Vec<(usize, Vec<String>)>, InstanceError> {
            let text = read(file).map_err(|reason| InstanceError {
                file: file.into(),
                line: 0,
                reason,
            })?;
            let mut rows = Vec::new();
            for (n, line) in text.lines().enumerate().skip(1) {
                if line.trim().is_empty() {
                    continue;
                }
                let cells: Vec<String> = line.split('\t').map(|c| c.trim().to_owned()).collect();
                if cells.len() != columns {
                    return Err(InstanceError {
                        file: file.into(),
                        line: n + 1,
                        reason: format!("{} columns where {columns} are expected", cells.len()),
                    });
                }
                rows.push((n + 1, cells));
            }
            Ok(rows)
        };
        let number =
            |file: &str, line: usize, cell: &str, what: &str| -> Result<f64, InstanceError> {
                cell.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| InstanceError {
                        file: file.into(),
                        line,
                        reason: format!("{what} {cell:?} is not a number"),
                    })
            };
        let minutes =
            |file: &str, line: usize, cell: &str, what: &str| -> Result<i64, InstanceError> {
                let value = number(file, line, cell, what)?;
                (value.fract() == 0.0)
                    .then_some(value as i64)
                    .ok_or_else(|| InstanceError {
                        file: file.into(),
                        line,
                        reason: format!("{what} {cell:?} is not a whole number of minutes"),
                    })
            };

        const RESTAURANTS: &str = "restaurants.txt";
        let mut restaurants = Vec::new();
        let mut restaurant_index = HashMap::new();
        for (line, cells) in table(RESTAURANTS, 3)? {
            let at = Point {
                x: number(RESTAURANTS, line, &cells[1], "x")?,
                y: number(RESTAURANTS, line, &cells[2], "y")?,
            };
            restaurant_index.insert(cells[0].clone(), restaurants.len());
            restaurants.push(Restaurant {
                id: cells[0].clone(),
                at,
            });
        }

        const ORDERS: &str = "orders.txt";
        let mut orders = Vec::new();
        for (line, cells) in table(ORDERS, 6)? {
            let restaurant = *restaurant_index
                .get(&cells[4])
                .ok_or_else(|| InstanceError {
                    file: ORDERS.into(),
                    line,
                    reason: format!("restaurant {:?} is not in {RESTAURANTS}", cells[4]),
                })?;
            orders.push(Order {
                id: cells[0].clone(),
                dropoff: Point {
                    x: number(ORDERS, line, &cells[1], "x")?,
                    y: number(ORDERS, line, &cells[2], "y")?,
                },
                placed_at: minutes(ORDERS, line, &cells[3], "placement_time")?,
                restaurant,
                ready_at: minutes(ORDERS, line, &cells[5], "ready_time")?,
            });
        }
        orders.sort_by_key(|o| o.placed_at);

        const COURIERS: &str = "couriers.txt";
        let mut couriers = Vec::new();
        for (line, cells) in table(COURIERS, 5)? {
            let courier = Courier {
                id: cells[0].clone(),
                start: Point {
                    x: number(COURIERS, line, &cells[1], "x")?,
                    y: number(COURIERS, line, &cells[2], "y")?,
                },
                on_at: minutes(COURIERS, line, &cells[3], "on_time")?,
                off_at: minutes(COURIERS, line, &cells[4], "off_time")?,
            };
            if courier.off_at <= courier.on_at {
                return Err(InstanceError {
                    file: COURIERS.into(),
                    line,
                    reason: "off_time is not after on_time".into(),
                });
            }
            couriers.push(courier);
        }

        const PARAMETERS: &str = "instance_parameters.txt";
        let rows = table(PARAMETERS, 7)?;
        let Some((line, cells)) = rows.first() else {
            return Err(InstanceError {
                file: PARAMETERS.into(),
                line: 0,
                reason: "no line of parameters below the header".into(),
            });
        };
        let line = *line;
        let parameters = Parameters {
            metres_per_minute: number(PARAMETERS, line, &cells[0], "meters_per_minute")?,
            pickup_service: minutes(PARAMETERS, line, &cells[1], "pickup service minutes")?,
            dropoff_service: minutes(PARAMETERS, line, &cells[2], "dropoff service minutes")?,
            target_click_to_door: minutes(PARAMETERS, line, &cells[3], "target click-to-door")?,
            max_click_to_door: minutes(PARAMETERS, line, &cells[4], "maximum click-to-door")?,
            pay_per_order: number(PARAMETERS, line, &cells[5], "pay per order")?,
            pay_per_hour: number(PARAMETERS, line, &cells[6], "guaranteed pay per hour")?,
        };
        if parameters.metres_per_minute <= 0.0 {
            return Err(InstanceError {
                file: PARAMETERS.into(),
                line,
                reason: "meters_per_minute is not positive".into(),
            });
        }
        Ok(Instance {
            orders,
            restaurants,
            couriers,
            parameters,
        })
    }

    /// Where `place` is.
    pub fn point(&self, place: &Place) -> Point {
        match *place {
            Place::Start(c) => self.couriers[c].start,
            Place::Restaurant(r) => self.restaurants[r].at,
            Place::Dropoff(o) => self.orders[o].dropoff,
        }
    }

    /// The benchmark's travel time in minutes: the euclidean distance over the speed, rounded
    /// up (as the evaluator computes it).
    pub fn minutes_between(&self, from: &Place, to: &Place) -> i64 {
        let metres = self.point(from).metres_to(self.point(to));
        (metres / self.parameters.metres_per_minute).ceil() as i64
    }

    /// The name the evaluator's files give `place`.
    pub fn name(&self, place: &Place) -> &str {
        match *place {
            Place::Start(_) => "0",
            Place::Restaurant(r) => &self.restaurants[r].id,
            Place::Dropoff(o) => &self.orders[o].id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(replace: (&str, &str)) -> impl Fn(&str) -> Result<String, String> {
        move |file| {
            let text = match file {
                "restaurants.txt" => "restaurant\tx\ty\nr1\t0\t0\n",
                "orders.txt" => {
                    "order\tx\ty\tplacement_time\trestaurant\tready_time\no1\t300\t400\t10\tr1\t20\n"
                }
                "couriers.txt" => "courier\tx\ty\ton_time\toff_time\nc1\t0\t0\t0\t60\n",
                "instance_parameters.txt" => {
                    "m\tp\td\tt\tmax\tpay\thour\n100\t4\t4\t40\t90\t10\t15\n"
                }
                _ => return Err("No such file or directory".into()),
            };
            Ok(if file == replace.0 {
                replace.1.to_owned()
            } else {
                text.to_owned()
            })
        }
    }

    fn refusal(file: &str, text: &str) -> String {
        Instance::parse(files((file, text)))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn an_instance_reads_and_measures_travel_as_the_evaluator_does() {
        let instance = Instance::parse(files(("", ""))).unwrap();
        assert_eq!(instance.orders[0].ready_at, 20);
        // 500 m at 100 m a minute: 5 minutes exactly; 1 m more rounds up.
        let trip = instance.minutes_between(&Place::Restaurant(0), &Place::Dropoff(0));
        assert_eq!(trip, 5);
        assert_eq!(instance.name(&Place::Start(0)), "0");
    }

    #[test]
    fn a_line_that_does_not_read_is_named_with_its_file_and_line() {
        let header = "order\tx\ty\tplacement_time\trestaurant\tready_time\n";
        assert_eq!(
            refusal("orders.txt", &format!("{header}o1\t1\t2\t3\tr1\n")),
            "orders.txt, line 2: 5 columns where 6 are expected"
        );
        assert_eq!(
            refusal("orders.txt", &format!("{header}o1\t1\t2\t3.5\tr1\t4\n")),
            "orders.txt, line 2: placement_time \"3.5\" is not a whole number of minutes"
        );
        assert_eq!(
            refusal("orders.txt", &format!("{header}o1\tx\t2\t3\tr1\t4\n")),
            "orders.txt, line 2: x \"x\" is not a number"
        );
        assert_eq!(
            refusal(
                "couriers.txt",
                "courier\tx\ty\ton_time\toff_time\nc1\t0\t0\t60\t60\n"
            ),
            "couriers.txt, line 2: off_time is not after on_time"
        );
        assert_eq!(
            refusal("instance_parameters.txt", "header only\n"),
            "instance_parameters.txt: no line of parameters below the header"
        );
    }
}
