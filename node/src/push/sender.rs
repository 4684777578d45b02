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
                Err(refusal) => return SendOutcome::Permanent(refusal.to_string()),
            };
            let mut request = client.post(url).body(delivery.body);
            for (name, value) in delivery.headers {
                request = request.header(name, value);
            }
            match request.send().await {
                Ok(response) => classify(response.status().as_u16(), retry_after(&response)),
                Err(e) => match refusal_of(&e) {
                    Some(refusal) => SendOutcome::Permanent(refusal.to_string()),
                    None if e.is_timeout() => SendOutcome::Retry { reason: "timed out".into(), after: None },
                    None => SendOutcome::Retry { reason: "network error".into(), after: None },
                },
            }
        })
    }
}

/// 2xx acknowledges; 408, 429 and 5xx are retried; any other status is final.
fn classify(status: u16, after: Option<Duration>) -> SendOutcome {
    match status {
        200..=299 => SendOutcome::Delivered,
        408 | 429 | 500..=599 => SendOutcome::Retry { reason: format!("HTTP {status}"), after },
        _ => SendOutcome::Permanent(format!("HTTP {status}")),
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
        assert_eq!(classify(404, None), SendOutcome::Permanent("HTTP 404".into()));
        assert_eq!(classify(301, None), SendOutcome::Permanent("HTTP 301".into()));
    }
}
