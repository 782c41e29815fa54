//! The arithmetic. Everything is integer minor units computed in i128, so
//! there is no overflow for any amounts the settings validation admits.
//!
//! Rounding: each line is rounded once, to the nearest minor unit, halves
//! away from zero. The total is the sum of the rounded lines, so lines
//! always add up to the total exactly.
//!
//! Order of the lines:
//! 1. `base_fare`: the vehicle's base fare, plus its weight-bracket
//!    surcharge, plus postcode zone amounts for the pickup and the dropoff.
//! 2. `distance`: per-km rate x metres / 1000.
//! 3. `duration`: per-minute rate x seconds / 60.
//! 4. `surge`: (time-of-day % + weekday % + demand %) of lines 1-3.
//!    Of several matching time windows the highest percent applies.
//!    Demand % is (multiplier - 1) x 100, see `DemandSurge`.
//!    Omitted when zero; a negative surge (an off-peak discount) never takes
//!    the running total below zero.
//! 5. `minimum_fare`: tops the running total up to the vehicle's minimum.
//! 6. `merchant_adjustment`: percent of the running total, or a fixed
//!    amount; floored so the pre-tax total is not negative. Omitted when
//!    zero.
//! 7. `tax`: tax_rate_bp of the pre-tax total (sum of lines 1-6). Present
//!    whenever the book has a non-zero rate.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::compiled::{Adjustment, Book};
use crate::settings::normalise_postcode;
use crate::{Line, Refusal, Request};

/// Divides rounding to nearest, halves away from zero.
fn div_round(num: i128, den: i128) -> i128 {
    debug_assert!(den > 0);
    let q = num / den;
    let r = num % den;
    if 2 * r.abs() >= den {
        q + num.signum()
    } else {
        q
    }
}

/// `value / unit` to one decimal, rounded, without floating point (which
/// would pull float formatting into the component): `tenths(4250, 100)` is
/// "4.3", `tenths(350, 1)` is "35.0".
fn tenths(value: i128, unit: i128) -> String {
    let t = div_round(value, unit);
    format!("{}.{}", t / 10, t % 10)
}

/// Basis points as a percent, dropping zero decimals: 2000 -> "20",
/// 1750 -> "17.5", 1725 -> "17.25".
pub(crate) fn hundredths(bp: i128) -> String {
    let (whole, frac) = (bp / 100, bp % 100);
    match frac {
        0 => format!("{whole}"),
        f if f % 10 == 0 => format!("{whole}.{}", f / 10),
        f => format!("{whole}.{f:02}"),
    }
}

fn to_i64(v: i128) -> i64 {
    // Validated inputs keep every line below ~10^22 at worst only if a
    // journey were absurd; clamp rather than wrap.
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// The zone amount for one stop; `Err` when zones are required and the stop
/// has none.
fn zone_amount(book: &Book, postcode: Option<&str>) -> Result<i128, Refusal> {
    if book.zones.is_empty() && !book.zones_required {
        return Ok(0);
    }
    // Zones are ordered longest prefix first: the first match is the best.
    let best = postcode.map(normalise_postcode).and_then(|pc| {
        book.zones
            .iter()
            .find(|(prefix, _)| pc.starts_with(prefix.as_str()))
    });
    match best {
        Some((_, amount)) => Ok(i128::from(*amount)),
        None if book.zones_required => Err(Refusal::NotCovered),
        None => Ok(0),
    }
}

pub fn price(book: &Book, req: &Request) -> Result<Vec<Line>, Refusal> {
    if let Some(c) = &book.currency
        && *c != req.currency
    {
        return Err(Refusal::InvalidSettings(format!(
            "this book prices in {c}, the request is in {}",
            req.currency
        )));
    }
    let rates = book.rates(req.vehicle).ok_or(Refusal::VehicleNotOffered)?;

    let weight_surcharge = if rates.weight_brackets.is_empty() {
        0
    } else {
        rates
            .weight_brackets
            .iter()
            .find(|(up_to, _)| req.weight_grams <= *up_to)
            .map(|(_, surcharge)| i128::from(*surcharge))
            .ok_or(Refusal::VehicleNotOffered)?
    };
    let zones = zone_amount(book, req.pickup_postcode.as_deref())?
        + zone_amount(book, req.dropoff_postcode.as_deref())?;

    let mut lines = Vec::with_capacity(7);
    let mut push = |code: &'static str, description: String, amount: i128| {
        let amount_minor = to_i64(amount);
        lines.push(Line {
            code,
            description,
            amount_minor,
        });
        i128::from(amount_minor)
    };

    let mut running = 0i128;
    let vehicle = req.vehicle.name();
    running += push(
        "base_fare",
        format!("Base fare ({})", vehicle.replace('_', " ")),
        i128::from(rates.base_fare_minor) + weight_surcharge + zones,
    );
    running += push(
        "distance",
        format!(
            "Distance ({} km)",
            tenths(i128::from(req.distance_metres), 100)
        ),
        div_round(
            i128::from(rates.per_km_minor) * i128::from(req.distance_metres),
            1000,
        ),
    );
    running += push(
        "duration",
        format!("Time ({} min)", req.duration_seconds.div_ceil(60)),
        div_round(
            i128::from(rates.per_minute_minor) * i128::from(req.duration_seconds),
            60,
        ),
    );

    let minute = u16::from(req.local_time.hour) * 60 + u16::from(req.local_time.minute);
    let time_pct = book
        .windows
        .iter()
        .filter(|w| w.contains(minute))
        .map(|w| w.percent)
        .max()
        .unwrap_or(0);
    let day_pct = book.weekdays[req.local_time.weekday as usize];
    // Demand in permille; the surge is the multiplier above x1.0, in permille.
    let demand_extra_permille = book.demand.map_or(0, |d| {
        if req.demand_permille >= d.threshold_permille {
            i128::from(req.demand_permille.min(d.cap_permille)) - 1000
        } else {
            0
        }
    });
    // Everything in permille of the transport subtotal.
    let surge_permille = i128::from(time_pct + day_pct) * 10 + demand_extra_permille.max(0);
    let surge = div_round(running * surge_permille, 1000).max(-running.max(0));
    if surge != 0 {
        let sign = if surge_permille < 0 { "-" } else { "+" };
        let pct = tenths(surge_permille.abs(), 1);
        running += push("surge", format!("Surge ({sign}{pct}%)"), surge);
    }

    let minimum = i128::from(rates.minimum_fare_minor);
    if running < minimum {
        running += push(
            "minimum_fare",
            "Top-up to the minimum fare".into(),
            minimum - running,
        );
    }

    if let Some(adj) = book.merchant(&req.merchant) {
        let amount = match adj {
            Adjustment::Percent(p) => div_round(running * i128::from(p), 100),
            Adjustment::Amount(a) => i128::from(a),
        }
        .max(-running.max(0));
        if amount != 0 {
            running += push(
                "merchant_adjustment",
                if amount < 0 {
                    "Merchant discount".into()
                } else {
                    "Merchant surcharge".into()
                },
                amount,
            );
        }
    }

    if book.tax_rate_bp != 0 {
        let bp = book.tax_rate_bp;
        push(
            "tax",
            format!("Tax ({}%)", hundredths(i128::from(bp))),
            div_round(running * i128::from(bp), 10_000),
        );
    }
    Ok(lines)
}
