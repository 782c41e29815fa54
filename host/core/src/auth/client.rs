//! Which address a request comes from. Behind a load balancer every connection is the
//! balancer's, so the balancer's own `X-Forwarded-For` is believed, and only from the
//! addresses in `COURIER_TRUSTED_PROXIES`: a client cannot name itself another address.
//!
//! Addresses are canonical: an IPv4 peer reaching an IPv6 listener arrives as
//! `::ffff:a.b.c.d`, and is read as `a.b.c.d`, so an IPv4 entry of the trusted proxies
//! contains it and its budgets are its IPv4 address's.

use std::net::IpAddr;

use ipnet::IpNet;

/// The proxies whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    pub fn new(networks: Vec<IpNet>) -> Self {
        Self(networks)
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|network| network.contains(&address))
    }

    /// The client behind a connection from `peer`: `peer` itself, unless it is a trusted
    /// proxy; then the nearest address in `forwarded_for` (the `X-Forwarded-For` values, in
    /// order) that is not a trusted proxy, read from the right, since each proxy appends
    /// the address it was connected from. An entry that is not an address stops the walk at
    /// the proxy that added it.
    pub fn client_address<'a>(
        &self,
        peer: IpAddr,
        forwarded_for: impl DoubleEndedIterator<Item = &'a str>,
    ) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.trusts(client) {
            return client;
        }
        let hops = forwarded_for
            .flat_map(|value| value.split(','))
            .collect::<Vec<_>>();
        for hop in hops.into_iter().rev() {
            let Ok(address) = hop.trim().parse::<IpAddr>() else {
                return client;
            };
            client = address.to_canonical();
            if !self.trusts(client) {
                return client;
            }
        }
        client
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::settings::network;

    fn proxies(networks: &[&str]) -> TrustedProxies {
        TrustedProxies::new(networks.iter().map(|n| network(n).unwrap()).collect())
    }

    fn ip(raw: &str) -> IpAddr {
        raw.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let none = proxies(&[]);
        assert_eq!(
            none.client_address(ip("198.51.100.9"), ["203.0.113.7"].into_iter()),
            ip("198.51.100.9")
        );
        let balancer = proxies(&["10.0.0.5"]);
        assert_eq!(
            balancer.client_address(ip("198.51.100.9"), ["203.0.113.7"].into_iter()),
            ip("198.51.100.9")
        );
    }

    #[test]
    fn ipv4_peers_on_an_ipv6_listener_are_their_ipv4_address() {
        let balancer = proxies(&["127.0.0.1"]);
        // HAProxy on the same machine, reaching a listener on `[::]`.
        assert_eq!(
            balancer.client_address(ip("::ffff:127.0.0.1"), ["203.0.113.7"].into_iter()),
            ip("203.0.113.7")
        );
        assert_eq!(
            balancer.client_address(ip("::ffff:127.0.0.1"), ["::ffff:198.51.100.9"].into_iter()),
            ip("198.51.100.9")
        );
        // Not a proxy: itself, in its IPv4 form.
        assert_eq!(
            proxies(&[]).client_address(ip("::ffff:198.51.100.9"), std::iter::empty()),
            ip("198.51.100.9")
        );
    }

    #[test]
    fn behind_trusted_proxies_the_nearest_untrusted_hop_is_the_client() {
        let chain = proxies(&["10.0.0.0/8", "127.0.0.1"]);
        // A client's own claim on the left is not believed past the first untrusted hop.
        let forwarded = ["1.2.3.4, 203.0.113.7", "10.1.2.3"];
        assert_eq!(
            chain.client_address(ip("127.0.0.1"), forwarded.into_iter()),
            ip("203.0.113.7")
        );
        // No header: the proxy itself.
        assert_eq!(
            chain.client_address(ip("10.0.0.5"), std::iter::empty()),
            ip("10.0.0.5")
        );
        // Garbage stops the walk at the proxy that added it.
        assert_eq!(
            chain.client_address(ip("10.0.0.5"), ["not-an-address"].into_iter()),
            ip("10.0.0.5")
        );
    }
}
