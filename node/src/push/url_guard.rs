//! The SSRF guard for webhook URLs.
//!
//! A push config's `url` is judged three times: by [`UrlPolicy::check_url`] when the
//! config is stored (and again before every dispatch); by [`UrlPolicy::check_resolved`]
//! when it is stored, which looks the host name up and refuses a name that resolves only
//! to forbidden addresses; and by [`GuardedResolver`] when the delivery client connects,
//! so a name that is rebound to an inside address after it was stored still cannot be
//! reached.
//!
//! * Only `http` and `https`; no userinfo; a host is required; at most
//!   [`MAX_URL_BYTES`] bytes and no control character (CR, LF, TAB, NUL...: the parser
//!   would silently drop or encode them, so the URL stored would not be the one used).
//! * Host names: `localhost`, `*.localhost`, `localhost.localdomain` and names without a
//!   dot are refused unless the operator allowlisted the name.
//! * Addresses (literal in the URL, or resolved) are refused when they are loopback,
//!   private (RFC 1918), link-local, unique-local, site-local, CGNAT, multicast,
//!   unspecified, broadcast, reserved (240/4) or a cloud metadata address. IPv6 forms that
//!   carry an IPv4 address (mapped `::ffff:a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, compatible
//!   `::a.b.c.d`, NAT64 `64:ff9b::/96` and the local-use `64:ff9b:1::/48`, 6to4
//!   `2002::/16`) are judged as the IPv4 address they carry (see `addresses`).
//!   Documentation ranges are fine.
//! * The operator's allowlist ([`UrlPolicy::new`]) lets trusted internal receivers
//!   through, by CIDR / IP or by host name. A cloud metadata address (169.254.169.254,
//!   fd00:ec2::254, 100.100.100.200) is only let through by an entry for exactly that
//!   address (`169.254.169.254` or `/32`): never by a wider CIDR, nor by a host name.
//!
//! Literal-IP URLs never reach a resolver (hyper connects to them directly), so
//! [`UrlPolicy::check_url`] must run before every dispatch as well as at create time; host
//! names are judged again, by address, at every connect. The [`client`] follows no
//! redirects and uses no proxy, so the checked URL is the one connected to.

use a2ad_protocol::A2aError;
use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;
use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

mod addresses;

/// The longest webhook URL accepted, in bytes. Far below what the HTTP client would send
/// (hyper's limit is 64 KiB), and enough for any real receiver's URL.
pub const MAX_URL_BYTES: usize = 2048;

/// How long the create-time lookup of a webhook's host name may take.
pub const CREATE_LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

use addresses::classify;
pub use addresses::{AddrKind, ForbiddenAddr};

/// One operator allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    /// A CIDR; a bare IP is stored as a /32 or /128.
    Net(IpNet),
    /// An exact host name, lowercase, without a trailing dot.
    Host(String),
    /// `*.suffix`: any name strictly below `suffix` (not `suffix` itself).
    Subdomains(String),
}

/// Which webhook URLs and addresses may be used: the fixed rules plus the operator's
/// allowlist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    allow: Vec<Allowed>,
}

/// Why a webhook URL (or a connection to it) was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlRefusal {
    /// Not a URL at all.
    Unparsable(String),
    /// Longer than [`MAX_URL_BYTES`].
    TooLong(usize),
    /// A control character (CR, LF, TAB, NUL, DEL, C1...) at this byte offset: the URL
    /// parser would drop or encode it, so the URL delivered would not be the one given.
    ControlCharacter { at: usize, ch: char },
    /// A scheme other than http or https.
    Scheme(String),
    /// `user:password@` in the URL.
    Userinfo,
    /// No host (e.g. `http:///x` after normalisation, or a non-hierarchical URL).
    NoHost,
    /// `localhost`, `*.localhost`, `localhost.localdomain`.
    LocalName(String),
    /// A name without a dot (resolved via search domains to something internal).
    DotlessName(String),
    /// A literal IP that is forbidden.
    Address(ForbiddenAddr),
    /// At connect time, every address the host resolved to was forbidden.
    Resolved { host: String, refused: Vec<ForbiddenAddr> },
}

impl UrlRefusal {
    /// The reason, without the "push URL refused: " prefix.
    pub fn reason(&self) -> String {
        match self {
            UrlRefusal::Unparsable(e) => format!("it is not a valid URL ({e})"),
            UrlRefusal::TooLong(len) => format!("it is {len} bytes long (at most {MAX_URL_BYTES})"),
            UrlRefusal::ControlCharacter { at, ch } => {
                format!("it contains a control character (U+{:04X}) at byte {at}", u32::from(*ch))
            }
            UrlRefusal::Scheme(s) => format!("scheme `{s}` is not allowed (only http and https)"),
            UrlRefusal::Userinfo => "it carries userinfo (user:password@); put credentials in `authentication`".into(),
            UrlRefusal::NoHost => "it has no host".into(),
            UrlRefusal::LocalName(h) => format!("`{h}` is a local host name"),
            UrlRefusal::DotlessName(h) => format!("`{h}` is not a fully qualified host name"),
            UrlRefusal::Address(a) => a.to_string(),
            UrlRefusal::Resolved { host, refused } => {
                let list: Vec<String> = refused.iter().map(ToString::to_string).collect();
                format!("`{host}` resolves only to forbidden addresses: {}", list.join("; "))
            }
        }
    }

    /// A stable, machine-readable name for the reason (`ErrorInfo.metadata.refusal`).
    pub fn code(&self) -> &'static str {
        match self {
            UrlRefusal::Unparsable(_) => "invalid_url",
            UrlRefusal::TooLong(_) => "too_long",
            UrlRefusal::ControlCharacter { .. } => "control_character",
            UrlRefusal::Scheme(_) => "scheme",
            UrlRefusal::Userinfo => "userinfo",
            UrlRefusal::NoHost => "no_host",
            UrlRefusal::LocalName(_) => "local_name",
            UrlRefusal::DotlessName(_) => "dotless_name",
            UrlRefusal::Address(_) => "forbidden_address",
            UrlRefusal::Resolved { .. } => "resolves_to_forbidden_address",
        }
    }
}

impl fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "push URL refused: {}", self.reason())
    }
}

impl StdError for UrlRefusal {}

impl From<UrlRefusal> for A2aError {
    fn from(refusal: UrlRefusal) -> Self {
        A2aError::invalid_field("url", &format!("is refused: {}", refusal.reason()))
            .with_meta("refusal", refusal.code())
    }
}

/// Finds the [`UrlRefusal`] behind a failed request (the resolver's, when every address
/// was forbidden), walking the error's source chain. `None` for ordinary network errors.
pub fn refusal_of<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a UrlRefusal> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(r) = e.downcast_ref::<UrlRefusal>() {
            return Some(r);
        }
        cur = e.source();
    }
    None
}

impl UrlPolicy {
    /// Builds the policy from the operator's allowlist: CIDRs (`10.0.0.0/8`, `::1/128`),
    /// bare IPs, host names (exact, case-insensitive) and `*.domain` (any subdomain).
    pub fn new(allow: &[String]) -> Result<UrlPolicy, String> {
        let allow = allow.iter().map(|e| parse_entry(e)).collect::<Result<_, _>>()?;
        Ok(UrlPolicy { allow })
    }

    /// The static check: parses `url` and refuses it if its scheme, userinfo, host name or
    /// literal address is forbidden (and not allowlisted). Needs no network.
    pub fn check_url(&self, url: &str) -> Result<Url, UrlRefusal> {
        if url.len() > MAX_URL_BYTES {
            return Err(UrlRefusal::TooLong(url.len()));
        }
        if let Some((at, ch)) = url.char_indices().find(|(_, c)| c.is_control()) {
            return Err(UrlRefusal::ControlCharacter { at, ch });
        }
        let parsed = Url::parse(url.trim()).map_err(|e| UrlRefusal::Unparsable(e.to_string()))?;
        match parsed.scheme() {
            "http" | "https" => {}
            other => return Err(UrlRefusal::Scheme(other.to_owned())),
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(UrlRefusal::Userinfo);
        }
        // The URL parser has already normalised the host: IPv6 in brackets, every IPv4
        // spelling (`2130706433`, `0x7f.1`) in dotted form, names lowercased.
        let host = parsed.host_str().ok_or(UrlRefusal::NoHost)?;
        if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let v6: Ipv6Addr = v6.parse().map_err(|_| UrlRefusal::Unparsable(format!("bad IPv6 host {host}")))?;
            self.check_ip(IpAddr::V6(v6))?;
        } else if let Ok(v4) = host.parse::<Ipv4Addr>() {
            self.check_ip(IpAddr::V4(v4))?;
        } else {
            self.check_name(host)?;
        }
        Ok(parsed)
    }

    /// The create-time check of a URL's host name, after [`UrlPolicy::check_url`]: resolves
    /// it (within [`CREATE_LOOKUP_TIMEOUT`]) and refuses it when every address it resolves
    /// to is forbidden, as a delivery would. A literal address needs no lookup. A name that
    /// does not resolve now (or not in time) is accepted: DNS may be down for a moment,
    /// and every delivery judges the name's addresses again.
    pub async fn check_resolved(&self, url: &Url) -> Result<(), UrlRefusal> {
        let Some(host) = url.host_str().filter(|h| !h.starts_with('[') && h.parse::<Ipv4Addr>().is_err()) else {
            return Ok(());
        };
        let lookup = tokio::net::lookup_host((host, 0));
        let resolved: Vec<SocketAddr> = match tokio::time::timeout(CREATE_LOOKUP_TIMEOUT, lookup).await {
            Ok(Ok(addrs)) => addrs.collect(),
            Ok(Err(_)) | Err(_) => return Ok(()),
        };
        match self.split_resolved(host, resolved) {
            (ok, refused) if ok.is_empty() && !refused.is_empty() => {
                Err(UrlRefusal::Resolved { host: host.to_owned(), refused })
            }
            _ => Ok(()),
        }
    }

    /// Splits the addresses `host` resolved to into the usable ones and the refused ones.
    fn split_resolved(
        &self,
        host: &str,
        addrs: impl IntoIterator<Item = SocketAddr>,
    ) -> (Vec<SocketAddr>, Vec<ForbiddenAddr>) {
        let (mut ok, mut refused) = (Vec::new(), Vec::new());
        for addr in addrs {
            match self.forbidden_addr(Some(host), addr.ip()) {
                None => ok.push(addr),
                Some(f) if !refused.contains(&f) => refused.push(f),
                Some(_) => {}
            }
        }
        (ok, refused)
    }

    /// Refuses a forbidden address unless it is allowlisted by CIDR / IP.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), UrlRefusal> {
        match self.forbidden_addr(None, ip) {
            Some(f) => Err(UrlRefusal::Address(f)),
            None => Ok(()),
        }
    }

    /// Whether a host name is allowlisted (exactly, or under a `*.` entry).
    pub fn allows_host(&self, host: &str) -> bool {
        let host = normalise_name(host);
        self.allow.iter().any(|a| match a {
            Allowed::Host(h) => *h == host,
            Allowed::Subdomains(s) => {
                host.len() > s.len() + 1 && host.ends_with(s.as_str()) && host[..host.len() - s.len()].ends_with('.')
            }
            Allowed::Net(_) => false,
        })
    }

    fn check_name(&self, name: &str) -> Result<(), UrlRefusal> {
        if self.allows_host(name) {
            return Ok(());
        }
        let host = normalise_name(name);
        if host == "localhost" || host.ends_with(".localhost") || host == "localhost.localdomain" {
            return Err(UrlRefusal::LocalName(name.to_owned()));
        }
        if host.is_empty() {
            return Err(UrlRefusal::NoHost);
        }
        if !host.contains('.') {
            return Err(UrlRefusal::DotlessName(name.to_owned()));
        }
        Ok(())
    }

    /// The address's refusal, or `None` when it may be connected to. `host` is the name it
    /// was resolved from, if any: an allowlisted name lets any address through except a
    /// cloud metadata one. An IPv6 form that may carry several IPv4 addresses is refused
    /// when any of them is forbidden and not allowlisted.
    fn forbidden_addr(&self, host: Option<&str>, ip: IpAddr) -> Option<ForbiddenAddr> {
        classify(ip)
            .into_iter()
            .find(|&(kind, carries)| !self.lets_through(host, ip, kind, carries))
            .map(|(kind, carries)| ForbiddenAddr { ip, kind, carries })
    }

    /// Whether the allowlist lets a forbidden address (judged as `kind`, by the IPv4
    /// address it `carries` if any) through, by CIDR / IP or by `host` name.
    fn lets_through(&self, host: Option<&str>, ip: IpAddr, kind: AddrKind, carries: Option<Ipv4Addr>) -> bool {
        let candidates = [Some(ip), carries.map(IpAddr::V4)];
        let by_net = self.allow.iter().any(|a| match a {
            Allowed::Net(net) => candidates.iter().flatten().any(|c| {
                net.contains(c) && (kind != AddrKind::CloudMetadata || net.prefix_len() == net.max_prefix_len())
            }),
            _ => false,
        });
        by_net || (kind != AddrKind::CloudMetadata && host.is_some_and(|h| self.allows_host(h)))
    }
}

fn normalise_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn parse_entry(entry: &str) -> Result<Allowed, String> {
    let e = entry.trim();
    let bad = |why: &str| format!("push URL allowlist entry `{entry}`: {why}");
    if e.is_empty() {
        return Err(bad("is empty"));
    }
    if e.contains('/') {
        return e.parse::<IpNet>().map(|n| Allowed::Net(n.trunc())).map_err(|_| bad("is not a valid CIDR"));
    }
    let bare = e.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap_or(e);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(Allowed::Net(IpNet::from(ip)));
    }
    let (wild, name) = match e.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, e),
    };
    let name = normalise_name(name);
    let valid_label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(valid_label) {
        return Err(bad("is not a CIDR, an IP address or a host name (`*.` may only lead)"));
    }
    Ok(if wild { Allowed::Subdomains(name) } else { Allowed::Host(name) })
}

/// A reqwest resolver that drops every forbidden address a name resolves to, so DNS
/// rebinding cannot reach inside the network. An address is kept when it is public, when
/// it is allowlisted by CIDR / IP, or when the name itself is allowlisted (except cloud
/// metadata addresses, which only an exact IP entry lets through). When nothing is left
/// the connection fails with a [`UrlRefusal::Resolved`] (see [`refusal_of`]).
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<UrlPolicy>,
}

impl GuardedResolver {
    pub fn new(policy: Arc<UrlPolicy>) -> Self {
        GuardedResolver { policy }
    }

    /// Splits resolved addresses into the usable ones and the refused ones.
    fn filter(&self, host: &str, addrs: impl IntoIterator<Item = SocketAddr>) -> (Vec<SocketAddr>, Vec<ForbiddenAddr>) {
        self.policy.split_resolved(host, addrs)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (ok, refused) = this.filter(&host, resolved);
            if !refused.is_empty() {
                tracing::warn!(host = %host, kept = ok.len(), refused = ?refused, "push: dropped forbidden addresses");
            }
            if ok.is_empty() {
                if refused.is_empty() {
                    let msg = format!("push: `{host}` resolved to no address");
                    return Err(std::io::Error::new(std::io::ErrorKind::NotFound, msg).into());
                }
                return Err(Box::new(UrlRefusal::Resolved { host, refused }) as _);
            }
            Ok(Box::new(ok.into_iter()) as Addrs)
        })
    }
}

/// The HTTP client every webhook delivery uses: no redirects, no proxy, the
/// [`GuardedResolver`], `timeout` for the whole request, `User-Agent: a2ad/<version>`,
/// https through rustls with the ring provider and the webpki roots.
pub fn client(policy: Arc<UrlPolicy>, timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver::new(policy)))
        .timeout(timeout)
        .user_agent(concat!("a2ad/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("the push HTTP client builds (rustls with the ring provider)")
}

#[cfg(test)]
mod tests;
