//! ListTransactions (`kafka-transactions.sh list`, KIP-664, KIP-994, KIP-1152): real clients'
//! transactional ids with their producer id and state, filtered by state, producer id, how long
//! the open transaction has run (v1), and a pattern of the id (v2: a regular expression; the
//! lab reads literals, `.`, `*`, `+` and `?` — another construct is INVALID_REQUEST).

use crate::broker::Broker;
use crate::handlers::describe_transactions::{started_at, state_name};
use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::list_transactions_response::TransactionState;
use offsetlab_wire::kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};

/// Kafka's transaction states.
const STATES: &[&str] = &[
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

/// One atom of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atom {
    Any,
    Char(char),
}

/// The pattern's atoms with their repetition — (atom, at least, unbounded: else at most once)
/// — or `None` for a construct the lab does not read.
fn compile(pattern: &str) -> Option<Vec<(Atom, usize, bool)>> {
    let mut out: Vec<(Atom, usize, bool)> = Vec::new();
    for c in pattern.chars() {
        match c {
            '*' | '+' | '?' => {
                let last = out.last_mut()?;
                *last = match c {
                    '*' => (last.0, 0, true),
                    '+' => (last.0, 1, true),
                    _ => (last.0, 0, false),
                };
            }
            '.' => out.push((Atom::Any, 1, false)),
            '[' | ']' | '(' | ')' | '{' | '}' | '|' | '\\' | '^' | '$' => return None,
            c => out.push((Atom::Char(c), 1, false)),
        }
    }
    Some(out)
}

/// Whether `text` matches the whole pattern (Java's `Matcher.matches`).
fn matches(p: &[(Atom, usize, bool)], text: &[char]) -> bool {
    let Some(&(atom, min, unbounded)) = p.first() else {
        return text.is_empty();
    };
    let fits = |c: &char| atom == Atom::Any || atom == Atom::Char(*c);
    let at_most = if unbounded { usize::MAX } else { 1 };
    let run = text.iter().take(at_most).take_while(|c| fits(c)).count();
    run >= min && (min..=run).rev().any(|n| matches(&p[1..], &text[n..]))
}

pub(crate) fn handle(broker: &Broker, r: &ListTransactionsRequest, version: i16) -> ListTransactionsResponse {
    let pattern = match (version >= 2)
        .then_some(r.transactional_id_pattern.as_ref())
        .flatten()
    {
        None => None,
        Some(p) if p.is_empty() => None,
        Some(p) => match compile(p.as_str()) {
            Some(c) => Some(c),
            None => {
                return ListTransactionsResponse::default()
                    .with_error_code(INVALID_REQUEST)
                    .with_unknown_state_filters(Vec::new());
            }
        },
    };
    let s = broker.lab.lock();
    let now = s.lab().now();
    let outcomes = offsetlab_lab::lock(&broker.txn_outcomes).clone();
    let added = offsetlab_lab::lock(&broker.txn_added).clone();
    let unknown: Vec<_> = r
        .state_filters
        .iter()
        .filter(|f| !STATES.contains(&f.as_str()))
        .cloned()
        .collect();
    let states = s
        .lab()
        .producers()
        .values()
        .filter(|p| p.external)
        .filter_map(|p| {
            let last = outcomes.get(&p.transactional_id).copied();
            let state = state_name(p, last, added.get(&p.transactional_id).is_some_and(|a| !a.is_empty()));
            let start = started_at(p, last);
            let wanted = (r.state_filters.is_empty() || r.state_filters.iter().any(|f| f.as_str() == state))
                && (r.producer_id_filters.is_empty() || r.producer_id_filters.iter().any(|id| id.0 == p.producer_id))
                // Started longer ago than the filter says (the current or last transaction; one
                // with none, −1, is older than any, as in Kafka).
                && (version < 1 || r.duration_filter < 0 || now - start >= r.duration_filter)
                && pattern
                    .as_ref()
                    .is_none_or(|c| matches(c, &p.transactional_id.chars().collect::<Vec<_>>()));
            wanted.then(|| {
                TransactionState::default()
                    .with_transactional_id(TransactionalId(str_bytes(&p.transactional_id)))
                    .with_producer_id(ProducerId(p.producer_id))
                    .with_transaction_state(str_bytes(state))
            })
        })
        .collect();
    ListTransactionsResponse::default()
        .with_error_code(NONE)
        .with_unknown_state_filters(unknown)
        .with_transaction_states(states)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        matches(
            &compile(pattern).expect("compiles"),
            &text.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn patterns_match_whole_ids() {
        assert!(m("tx-.*", "tx-1"));
        assert!(!m("tx-.*", "my-tx-1"));
        assert!(m("tx-.+", "tx-1") && !m("tx-.+", "tx-"));
        assert!(m("a?b", "b") && m("a?b", "ab") && !m("a?b", "aab"));
        assert!(m("exact", "exact") && !m("exact", "exactly"));
        assert!(compile("(a|b)").is_none());
    }
}
