//! The node's [`PushSender`]: the guarded HTTP client, with the URL checked again right
//! before every dispatch (a literal IP never reaches the resolver, so the resolver alone
//! would not catch it).

use super::url_guard::{client, refusal_of, UrlPolicy};
use a2ad_actors::push::{Delivery, PushSender, SendOutcome};
use futures_util::future::BoxFuture;
use reqwest::header::RETRY_AFTER;
use std::sync::Arc;
use std::time::Duration;

pub struct HttpSender {
    policy: Arc<UrlPolicy>,
    client: reqwest::Client,
}

impl HttpSender {
    pub fn new(policy: Arc<UrlPolicy>, timeout: Duration) -> Self {
        HttpSender { client: client(Arc::clone(&policy), timeout), policy }
    }
}

impl PushSender for HttpSender {
    fn send(&self, delivery: Delivery) -> BoxFuture<'static, SendOutcome> {
        let checked = self.policy.check_url(&delivery.url);
        let client = self.client.clone();
        Box::pin(async move {
            let url = match checked {
                Ok(url) => url,
                Err(refusal) => return SendOutcome::Permanent { reason: refusal.to_string(), status: None },
            };
            let mut request = client.post(url).body(delivery.body);
            for (name, value) in delivery.headers {
                request = request.header(name, value);
            }
            match request.send().await {
                Ok(response) => classify(response.status().as_u16(), retry_after(&response)),
                Err(e) => match refusal_of(&e) {
                    Some(refusal) => SendOutcome::Permanent { reason: refusal.to_string(), status: None },
                    None if e.is_timeout() => {
                        SendOutcome::Retry { reason: "timed out".into(), after: None, status: None }
                    }
                    None => SendOutcome::Retry { reason: "network error".into(), after: None, status: None },
                },
            }
        })
    }
}

/// 2xx acknowledges; 408, 429 and 5xx are retried; any other status is final.
fn classify(status: u16, after: Option<Duration>) -> SendOutcome {
    match status {
        200..=299 => SendOutcome::Delivered,
        408 | 429 | 500..=599 => SendOutcome::Retry { reason: format!("HTTP {status}"), after, status: Some(status) },
        _ => SendOutcome::Permanent { reason: format!("HTTP {status}"), status: Some(status) },
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare for webhooks and is ignored).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds = response.headers().get(RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok()?;
    Some(Duration::from_secs(seconds.min(3600)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified() {
        assert_eq!(classify(204, None), SendOutcome::Delivered);
        assert!(matches!(classify(503, None), SendOutcome::Retry { .. }));
        assert!(matches!(classify(429, Some(Duration::from_secs(2))), SendOutcome::Retry { after: Some(_), .. }));
        assert!(matches!(classify(408, None), SendOutcome::Retry { .. }));
        let permanent = |code: u16| SendOutcome::Permanent { reason: format!("HTTP {code}"), status: Some(code) };
        assert_eq!(classify(404, None), permanent(404));
        assert_eq!(classify(301, None), permanent(301));
        assert!(matches!(classify(503, None), SendOutcome::Retry { status: Some(503), .. }));
    }
}
