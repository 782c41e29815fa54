//! A hostile component for the host's tests, never for production.
//!
//! It implements both the price-book and the payload-shaper worlds, and
//! misbehaves according to its input, so one component exercises every
//! limit the host enforces:
//!
//! | price: merchant / prepare-settings: settings / shape: event name | behaviour |
//! |---|---|
//! | `spin`    | loops forever (CPU deadline) |
//! | `balloon` | allocates without bound (memory cap) |
//! | `trap`    | panics, which aborts: a wasm trap |
//! | `flood`   | returns 100,000 lines / an 8 MiB body (output cap) |
//! | `alias`   | returns 20,000 lines whose strings all alias one 1 MiB block: ~20 GB if a host copied every string (output cap, checked before copying) |
//! | anything else | behaves: one `base_fare` line of 100 / a tiny body |

#[cfg(target_family = "wasm")]
mod component {
    wit_bindgen::generate!({
        inline: "
            package courier:hostile;
            world hostile {
                include courier:pricing/price-book@1.0.0;
                include courier:webhooks/payload-shaper@1.0.0;
            }
        ",
        path: ["../../wit/pricing", "../../wit/webhooks"],
        world: "courier:hostile/hostile",
        generate_all,
    });

    use courier::pricing::types::{
        BookInfo, Line, PreparedSettings, PriceRequest, Refusal, Vehicle,
    };
    use courier::webhooks::types::{Event, Payload};

    struct Component;

    export!(Component);

    fn misbehave(mode: &str) {
        match mode {
            "spin" => {
                let mut n = 0u64;
                loop {
                    n = core::hint::black_box(n.wrapping_add(1));
                }
            }
            "balloon" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    // Reserving is what grows linear memory; one byte per
                    // block keeps it from being elided without spending the
                    // deadline on filling it.
                    let mut block = Vec::with_capacity(1 << 20);
                    block.push(core::hint::black_box(7u8));
                    hoard.push(block);
                }
            }
            "trap" => panic!("hostile component trapped on purpose"),
            _ => {}
        }
    }

    fn line(description: String) -> Line {
        Line {
            code: "base_fare".into(),
            description,
            amount_minor: 100,
        }
    }

    impl exports::courier::pricing::book::Guest for Component {
        fn price(request: PriceRequest, _settings: Vec<u8>) -> Result<Vec<Line>, Refusal> {
            misbehave(&request.merchant);
            match request.merchant.as_str() {
                "flood" => Ok((0..100_000).map(|i| line(format!("line {i}"))).collect()),
                "alias" => {
                    // One 1 MiB block referenced by 20,000 lines:
                    // the canonical ABI lets every returned string point at
                    // the same bytes, so this is small in guest memory but
                    // ~20 GB for a host that copies each string. The block
                    // is never freed (the instance is discarded after the
                    // call), so the aliasing owners are never dropped twice
                    // inside this call.
                    let big = core::mem::ManuallyDrop::new("x".repeat(1 << 20));
                    Ok((0..20_000)
                        .map(|_| {
                            // SAFETY: test-only aliasing, see above.
                            line(unsafe {
                                String::from_raw_parts(
                                    big.as_ptr().cast_mut(),
                                    big.len(),
                                    big.capacity(),
                                )
                            })
                        })
                        .collect())
                }
                _ => Ok(vec![line("well behaved".into())]),
            }
        }

        fn prepare_settings(settings: String) -> Result<PreparedSettings, String> {
            misbehave(&settings);
            Ok(PreparedSettings {
                info: BookInfo {
                    name: "hostile".into(),
                    version: "1.0.0".into(),
                    settings_schema: 1,
                    vehicles: vec![Vehicle::Bicycle],
                },
                compiled: Vec::new(),
            })
        }
    }

    impl exports::courier::webhooks::shaper::Guest for Component {
        fn shape(event: Event) -> Result<Payload, String> {
            misbehave(&event.name);
            let body = match event.name.as_str() {
                "flood" => vec![b'x'; 8 << 20],
                _ => b"{}".to_vec(),
            };
            Ok(Payload {
                content_type: "application/json".into(),
                body,
            })
        }
    }
}
