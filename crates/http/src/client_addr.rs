//! The client's address behind trusted proxies.
//!
//! Per-address throttling needs the real client address. Behind a load
//! balancer every request comes from the balancer, so its `X-Forwarded-For`
//! is believed, but only when the socket peer is a configured trusted proxy,
//! and only as far back as the list is written by trusted proxies: the
//! rightmost address that is not a trusted proxy is the client. A client that
//! sends its own `X-Forwarded-For` through the balancer can only add entries
//! to the left, which are never reached.

use std::net::IpAddr;

/// A network in CIDR notation: `10.0.0.0/8`, `::1/128`, or a bare address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Network {
    pub fn parse(s: &str) -> Option<Network> {
        let (a, p) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = a.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(Network { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(i)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(n) & mask == u32::from(i) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(i)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(n) & mask == u128::from(i) & mask
            }
            _ => false,
        }
    }
}

/// IPv4-mapped IPv6 addresses compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The client address for a request from `peer` carrying `forwarded_for`.
pub fn client_addr(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Network]) -> IpAddr {
    let peer = canonical(peer);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let Some(list) = forwarded_for else { return peer };
    let mut client = peer;
    for hop in list.rsplit(',') {
        match hop.trim().parse::<IpAddr>() {
            Ok(ip) => {
                client = canonical(ip);
                if !is_trusted(client) {
                    return client;
                }
            }
            // Garbage: stop believing the list here.
            Err(_) => return client,
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks() {
        let n = Network::parse("10.0.0.0/8").unwrap();
        assert!(n.contains(ip("10.1.2.3")));
        assert!(!n.contains(ip("11.0.0.1")));
        assert!(n.contains(ip("::ffff:10.9.9.9")), "mapped addresses count as IPv4");
        assert!(Network::parse("::1").unwrap().contains(ip("::1")));
        assert!(Network::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert_eq!(Network::parse("10.0.0.0/33"), None);
        assert_eq!(Network::parse("nope"), None);
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let trusted = [Network::parse("10.0.0.0/8").unwrap()];
        // Untrusted peer: its header is ignored.
        assert_eq!(client_addr(ip("203.0.113.9"), Some("1.2.3.4"), &trusted), ip("203.0.113.9"));
        // Trusted balancer: the rightmost untrusted hop is the client.
        assert_eq!(client_addr(ip("10.0.0.2"), Some("198.51.100.7"), &trusted), ip("198.51.100.7"));
        assert_eq!(client_addr(ip("10.0.0.2"), Some("6.6.6.6, 198.51.100.7, 10.0.0.5"), &trusted), ip("198.51.100.7"));
        // No header, garbage, or only proxies.
        assert_eq!(client_addr(ip("10.0.0.2"), None, &trusted), ip("10.0.0.2"));
        assert_eq!(client_addr(ip("10.0.0.2"), Some("garbage"), &trusted), ip("10.0.0.2"));
        assert_eq!(client_addr(ip("10.0.0.2"), Some("10.0.0.9"), &trusted), ip("10.0.0.9"));
        // Nothing trusted: always the peer.
        assert_eq!(client_addr(ip("10.0.0.2"), Some("1.2.3.4"), &[]), ip("10.0.0.2"));
    }
}
