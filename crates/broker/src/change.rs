//! How the listener changes the lab: commands built as values from a request, applied as one
//! all-or-nothing batch (or one by one, when Kafka answers each item on its own), and the lab
//! saved before anything is acknowledged. Nothing a client sends is ever formatted into a line
//! to be parsed again, and a refusal comes back as the engine's typed error, so the Kafka error
//! code is chosen by its kind ([`code`]) — never by matching a message.

use crate::coordinator::Coordinator;
use offsetlab_engine::LabError;
use offsetlab_lab::session::{ActionError, Change, Session};
use offsetlab_lab::LabHandle;
use offsetlab_lab::SessionGuard;
use offsetlab_scenario::command::Command;
use offsetlab_wire::error::*;

/// Why a change the listener asked for did not take effect.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// The lab refused it: nothing happened.
    Refused(LabError),
    /// It applied, but the lab could not be saved (or its storage failed while applying it):
    /// not acknowledged.
    Storage(String),
}

impl Failure {
    /// The Kafka error code a client gets for it.
    pub(crate) fn code(&self) -> i16 {
        match self {
            Failure::Refused(e) => code(e),
            Failure::Storage(_) => KAFKA_STORAGE_ERROR,
        }
    }

    pub(crate) fn message(&self) -> String {
        match self {
            Failure::Refused(e) => e.to_string(),
            Failure::Storage(e) => format!("the lab could not store this: {e}"),
        }
    }
}

impl From<ActionError> for Failure {
    fn from(e: ActionError) -> Self {
        match e.cause.map(|c| *c) {
            Some(LabError::Storage(s)) => Failure::Storage(s.to_string()),
            Some(cause) => Failure::Refused(cause),
            // Only the session itself fails without an engine reason (a line that could not be
            // undone, a generation that could not be written): storage.
            None => Failure::Storage(e.error),
        }
    }
}

/// The Kafka error code for an engine refusal, by its kind. Refusals with no error of their own
/// in Kafka (the lab's own rules) are `POLICY_VIOLATION` where a policy is what refused them,
/// else `UNKNOWN_SERVER_ERROR`; callers with a more precise code for their request use it.
pub(crate) fn code(e: &LabError) -> i16 {
    match e {
        LabError::UnknownTopic(_) | LabError::UnknownPartition { .. } => UNKNOWN_TOPIC_OR_PARTITION,
        LabError::InvalidTopic { .. } => INVALID_TOPIC_EXCEPTION,
        LabError::InvalidGroupId(_) => INVALID_GROUP_ID,
        LabError::TopicExists(_) => TOPIC_ALREADY_EXISTS,
        LabError::GroupNotEmpty { .. } | LabError::ShareGroupNotEmpty { .. } => NON_EMPTY_GROUP,
        LabError::NotAShareGroup(_) | LabError::UnknownGroup(_) => GROUP_ID_NOT_FOUND,
        LabError::GroupSubscribedToTopic { .. } => GROUP_SUBSCRIBED_TO_TOPIC,
        LabError::GroupActive { .. } | LabError::UnknownMember { .. } => UNKNOWN_MEMBER_ID,
        LabError::IllegalGeneration { .. } => ILLEGAL_GENERATION,
        LabError::StaleMemberEpoch { .. } => STALE_MEMBER_EPOCH,
        LabError::RebalanceInProgress { .. } => REBALANCE_IN_PROGRESS,
        LabError::InvalidPartitions(_) => INVALID_PARTITIONS,
        LabError::MessageTooLarge { .. } => MESSAGE_TOO_LARGE,
        LabError::Storage(_) => KAFKA_STORAGE_ERROR,
        LabError::InvalidRecordState(_) => INVALID_RECORD_STATE,
        _ => UNKNOWN_SERVER_ERROR,
    }
}

/// Saves the lab after a change: at once, or — under `--flush always` — after the fsync,
/// waited for with the session's lock released. `Ok` only once the change is durable.
pub(crate) fn save(lab: &LabHandle, mut s: SessionGuard<'_>) -> Result<(), Failure> {
    match lab.changed(&mut s) {
        Ok(Some(pending)) => {
            drop(s);
            pending.complete().map_err(|e| Failure::Storage(e.to_string()))
        }
        Ok(None) => Ok(()),
        Err(e) => Err(Failure::Storage(e.to_string())),
    }
}

/// A live clock brought to wall time before a change ([`Session::catch_up_if_stale`]) — unless
/// the handler locked with [`LabHandle::lock_for_change`] and planned the change at that
/// instant: a client's record is stamped, a commit timed and a member's session started at the
/// instant they happen. One that cannot (a broken session) is left behind; the change that
/// follows is refused for it.
fn live_clock(s: &mut Session) {
    let _ = s.catch_up_if_stale(offsetlab_lab::session::wall_clock_ms());
}

/// Applies `changes` as one batch, all or none, and saves the lab.
pub(crate) fn apply(lab: &LabHandle, mut s: SessionGuard<'_>, changes: Vec<Change>) -> Result<(), Failure> {
    if changes.is_empty() {
        return Ok(());
    }
    live_clock(&mut s);
    s.apply_changes(changes)?;
    save(lab, s)
}

/// [`apply`] for commands.
pub(crate) fn apply_commands(
    lab: &LabHandle,
    s: SessionGuard<'_>,
    commands: Vec<Command>,
) -> Result<(), Failure> {
    apply(lab, s, commands.into_iter().map(Change::Command).collect())
}

/// A refusal decided before anything is applied: Kafka's error code and its message.
pub(crate) type Refusal = (i16, String);

/// An admin request's items, each a command to apply by itself (`None`: nothing to change, a
/// success) or the refusal already decided: applied one by one ([`apply_each`]) — or with
/// `validate_only`, only checked — and answered item by item, as Kafka answers a request that
/// names several topics.
pub(crate) fn apply_planned(
    lab: &LabHandle,
    s: SessionGuard<'_>,
    planned: Vec<Result<Option<Command>, Refusal>>,
    validate_only: bool,
) -> Vec<Result<(), Refusal>> {
    if validate_only {
        drop(s);
        return planned.into_iter().map(|p| p.map(|_| ())).collect();
    }
    let commands: Vec<Command> = planned
        .iter()
        .filter_map(|p| p.as_ref().ok().cloned().flatten())
        .collect();
    let mut applied = apply_each(lab, s, commands).into_iter();
    planned
        .into_iter()
        .map(|p| {
            p.and_then(|command| match command.map(|_| applied.next()) {
                None => Ok(()),
                Some(applied) => match applied {
                    Some(Ok(())) => Ok(()),
                    Some(Err(failure)) => Err((failure.code(), failure.message())),
                    None => Err((UNKNOWN_SERVER_ERROR, "not applied".to_string())),
                },
            })
        })
        .collect()
}

/// Applies each command by itself — one topic's or group's refusal is not another's — then
/// saves the lab once; each command's outcome.
///
/// A storage failure takes the lab back to its last save, which undoes the commands before it
/// that were not saved yet (a DeleteRecords saves what came before it): those are answered with
/// that failure too, never acknowledged for a change the lab no longer has.
pub(crate) fn apply_each(
    lab: &LabHandle,
    mut s: SessionGuard<'_>,
    commands: Vec<Command>,
) -> Vec<Result<(), Failure>> {
    live_clock(&mut s);
    // Each result, and for an applied command the history length that includes it.
    let mut results: Vec<(Result<(), Failure>, usize)> = Vec::with_capacity(commands.len());
    for c in commands {
        let result = s
            .apply_changes(vec![Change::Command(c)])
            .map(|_| ())
            .map_err(Failure::from);
        if let Err(failure @ Failure::Storage(_)) = &result {
            let kept = s.history_len();
            for (r, through) in &mut results {
                if r.is_ok() && *through > kept {
                    *r = Err(failure.clone());
                }
            }
        }
        results.push((result, s.history_len()));
    }
    let mut results: Vec<Result<(), Failure>> = results.into_iter().map(|(r, _)| r).collect();
    if results.iter().any(Result::is_ok) {
        if let Err(failure) = save(lab, s) {
            for r in &mut results {
                if r.is_ok() {
                    *r = Err(failure.clone());
                }
            }
        }
    }
    results
}

/// Applies what the group coordinator settled, in order (the caller holds its settle lock).
/// When the lab does not take it, the coordinator is told ([`Coordinator::unsettled`]) so the
/// two converge again. A refusal is printed: the coordinator and the lab disagree, which the
/// lab's own checks exist to catch.
pub(crate) fn settle(
    lab: &LabHandle,
    coordinator: &Coordinator,
    commands: Vec<Command>,
) -> Result<(), Failure> {
    if commands.is_empty() {
        return Ok(());
    }
    let settled = commands.clone();
    let shown: Vec<String> = commands
        .iter()
        .map(|c| offsetlab_scenario::error::truncated(&c.to_string(), 200))
        .collect();
    let s = lab.lock();
    let result = apply_commands(lab, s, commands);
    if let Err(e) = &result {
        coordinator.unsettled(&settled, std::time::Instant::now());
        tracing::warn!(
            commands = ?shown,
            "the lab refused what the group coordinator settled: {}",
            e.message()
        );
    }
    result
}
