use super::*;
use offsetlab_wire::kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use offsetlab_wire::kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use offsetlab_wire::kafka_protocol::messages::GroupId;

fn join_request(member: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(str_bytes("g")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(str_bytes(member))
        .with_protocol_type(str_bytes("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(str_bytes("range"))
            .with_metadata(Bytes::from_static(b"sub"))])
}

fn now_answer(j: Join) -> JoinGroupResponse {
    match j {
        Join::Now(r) => r,
        Join::Wait(mut rx, _) => rx.try_recv().expect("answered"),
    }
}

/// KIP-394's two-step join, a generation, the leader's assignment, a member leaving.
#[test]
fn a_member_joins_syncs_heartbeats_and_leaves() {
    let c = Coordinator::default();
    let first = now_answer(c.join(&join_request(""), 5, "rdkafka", "/127.0.0.1", 0));
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let id = first.member_id.to_string();
    assert_eq!(id, "rdkafka-1");
    let joined = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/127.0.0.1", 0));
    assert_eq!(
        (joined.error_code, joined.generation_id, joined.leader.as_str()),
        (0, 1, "rdkafka-1")
    );
    assert_eq!(joined.members.len(), 1, "the leader learns the subscriptions");
    let heartbeat = |generation| {
        c.heartbeat(
            &HeartbeatRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_member_id(str_bytes(&id))
                .with_generation_id(generation),
        )
    };
    assert_eq!(
        heartbeat(1),
        0,
        "waiting for the leader's assignment is no reason to rejoin"
    );
    assert_eq!(c.check_commit("g", &id, 1), Err(REBALANCE_IN_PROGRESS));
    let assignment = consumer_protocol::assignment([("orders", vec![0, 1])]);
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(str_bytes("g")))
        .with_generation_id(1)
        .with_member_id(str_bytes(&id))
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(str_bytes(&id))
            .with_assignment(assignment)]);
    let Sync::Now(settled) = c.sync(&sync) else {
        panic!("the leader is answered at once")
    };
    assert_eq!(settled.answer.error_code, 0);
    assert_eq!(
        settled
            .commands
            .iter()
            .map(Command::to_string)
            .collect::<Vec<_>>(),
        vec![
            r#"rebalance g generation=1 protocol=range members=[{"id":"rdkafka-1","client":"rdkafka","host":"/127.0.0.1","partitions":{"orders":[0,1]},"session_timeout_ms":10000,"rebalance_timeout_ms":30000}]"#
        ]
    );
    assert_eq!(heartbeat(1), 0);
    assert_eq!(heartbeat(0), ILLEGAL_GENERATION);
    assert_eq!(c.check_commit("g", &id, 1), Ok(()));
    assert_eq!(c.check_commit("g", "ghost", 1), Err(UNKNOWN_MEMBER_ID));

    // A second member joins: a rebalance; the first learns it from its heartbeat.
    let second = now_answer(c.join(&join_request(""), 5, "kafka-python", "/127.0.0.1", 0));
    let Join::Wait(_, _) = c.join(
        &join_request(&second.member_id.to_string()),
        5,
        "kafka-python",
        "/127.0.0.1",
        0,
    ) else {
        panic!("waits for the first member to rejoin")
    };
    assert_eq!(heartbeat(1), REBALANCE_IN_PROGRESS);
    // The first member leaves instead: the second one's join completes, generation 2.
    let left = c.leave(
        &LeaveGroupRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(str_bytes(&id)),
    );
    assert_eq!(left.answer, vec![(id.clone(), 0)]);
    let groups = c.lock();
    let g = groups.get("g").expect("group");
    assert_eq!(
        (g.generation, g.state, g.members.len()),
        (2, GroupState::CompletingRebalance, 1)
    );
}

#[test]
fn a_silent_member_times_out_and_the_group_empties() {
    let c = Coordinator::default();
    let id = now_answer(c.join(&join_request(""), 5, "rdkafka", "/h", 0))
        .member_id
        .to_string();
    let _ = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
    // The leader never syncs, never heartbeats: after its session, it is gone.
    let settled = c.tick(Instant::now() + Duration::from_secs(11), &TopicsById::new());
    assert_eq!(
        settled.iter().map(Command::to_string).collect::<Vec<_>>(),
        vec!["rebalance g generation=2 protocol=range members=[]"]
    );
    assert!(!c.has_members("g"));
}

/// A line the lab did not take (a full disk): an empty group's is offered again until it is
/// taken; a group with members rebalances, so its next generation reaches the lab whole.
#[test]
fn what_the_lab_did_not_take_is_settled_again() {
    let c = Coordinator::default();
    let id = now_answer(c.join(&join_request(""), 5, "rdkafka", "/h", 0))
        .member_id
        .to_string();
    let _ = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
    let later = Instant::now() + Duration::from_secs(11);
    let emptied = c.tick(later, &TopicsById::new());
    assert_eq!(emptied.len(), 1);
    c.unsettled(&emptied, later);
    let again = c.tick(later, &TopicsById::new());
    assert_eq!(
        again.iter().map(Command::to_string).collect::<Vec<_>>(),
        vec!["rebalance g generation=2 protocol=range members=[]"],
        "offered again, as it was"
    );
    assert!(
        c.tick(later, &TopicsById::new()).is_empty(),
        "once taken, not again"
    );

    // A group the lab knows from an earlier run: its line is kept until the lab takes it.
    let before = empty_group("old", 7, "consumer", "range");
    c.unsettled(std::slice::from_ref(&before), later);
    assert_eq!(c.tick(later, &TopicsById::new()), vec![before]);

    // Members: the lab missed their generation, so they all join again.
    let id = now_answer(c.join(&join_request(""), 5, "rdkafka", "/h", 0))
        .member_id
        .to_string();
    let joined = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
    assert_eq!(joined.generation_id, 3);
    let missed = Command::Rebalance(Rebalance {
        group: "g".into(),
        generation: 3,
        protocol_type: "consumer".into(),
        protocol: "range".into(),
        members: Vec::new(),
    });
    c.unsettled(&[missed], Instant::now());
    let heartbeat = c.heartbeat(
        &HeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(str_bytes(&id))
            .with_generation_id(3),
    );
    assert_eq!(heartbeat, REBALANCE_IN_PROGRESS);
    let rejoined = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
    assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 4));
}

/// KIP-345: a static member's new process (no member id, the same `group.instance.id`) takes
/// the old member's place in a Stable group — a new member id, the same generation and
/// assignment, no rebalance — and its SyncGroup tells the lab the new id at that generation.
#[test]
fn a_static_members_new_process_takes_its_place_without_a_rebalance() {
    let c = Coordinator::default();
    let static_join = |member: &str| join_request(member).with_group_instance_id(Some(str_bytes("i-1")));
    // A new static member is given its id with its first join: no MEMBER_ID_REQUIRED round
    // (Kafka's classicGroupJoinNewStaticMember; the conformance conversation asks both).
    let joined = now_answer(c.join(&static_join(""), 9, "rdkafka", "/127.0.0.1", 0));
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    let id = joined.member_id.to_string();
    assert!(id.starts_with("i-1-"), "named for its instance id: {id}");
    let assignment = consumer_protocol::assignment([("orders", vec![0, 1])]);
    let sync = |member: &str, plan: Vec<SyncGroupRequestAssignment>| {
        SyncGroupRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_generation_id(1)
            .with_member_id(str_bytes(member))
            .with_assignments(plan)
    };
    let plan = vec![SyncGroupRequestAssignment::default()
        .with_member_id(str_bytes(&id))
        .with_assignment(assignment.clone())];
    let Sync::Now(_) = c.sync(&sync(&id, plan)) else {
        panic!("the leader is answered at once")
    };
    // The process crashes; a new one joins with the same instance id.
    let back = now_answer(c.join(&static_join(""), 9, "rdkafka", "/127.0.0.1", 0));
    assert_eq!(
        back.error_code, 0,
        "answered at once, no MEMBER_ID_REQUIRED round"
    );
    assert_eq!(back.generation_id, 1, "the same generation: no rebalance");
    let new_id = back.member_id.to_string();
    assert_ne!(new_id, id);
    assert_eq!(
        back.leader.as_str(),
        new_id,
        "it was the leader: its new process is"
    );
    assert!(back.skip_assignment, "the leader's assignment stands (v9)");
    let Sync::Now(settled) = c.sync(&sync(&new_id, Vec::new())) else {
        panic!("a Stable group answers at once")
    };
    assert_eq!(settled.answer.assignment, assignment);
    let lines: Vec<String> = settled.commands.iter().map(Command::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("generation=1") && lines[0].contains(&new_id),
        "{lines:?}"
    );
    assert_eq!(c.check_commit("g", &new_id, 1), Ok(()));
    assert_eq!(
        c.check_commit("g", &id, 1),
        Err(UNKNOWN_MEMBER_ID),
        "the old process is gone"
    );
    // A second SyncGroup changes nothing more for the lab.
    let Sync::Now(again) = c.sync(&sync(&new_id, Vec::new())) else {
        panic!("Stable")
    };
    assert!(again.commands.is_empty());
}

/// A static member's new process joining while a rebalance is on (no simple replacement then):
/// the old member is fenced and removed, the new one takes part in the rebalance — never two
/// members with one `group.instance.id` (Kafka replaces a static member in every state).
#[test]
fn a_static_members_new_process_fences_the_old_one_during_a_rebalance() {
    let c = Coordinator::default();
    let static_join = |member: &str| join_request(member).with_group_instance_id(Some(str_bytes("i-1")));
    let first = now_answer(c.join(&static_join(""), 9, "rdkafka", "/127.0.0.1", 0));
    let old = first.member_id.to_string();
    // A second member: the group rebalances and waits for the static member to rejoin.
    let id = now_answer(c.join(&join_request(""), 9, "java", "/127.0.0.1", 0))
        .member_id
        .to_string();
    let Join::Wait(..) = c.join(&join_request(&id), 9, "java", "/127.0.0.1", 0) else {
        panic!("the rebalance waits for the static member");
    };
    assert_eq!(c.lock()["g"].state, GroupState::PreparingRebalance);
    // The static member's process restarts and joins again, with no member id.
    let again = c.join(&static_join(""), 9, "rdkafka", "/127.0.0.1", 0);
    let groups = c.lock();
    let g = &groups["g"];
    let with_instance: Vec<&String> = g
        .members
        .iter()
        .filter(|(_, m)| m.instance_id.as_deref() == Some("i-1"))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(with_instance.len(), 1, "{:?}", g.members.keys());
    assert_ne!(with_instance[0], &old, "the old member was fenced");
    assert_eq!(g.members.len(), 2);
    drop(groups);
    // Both members have joined now: the rebalance completes.
    let joined = now_answer(again);
    assert_eq!((joined.error_code, joined.generation_id), (0, 2));
}

mod modern_groups {
    use super::*;
    use offsetlab_wire::kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, TopicName};

    fn topics() -> TopicsById {
        [("orders".to_string(), ([1; 16], 2))].into_iter().collect()
    }

    fn beat(member: &str, epoch: i32) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(str_bytes(member))
            .with_member_epoch(epoch)
            .with_rebalance_timeout_ms(if epoch == 0 { 30_000 } else { -1 })
            .with_subscribed_topic_names((epoch == 0).then(|| vec![TopicName(str_bytes("orders"))]))
            .with_topic_partitions((epoch == 0).then(Vec::new))
    }

    fn heartbeat(c: &Coordinator, r: &ConsumerGroupHeartbeatRequest, lab_epoch: Option<i32>) -> Heartbeat {
        c.consumer_heartbeat(r, 1, "rdkafka", "/127.0.0.1", &topics(), lab_epoch, false)
    }

    #[test]
    fn a_heartbeat_for_a_group_nobody_joined_creates_nothing() {
        let c = Coordinator::default();
        let h = heartbeat(&c, &beat("m", 3), None);
        assert_eq!(h.answer.error_code, UNKNOWN_MEMBER_ID);
        assert!(
            lock(&c.modern).is_empty(),
            "no group made by a heartbeat that is no join"
        );
    }

    #[test]
    fn an_empty_group_goes_on_from_the_labs_epoch_never_back() {
        let c = Coordinator::default();
        let joined = heartbeat(&c, &beat("m", 0), None);
        assert_eq!(joined.answer.member_epoch, 2);
        heartbeat(&c, &beat("m", -1), None);
        // Meanwhile the lab's own consumers moved the group to epoch 9: the next join makes it
        // 10 (its member at 9, the last target's, until the assignment interval has passed).
        let again = heartbeat(&c, &beat("n", 0), Some(9));
        assert_eq!(again.answer.member_epoch, 9, "{:?}", again.answer);
        let Some(Command::ConsumerGroupState(state)) = again.commands.last() else {
            panic!("{:?}", again.commands);
        };
        assert_eq!(state.epoch, 10);
    }

    #[test]
    fn a_classic_join_and_a_consumer_protocol_join_never_share_a_group() {
        let c = Coordinator::default();
        assert_eq!(heartbeat(&c, &beat("m", 0), None).answer.error_code, 0);
        let classic = now_answer(c.join(&join_request("x"), 5, "java", "/127.0.0.1", 0));
        assert_eq!(classic.error_code, INCONSISTENT_GROUP_PROTOCOL);
        heartbeat(&c, &beat("m", -1), None);
        // Empty now: the classic member takes the group over, and then a heartbeat is refused.
        let first = now_answer(c.join(&join_request(""), 5, "java", "/127.0.0.1", 0));
        let id = first.member_id.to_string();
        assert_eq!(
            now_answer(c.join(&join_request(&id), 5, "java", "/127.0.0.1", 0)).error_code,
            0
        );
        assert_eq!(
            heartbeat(&c, &beat("n", 0), None).answer.error_code,
            GROUP_ID_NOT_FOUND
        );
    }

    #[test]
    fn a_fenced_member_rejoining_with_its_id_moves_the_epoch_once() {
        let c = Coordinator::default();
        heartbeat(&c, &beat("m", 0), None);
        let before = lock(&c.modern)["g"].model.group_epoch;
        heartbeat(&c, &beat("m", 0), None);
        assert_eq!(lock(&c.modern)["g"].model.group_epoch, before + 1);
    }

    /// OffsetFetch v9 as Kafka 4.4 checks it (the conformance conversation `consumer-group`
    /// asks both): the member's own epoch answers; any other, or an unknown member, is refused;
    /// an admin's fetch (no member id, epoch −1) and a fetch of a group the coordinator does not
    /// run under this protocol are answered.
    #[test]
    fn an_offset_fetch_is_checked_against_the_members_epoch() {
        let c = Coordinator::default();
        let epoch = heartbeat(&c, &beat("m", 0), None).answer.member_epoch;
        assert_eq!(c.check_fetch("g", Some("m"), epoch), Ok(()));
        assert_eq!(c.check_fetch("g", Some("m"), epoch - 1), Err(STALE_MEMBER_EPOCH));
        assert_eq!(c.check_fetch("g", Some("m"), epoch + 1), Err(STALE_MEMBER_EPOCH));
        assert_eq!(c.check_fetch("g", Some("nobody"), epoch), Err(UNKNOWN_MEMBER_ID));
        assert_eq!(c.check_fetch("g", None, 1), Err(UNKNOWN_MEMBER_ID));
        assert_eq!(c.check_fetch("g", None, -1), Ok(()), "an admin's");
        assert_eq!(
            c.check_fetch("classic", Some("x"), 4),
            Ok(()),
            "not a consumer-protocol group"
        );
    }
}
