//! Start-up recovery (`recovery.rs`): tasks a dead process left running are failed,
//! saying why, as an event of their own; the others are left alone.

use crate::support::Node;
use a2ad_actors::recovery::{fail_interrupted_turns, RESTART_MESSAGE};
use a2ad_protocol::{Task, TaskState, TaskStatus};
use a2ad_storage::{Owner, TaskRecord, TaskStoreExt};

fn stored(node: &Node, id: &str, state: TaskState) {
    let record = TaskRecord {
        owner: Owner::anonymous(),
        agent: "chat".into(),
        task: Task {
            id: id.into(),
            context_id: format!("ctx-{id}"),
            status: TaskStatus::now(state, None),
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        },
        last_event_seq: 4,
    };
    node.store.put_task(&record, &[]).unwrap();
}

#[actix::test]
async fn interrupted_turns_fail_with_an_event_and_a_reason_and_nothing_else_changes() {
    let node = Node::start();
    let states = [
        ("submitted", TaskState::Submitted),
        ("working", TaskState::Working),
        ("waiting", TaskState::InputRequired),
        ("done", TaskState::Completed),
    ];
    for (id, state) in states {
        stored(&node, id, state);
    }
    assert_eq!(fail_interrupted_turns(&node.rt).unwrap(), 2);
    for (id, before) in states {
        let record = node.store.get_task(a2ad_storage::Scope::Node, id).unwrap().unwrap();
        let events = node.store.events_after(a2ad_storage::Scope::Node, id, 0, 10).unwrap();
        if before.is_active() {
            assert_eq!((record.state(), record.last_event_seq), (TaskState::Failed, 5), "{id}");
            assert_eq!(record.task.status.message.as_ref().map(|m| m.text()).as_deref(), Some(RESTART_MESSAGE));
            assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [5], "{id}: the failure is an event");
            assert!(events[0].json.contains("TASK_STATE_FAILED"));
        } else {
            assert_eq!((record.state(), record.last_event_seq, events.len()), (before, 4, 0), "{id} is untouched");
        }
    }
    let ended = node.subscribe("ctx-working", "working", None).await.err().expect("a failed task is terminal");
    assert!(ended.message.contains("terminal state"), "{}", ended.message);
    assert_eq!(fail_interrupted_turns(&node.rt).unwrap(), 0, "recovery is idempotent");
}
