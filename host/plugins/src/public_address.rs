//! Which addresses the service may send requests to on someone else's say (webhook endpoints,
//! payment adapters' outbound HTTP): public unicast only, so a URL cannot reach the service's
//! own network (SSRF).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True when `ip` is a public unicast address, looking through IPv6 forms that carry an IPv4
/// address (mapped, compatible, NAT64, 6to4, Teredo).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // "this network"
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254) // link-local
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 168) // private
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    // IPv4-compatible (::a.b.c.d, deprecated), including :: and ::1.
    if s[..6] == [0; 6] {
        return s[6] != 0 && is_public_v4(embedded(s[6], s[7]));
    }
    match s[0] {
        // NAT64 (64:ff9b::/96 well-known; 64:ff9b:1::/48 local use).
        0x0064 if s[1] == 0xff9b => s[2] == 0 && is_public_v4(embedded(s[6], s[7])),
        // 6to4: the IPv4 address follows the prefix.
        0x2002 => is_public_v4(embedded(s[1], s[2])),
        // Teredo: the client's address, inverted, in the last 32 bits.
        0x2001 if s[1] == 0 => is_public_v4(embedded(!s[6], !s[7])),
        // Documentation.
        0x2001 if s[1] == 0x0db8 => false,
        // Discard-only 100::/64.
        0x0100 if s[1..4] == [0, 0, 0] => false,
        // Unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
        first if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80 => false,
        first if (first & 0xffc0) == 0xfec0 || (first & 0xff00) == 0xff00 => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().unwrap())
    }

    #[test]
    fn private_and_special_ipv4_is_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
        ] {
            assert!(!public(ip), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "93.184.216.34",
        ] {
            assert!(public(ip), "{ip}");
        }
    }

    #[test]
    fn private_ipv6_and_ipv4_hidden_in_ipv6_is_refused() {
        for ip in [
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:0101::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo client 127.0.0.1
            "2001:db8::1",
            "100::1",
            "64:ff9b::a00:1",
        ] {
            assert!(!public(ip), "{ip}");
        }
        for ip in [
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert!(public(ip), "{ip}");
        }
    }
}
