use super::*;
use a2ad_protocol::ErrorCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn policy(allow: &[&str]) -> UrlPolicy {
    UrlPolicy::new(&allow.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

fn refused(p: &UrlPolicy, url: &str) -> String {
    match p.check_url(url) {
        Ok(u) => panic!("{url} was accepted as {u}"),
        Err(r) => r.to_string(),
    }
}

#[test]
fn every_forbidden_form_is_refused_with_its_reason() {
    let p = UrlPolicy::default();
    let cases = [
        ("ftp://example.com/x", "scheme `ftp` is not allowed"),
        ("file:///etc/passwd", "scheme `file` is not allowed"),
        ("gopher://example.com/", "scheme `gopher`"),
        ("javascript:alert(1)", "scheme `javascript`"),
        ("not a url", "not a valid URL"),
        ("https://user:pw@example.com/hook", "userinfo"),
        ("https://user@example.com/hook", "userinfo"),
        ("http://localhost/hook", "`localhost` is a local host name"),
        ("http://LOCALHOST.:8080/hook", "is a local host name"),
        ("http://api.localhost/hook", "`api.localhost` is a local host name"),
        ("http://localhost.localdomain/", "is a local host name"),
        ("http://intranet/hook", "`intranet` is not a fully qualified host name"),
        ("http://127.0.0.1/hook", "127.0.0.1 is a loopback address"),
        ("http://127.1.2.3:9/hook", "127.1.2.3 is a loopback address"),
        ("http://2130706433/", "127.0.0.1 is a loopback address"),
        ("http://0x7f.1/", "127.0.0.1 is a loopback address"),
        ("http://[::1]/hook", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1 is a loopback address (it carries IPv4 127.0.0.1)"),
        ("http://[::ffff:10.0.0.5]/", "is a private address (it carries IPv4 10.0.0.5)"),
        ("http://[64:ff9b::a9fe:a9fe]/", "is a cloud metadata address (it carries IPv4 169.254.169.254)"),
        ("http://[::127.0.0.1]/", "::7f00:1 is a loopback address (it carries IPv4 127.0.0.1)"),
        ("http://[2002:7f00:1::]/", "is a loopback address (it carries IPv4 127.0.0.1)"),
        ("http://10.0.0.5/hook", "10.0.0.5 is a private address"),
        ("http://10.255.255.255/", "10.255.255.255 is a private address"),
        ("http://172.16.0.1/", "172.16.0.1 is a private address"),
        ("http://172.31.255.254/", "172.31.255.254 is a private address"),
        ("http://192.168.1.1/", "192.168.1.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata address"),
        ("http://100.100.100.200/", "100.100.100.200 is a cloud metadata address"),
        ("http://169.254.1.1/", "169.254.1.1 is a link-local address"),
        ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT"),
        ("http://100.127.255.254/", "carrier-grade NAT"),
        ("http://[fc00::1]/", "fc00::1 is a unique-local address"),
        ("http://[fd12:3456::1]/", "is a unique-local address"),
        ("http://[fe80::1]/", "fe80::1 is a link-local address"),
        ("http://[fec0::1]/", "fec0::1 is a site-local address"),
        ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
        ("http://[ff02::1]/", "ff02::1 is a multicast address"),
        ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
        ("http://0.1.2.3/", "0.1.2.3 is an unspecified address"),
        ("http://[::]/", ":: is an unspecified address"),
        ("http://255.255.255.255/", "255.255.255.255 is a broadcast address"),
        ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ];
    for (url, why) in cases {
        let msg = refused(&p, url);
        assert!(msg.starts_with("push URL refused: "), "{url}: {msg}");
        assert!(msg.contains(why), "{url}: expected {why:?} in {msg:?}");
    }
    assert_eq!(refused(&p, "http://10.0.0.5/"), "push URL refused: 10.0.0.5 is a private address");
}

#[test]
fn public_urls_are_accepted() {
    let p = UrlPolicy::default();
    for url in [
        "https://93.184.216.34/hook",
        "https://example.com/hook",
        "http://example.com:8080/a?b=c",
        "https://Hooks.Example.COM./x",
        "http://[2606:4700:4700::1111]/hook",
        "http://192.0.2.10/doc-range",
        "http://[2001:db8::1]/doc-range",
        "http://100.63.255.255/",
        "http://172.32.0.1/",
        "http://[::ffff:93.184.216.34]/",
    ] {
        let u = p.check_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(u.host().is_some());
    }
}

#[test]
fn allowlist_by_cidr_and_ip() {
    let p = policy(&["127.0.0.1/32", "::1/128", "10.0.0.0/8", "192.168.7.7", "[fe80::5]"]);
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://[::1]:9/",
        "http://[::ffff:127.0.0.1]/",
        "http://10.1.2.3/",
        "http://192.168.7.7/",
        "http://[fe80::5]/",
    ] {
        p.check_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    }
    assert!(refused(&p, "http://127.0.0.2/").contains("loopback"));
    assert!(refused(&p, "http://192.168.7.8/").contains("private"));
    assert!(refused(&p, "http://172.16.0.1/").contains("private"));
    // Allowlisting an address does not allowlist local names.
    assert!(refused(&p, "http://localhost:8080/").contains("local host name"));
}

#[test]
fn metadata_needs_an_exact_entry() {
    let wide = policy(&["169.254.0.0/16", "100.64.0.0/10", "*.internal", "fd00::/8"]);
    assert!(wide.check_url("http://169.254.1.1/").is_ok());
    assert!(refused(&wide, "http://169.254.169.254/").contains("cloud metadata"));
    assert!(refused(&wide, "http://100.100.100.200/").contains("cloud metadata"));
    assert!(refused(&wide, "http://[fd00:ec2::254]/").contains("cloud metadata"));
    let r = GuardedResolver::new(Arc::new(wide));
    let meta = SocketAddr::from(([169, 254, 169, 254], 0));
    assert_eq!(r.filter("metadata.google.internal", [meta]).0, vec![]);
    let exact = policy(&["169.254.169.254"]);
    assert!(exact.check_url("http://169.254.169.254/").is_ok());
}

#[test]
fn allowlist_by_host() {
    let p = policy(&["Receiver", "hooks.corp.example", "*.svc.cluster.local", "LocalHost"]);
    for url in [
        "http://receiver:8080/",
        "http://RECEIVER./",
        "http://hooks.corp.example/",
        "http://a.svc.cluster.local/",
        "http://a.b.svc.cluster.local/",
        "http://localhost:1/",
    ] {
        p.check_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    }
    assert!(p.allows_host("x.svc.cluster.local"));
    assert!(!p.allows_host("svc.cluster.local"));
    assert!(!p.allows_host("xsvc.cluster.local"));
    assert!(!p.allows_host("hooks.corp.example.evil.com"));
    assert!(refused(&p, "http://other/").contains("not a fully qualified"));
    // A host entry lets that name's resolved addresses through; CIDRs are untouched.
    let r = GuardedResolver::new(Arc::new(p));
    let lo = SocketAddr::from(([127, 0, 0, 1], 0));
    assert_eq!(r.filter("receiver", [lo]).0, vec![lo]);
    assert_eq!(r.filter("other.example", [lo]).0, vec![]);
    assert!(refused(&policy(&["receiver"]), "http://127.0.0.1/").contains("loopback"));
}

#[test]
fn bad_allowlist_entries_are_named() {
    for entry in ["", "10.0.0.0/33", "300.1.1.1/8", "http://x.example", "*.", "a..b", "foo bar", "a.*.b", "-x.example"]
    {
        let err = UrlPolicy::new(&[entry.to_string()]).unwrap_err();
        assert!(err.contains(&format!("`{entry}`")), "{entry:?}: {err}");
    }
    assert!(UrlPolicy::new(&["10.0.0.0/8".into(), "2001:db8::/32".into(), "*.example.com".into()]).is_ok());
}

#[test]
fn refusal_becomes_invalid_params_naming_url() {
    let err: A2aError = UrlPolicy::default().check_url("http://10.0.0.5/").unwrap_err().into();
    assert_eq!(err.code, ErrorCode::InvalidParams);
    assert_eq!(err.message, "Invalid params: `url` is refused: 10.0.0.5 is a private address");
    assert_eq!(err.metadata.get("field").map(String::as_str), Some("url"));
    assert_eq!(err.metadata.get("refusal").map(String::as_str), Some("forbidden_address"));
}

/// A one-request-per-connection HTTP server on 127.0.0.1: `/redirect` answers 302 to
/// `/elsewhere`, everything else 200 with the request's User-Agent as the body.
async fn loopback_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let ua = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("user-agent:").map(|v| v.trim().to_owned()))
                    .unwrap_or_default();
                let resp = if head.starts_with("GET /redirect ") {
                    "HTTP/1.1 302 Found\r\nlocation: /elsewhere\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_owned()
                } else {
                    format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{ua}", ua.len())
                };
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test]
async fn resolver_refuses_loopback_unless_allowlisted_by_cidr() {
    // Not allowlisted: resolving fails, with the refusal as the error.
    let strict = GuardedResolver::new(Arc::new(UrlPolicy::default()));
    let err = match strict.resolve("localhost".parse().unwrap()).await {
        Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
        Err(e) => e,
    };
    let refusal = err.downcast_ref::<UrlRefusal>().expect("a UrlRefusal");
    assert!(matches!(refusal, UrlRefusal::Resolved { .. }));
    assert!(refusal.to_string().contains("`localhost` resolves only to forbidden addresses: 127.0.0.1 is a loopback"));

    // 127.0.0.1/32 allowlisted (by CIDR only, not by name): yields 127.0.0.1, no ::1.
    let open = GuardedResolver::new(Arc::new(policy(&["127.0.0.1/32"])));
    let addrs: Vec<SocketAddr> = open.resolve("localhost".parse().unwrap()).await.unwrap().collect();
    assert!(!addrs.is_empty());
    assert!(addrs.iter().all(|a| a.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST)), "{addrs:?}");
}

#[tokio::test]
async fn client_connects_only_where_the_policy_allows() {
    let port = loopback_server().await;
    // (check_url would refuse the `localhost` name; this exercises the connect-time guard.)
    let url = format!("http://localhost:{port}/hook");

    let allowed = client(Arc::new(policy(&["127.0.0.1/32"])), Duration::from_secs(5));
    let resp = allowed.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), concat!("a2ad/", env!("CARGO_PKG_VERSION")));

    // Redirects are returned, not followed.
    let resp = allowed.get(format!("http://localhost:{port}/redirect")).send().await.unwrap();
    assert_eq!(resp.status(), 302);

    // Not allowlisted: the connection fails with the resolver's refusal (DNS rebinding).
    let strict = client(Arc::new(UrlPolicy::default()), Duration::from_secs(5));
    let err = strict.get(&url).send().await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    let refusal = refusal_of(&err).expect("the refusal is in the source chain");
    assert_eq!(refusal.code(), "resolves_to_forbidden_address");
}

#[test]
fn ipv4_carried_by_siit_and_nat64_forms_is_judged() {
    let p = UrlPolicy::default();
    let cases = [
        // SIIT (IPv4-translated, ::ffff:0:0:0/96).
        ("http://[::ffff:0:7f00:1]/", "::ffff:0:7f00:1 is a loopback address (it carries IPv4 127.0.0.1)"),
        ("http://[::ffff:0:a9fe:a9fe]/", "is a cloud metadata address (it carries IPv4 169.254.169.254)"),
        // Well-known NAT64 (64:ff9b::/96).
        ("http://[64:ff9b::a00:1]/", "64:ff9b::a00:1 is a private address (it carries IPv4 10.0.0.1)"),
        // Local-use NAT64 (64:ff9b:1::/48): the /96 layout ...
        ("http://[64:ff9b:1::a00:1]/", "64:ff9b:1::a00:1 is a private address (it carries IPv4 10.0.0.1)"),
        ("http://[64:ff9b:1:abcd::c0a8:101]/", "is a private address (it carries IPv4 192.168.1.1)"),
        // ... and the /48 layout (127.0.0.1 in bits 48-63 and 72-87).
        ("http://[64:ff9b:1:7f00:0:100::]/", "is a loopback address (it carries IPv4 127.0.0.1)"),
        // The /64 layout (bits 72-103).
        ("http://[64:ff9b:1:0:a9:fea9:fe00:0]/", "is a cloud metadata address (it carries IPv4 169.254.169.254)"),
    ];
    for (url, why) in cases {
        let msg = refused(&p, url);
        assert!(msg.contains(why), "{url}: expected {why:?} in {msg:?}");
    }
    for public in [
        "http://[::ffff:0:5db8:d822]/",
        "http://[64:ff9b::5db8:d822]/",
        "http://[64:ff9b:1::5db8:d822]/",
        "http://[64:ff9b:1:5db8:d8:2200::]/",
        "http://[64:ff9b:1:100:0:100::]/",
    ] {
        p.check_url(public).unwrap_or_else(|e| panic!("{public}: {e}"));
    }
    // An allowlisted translator prefix lets its addresses through.
    policy(&["64:ff9b:1::/48"]).check_url("http://[64:ff9b:1::a00:1]/").unwrap();
    // Each IPv4 address a local-use form may carry must be allowed: here the /48 layout
    // reads 127.0.10.0 (allowlisted) and the /64 layout 10.0.0.0 (not).
    let loopback = policy(&["127.0.0.0/8"]);
    loopback.check_url("http://[64:ff9b:1:7f00:0:100::]/").unwrap();
    let msg = refused(&loopback, "http://[64:ff9b:1:7f00:a:0::]/");
    assert!(msg.ends_with("is a private address (it carries IPv4 10.0.0.0)"), "{msg}");
}

#[test]
fn control_characters_and_overlong_urls_are_refused() {
    let p = UrlPolicy::default();
    let cases = [
        ("http://example.com/a\r\nX-Evil: 1", "push URL refused: it contains a control character (U+000D) at byte 20"),
        ("http://example.com/a\nb", "push URL refused: it contains a control character (U+000A) at byte 20"),
        ("http://exa\tmple.com/", "push URL refused: it contains a control character (U+0009) at byte 10"),
        ("http://example.com/\u{0}", "push URL refused: it contains a control character (U+0000) at byte 19"),
        ("http://example.com/\u{7f}", "push URL refused: it contains a control character (U+007F) at byte 19"),
        ("http://example.com/\u{85}", "push URL refused: it contains a control character (U+0085) at byte 19"),
        ("\nhttp://example.com/", "push URL refused: it contains a control character (U+000A) at byte 0"),
    ];
    for (url, expected) in cases {
        assert_eq!(refused(&p, url), expected, "{url:?}");
    }
    let prefix = "https://example.com/";
    let longest = format!("{prefix}{}", "a".repeat(MAX_URL_BYTES - prefix.len()));
    p.check_url(&longest).expect("exactly the limit is accepted");
    let over = format!("{longest}b");
    assert_eq!(refused(&p, &over), "push URL refused: it is 2049 bytes long (at most 2048)");
    let err: A2aError = p.check_url(&over).unwrap_err().into();
    assert_eq!(err.metadata.get("refusal").map(String::as_str), Some("too_long"));
    let err: A2aError = p.check_url("http://example.com/\r").unwrap_err().into();
    assert_eq!(err.metadata.get("refusal").map(String::as_str), Some("control_character"));
}

#[tokio::test]
async fn a_name_that_resolves_only_to_forbidden_addresses_is_refused_at_create_time() {
    // `localhost` stands in for any name that resolves to inside addresses (the name
    // rules, which `check_url` applies first, would refuse this one by name).
    let url = Url::parse("http://localhost:8080/hook").unwrap();
    let refusal = UrlPolicy::default().check_resolved(&url).await.unwrap_err();
    assert_eq!(refusal.code(), "resolves_to_forbidden_address");
    assert!(
        refusal.to_string().starts_with("push URL refused: `localhost` resolves only to forbidden addresses: "),
        "{refusal}"
    );
    assert!(refusal.to_string().contains("127.0.0.1 is a loopback address"), "{refusal}");
    // The allowlist applies as it does at delivery: by CIDR (here only 127.0.0.1 is
    // allowed, so the name has one usable address) or by name.
    policy(&["127.0.0.1/32"]).check_resolved(&url).await.unwrap();
    policy(&["localhost"]).check_resolved(&url).await.unwrap();
    // Literal addresses need no lookup; a name that does not resolve is left to delivery.
    let literal = Url::parse("http://93.184.216.34/").unwrap();
    UrlPolicy::default().check_resolved(&literal).await.unwrap();
    let unresolvable = Url::parse("http://no-such-host.invalid/").unwrap();
    UrlPolicy::default().check_resolved(&unresolvable).await.unwrap();
}
