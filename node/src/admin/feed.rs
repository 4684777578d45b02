//! The live feed as the admin API sends it: each [`FeedItem`] one JSON object, the
//! event itself embedded as logged (it is JSON already: not decoded and encoded again).

use a2ad_actors::feed::FeedItem;

/// `{"tenant":…,"principal":…,"taskId":…,"contextId":…,"agent":…,"state":"working","seq":3,"event":{…}}`.
pub fn item_json(item: &FeedItem) -> String {
    let head = serde_json::json!({
        "tenant": item.tenant,
        "principal": item.principal,
        "taskId": item.task_id,
        "contextId": item.context_id,
        "agent": item.agent,
        "state": super::stats::short_state(item.state.as_str()),
        "seq": item.seq,
    });
    let mut text = head.to_string();
    text.pop(); // the closing brace: the raw event goes in before it
    text.push_str(",\"event\":");
    text.push_str(&item.event);
    text.push('}');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2ad_protocol::TaskState;

    #[test]
    fn an_item_is_one_json_object_with_the_event_embedded() {
        let item = FeedItem {
            tenant: "acme".into(),
            principal: "ci".into(),
            task_id: "t\"1".into(),
            context_id: "c".into(),
            agent: "echo".into(),
            state: TaskState::Working,
            seq: 3,
            event: r#"{"statusUpdate":{"taskId":"t\"1"}}"#.into(),
        };
        let value: serde_json::Value = serde_json::from_str(&item_json(&item)).unwrap();
        assert_eq!(value["taskId"], "t\"1");
        assert_eq!(value["state"], "working");
        assert_eq!(value["event"]["statusUpdate"]["taskId"], "t\"1");
    }
}
