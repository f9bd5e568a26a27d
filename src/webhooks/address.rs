//! Which addresses a webhook may reach. By default only public ones: a callback URL is chosen by
//! a tenant, and without this check it could make the worker probe the host's own network
//! (loopback services, the cloud metadata endpoint at 169.254.169.254, private databases).
//!
//! The check runs on the addresses actually connected to: the client resolves names through
//! [`PublicOnly`], which drops non-public answers, so a name that resolves to a public address
//! when the URL is submitted and to a private one when it is delivered (DNS rebinding) still
//! cannot get through. IP-literal hosts never reach a resolver, so they are checked apart.

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The variable that lifts the restriction, named in every refusal.
pub const ALLOW_VARIABLE: &str = "WEBHOOK_ALLOW_PRIVATE";

/// A webhook that would go to a non-public address.
#[derive(Debug, thiserror::Error)]
#[error(
    "{host} is a loopback, private or otherwise non-public address, and webhooks are not delivered there (the operator can allow it with {ALLOW_VARIABLE}=true)"
)]
pub struct Blocked {
    pub host: String,
}

/// Whether `ip` is an ordinary public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

/// Host names that mean this machine whatever DNS says (RFC 6761).
pub fn is_local_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = a == 0 // "this network", including 0.0.0.0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // cloud metadata services live here
        || (a == 100 && (b & 0xc0) == 64) // 100.64.0.0/10, carrier-grade NAT
        || (a == 192 && b == 0 && c == 0) // 192.0.0.0/24, protocol assignments
        || ip.is_documentation()
        || (a == 198 && (b & 0xfe) == 18) // 198.18.0.0/15, benchmarking
        || ip.is_multicast()
        || a >= 240; // reserved, and the broadcast address
    !special
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() {
        return false;
    }
    match s {
        // Unique local (fc00::/7), link-local (fe80::/10), the old site-local (fec0::/10).
        [first, ..] if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80 => false,
        [first, ..] if (first & 0xffc0) == 0xfec0 => false,
        [0x2001, 0x0db8, ..] => false, // documentation
        // Forms that carry an IPv4 address are judged by it: NAT64, IPv4-compatible, 6to4.
        [0x0064, 0xff9b, 0, 0, 0, 0, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => {
            public_v4(embedded(hi, lo))
        }
        [0x2002, hi, lo, ..] => public_v4(embedded(hi, lo)),
        _ => true,
    }
}

/// The system resolver, keeping only public answers.
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| is_public(a.ip()))
                .collect();
            if public.is_empty() && !found.is_empty() {
                // The addresses go to the operator's log only: the tenant learns no more about
                // the internal network than that the name is not public.
                tracing::warn!(host = %host, addresses = ?found, "refused a webhook to a non-public address");
                return Err(Box::new(Blocked { host }) as Box<dyn Error + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// The [`Blocked`] refusal inside a failed request, if that is why it failed.
pub fn blocked_cause<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a Blocked> {
    let mut cause: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(blocked) = e.downcast_ref::<Blocked>() {
            return Some(blocked);
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(ip: &str) -> bool {
        is_public(ip.parse().expect("an IP address"))
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.215.14",
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
            "2a00:1450:4001:82b::200e",
            "::ffff:93.184.215.14",
            "64:ff9b::808:808",
        ] {
            assert!(public(ip), "{ip} refused");
        }
    }

    #[test]
    fn the_hosts_own_networks_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.1.2.3",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.5",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
        ] {
            assert!(!public(ip), "{ip} allowed");
        }
    }

    #[test]
    fn localhost_names_are_local() {
        for name in ["localhost", "LOCALHOST.", "api.localhost"] {
            assert!(is_local_name(name), "{name}");
        }
        for name in ["localhost.example.com", "example.com", "mylocalhost"] {
            assert!(!is_local_name(name), "{name}");
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_of_private_addresses() {
        let name: Name = "localhost".parse().expect("name");
        let Err(error) = PublicOnly.resolve(name).await else {
            panic!("localhost resolved");
        };
        let blocked = blocked_cause(error.as_ref()).expect("a Blocked error");
        assert!(blocked.to_string().contains("WEBHOOK_ALLOW_PRIVATE=true"));
    }
}
