//! The fixed address rules: which IP addresses a webhook may never reach, and the IPv4
//! address an IPv6 form carries (judged in its place).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The cloud metadata endpoints (AWS/GCP/Azure/OpenStack, AWS over IPv6, Alibaba).
const METADATA: [IpAddr; 3] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
];

/// Why an address is forbidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddrKind {
    Loopback,
    /// RFC 1918.
    Private,
    LinkLocal,
    UniqueLocal,
    /// fec0::/10 (deprecated, still routed inside some networks).
    SiteLocal,
    /// 100.64.0.0/10 (RFC 6598).
    Cgnat,
    Multicast,
    /// `0.0.0.0/8` or `::`.
    Unspecified,
    Broadcast,
    /// 240.0.0.0/4.
    Reserved,
    CloudMetadata,
}

impl AddrKind {
    /// "a loopback address", as the refusal reads.
    pub fn describe(self) -> &'static str {
        match self {
            AddrKind::Loopback => "a loopback address",
            AddrKind::Private => "a private address",
            AddrKind::LinkLocal => "a link-local address",
            AddrKind::UniqueLocal => "a unique-local address",
            AddrKind::SiteLocal => "a site-local address",
            AddrKind::Cgnat => "a carrier-grade NAT (100.64.0.0/10) address",
            AddrKind::Multicast => "a multicast address",
            AddrKind::Unspecified => "an unspecified address",
            AddrKind::Broadcast => "a broadcast address",
            AddrKind::Reserved => "a reserved address",
            AddrKind::CloudMetadata => "a cloud metadata address",
        }
    }
}

/// One forbidden address and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForbiddenAddr {
    pub ip: IpAddr,
    pub kind: AddrKind,
    /// The IPv4 address an IPv6 form carries, when that is what was judged.
    pub carries: Option<Ipv4Addr>,
}

impl fmt::Display for ForbiddenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}", self.ip, self.kind.describe())?;
        if let Some(v4) = self.carries {
            write!(f, " (it carries IPv4 {v4})")?;
        }
        Ok(())
    }
}

/// The fixed rules: why `ip` is forbidden, each reason with the IPv4 address it carries
/// when that is what was judged; empty when it is a public address. An IPv6 form that
/// may carry several IPv4 addresses (local-use NAT64) gets one entry per forbidden one.
pub(super) fn classify(ip: IpAddr) -> Vec<(AddrKind, Option<Ipv4Addr>)> {
    if METADATA.contains(&ip) {
        return vec![(AddrKind::CloudMetadata, None)];
    }
    match ip {
        IpAddr::V4(v4) => classify_v4(v4).map(|k| (k, None)).into_iter().collect(),
        IpAddr::V6(v6) => {
            let carried = embedded_v4(v6);
            if carried.is_empty() {
                return classify_v6(v6).map(|k| (k, None)).into_iter().collect();
            }
            carried
                .into_iter()
                .flat_map(|v4| classify(IpAddr::V4(v4)).into_iter().map(move |(k, _)| (k, Some(v4))))
                .collect()
        }
    }
}

fn classify_v4(v4: Ipv4Addr) -> Option<AddrKind> {
    let o = v4.octets();
    Some(if v4.is_broadcast() {
        AddrKind::Broadcast
    } else if o[0] == 0 {
        AddrKind::Unspecified
    } else if v4.is_loopback() {
        AddrKind::Loopback
    } else if v4.is_private() {
        AddrKind::Private
    } else if v4.is_link_local() {
        AddrKind::LinkLocal
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        AddrKind::Cgnat
    } else if v4.is_multicast() {
        AddrKind::Multicast
    } else if o[0] >= 240 {
        AddrKind::Reserved
    } else {
        return None;
    })
}

fn classify_v6(v6: Ipv6Addr) -> Option<AddrKind> {
    let s = v6.segments();
    Some(if v6.is_unspecified() {
        AddrKind::Unspecified
    } else if v6.is_loopback() {
        AddrKind::Loopback
    } else if v6.is_multicast() {
        AddrKind::Multicast
    } else if s[0] & 0xffc0 == 0xfe80 {
        AddrKind::LinkLocal
    } else if s[0] & 0xffc0 == 0xfec0 {
        AddrKind::SiteLocal
    } else if s[0] & 0xfe00 == 0xfc00 {
        AddrKind::UniqueLocal
    } else {
        return None;
    })
}

/// The IPv4 addresses an IPv6 form may carry (none for an ordinary IPv6 address):
/// * mapped `::ffff:0:0/96` and SIIT-translated `::ffff:0:0:0/96` (RFC 2765), compatible
///   `::/96` (but not `::` or `::1`), well-known NAT64 `64:ff9b::/96` (RFC 6052): the low
///   32 bits;
/// * 6to4 `2002::/16`: bits 16-47;
/// * local-use NAT64 `64:ff9b:1::/48` (RFC 8215): see [`local_use_nat64`].
fn embedded_v4(v6: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = v6.segments();
    let o = v6.octets();
    let zero_through = |n: usize| s[..n].iter().all(|&x| x == 0);
    if v6.to_ipv4_mapped().is_some()
        || (zero_through(4) && s[4] == 0xffff && s[5] == 0)
        || (zero_through(6) && !v6.is_unspecified() && !v6.is_loopback())
        || (s[0] == 0x0064 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0))
    {
        vec![Ipv4Addr::new(o[12], o[13], o[14], o[15])]
    } else if s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 0x0001 {
        local_use_nat64(o)
    } else if s[0] == 0x2002 {
        vec![Ipv4Addr::new(o[2], o[3], o[4], o[5])]
    } else {
        Vec::new()
    }
}

/// The addresses a `64:ff9b:1::/48` address may carry. Its operator may embed IPv4 with
/// any RFC 6052 prefix length inside the /48 (/48, /56, /64 or /96), and the address does
/// not say which, so every layout it fits is a candidate: /96 always; /48, /56 and /64
/// when the `u` octet (bits 64-71) and the suffix after the IPv4 address are zero, as
/// RFC 6052 requires. Candidates in `0.0.0.0/8` are dropped when another one lies outside
/// it (they are what the zero bits of a longer layout read as, never a NAT64 target).
fn local_use_nat64(o: [u8; 16]) -> Vec<Ipv4Addr> {
    let zero_from = |i: usize| o[i..].iter().all(|&b| b == 0);
    let layouts = [
        (o[8] == 0 && zero_from(11), [o[6], o[7], o[9], o[10]]),
        (o[8] == 0 && zero_from(12), [o[7], o[9], o[10], o[11]]),
        (o[8] == 0 && zero_from(13), [o[9], o[10], o[11], o[12]]),
        (true, [o[12], o[13], o[14], o[15]]),
    ];
    let fits: Vec<Ipv4Addr> = layouts.iter().filter(|(fits, _)| *fits).map(|(_, v4)| Ipv4Addr::from(*v4)).collect();
    let routable: Vec<Ipv4Addr> = fits.iter().copied().filter(|v4| v4.octets()[0] != 0).collect();
    if routable.is_empty() {
        fits
    } else {
        routable
    }
}
