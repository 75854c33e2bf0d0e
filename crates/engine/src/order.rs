//! The lab's order events: the values the `produce` action writes.
//!
//! An order event is JSON, `{"order_id":"o-7","amount":42,"status":"created"}`. Amounts are a
//! fixed function of the order number so every run produces the same bytes.

/// The order id for the n-th order of a topic (1-based): `o-1`, `o-2`, ...
pub fn order_id(n: u64) -> String {
    format!("o-{n}")
}

/// A deterministic amount between 5 and 104 for an order id.
pub fn amount_for(order_id: &str) -> u64 {
    let h = order_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    5 + h % 100
}

/// The number of a generated order id (`o-7` → 7).
pub fn order_number(order_id: &str) -> Option<u64> {
    order_id.strip_prefix("o-")?.parse().ok()
}

/// The JSON value of an order event. Written by hand (the fields are fixed and need no escaping
/// beyond the id's) because ten million of them are produced in one action.
pub fn order_event(order_id: &str, status: &str) -> String {
    let id = serde_json::Value::from(order_id).to_string();
    format!(
        r#"{{"order_id":{id},"amount":{},"status":"{status}"}}"#,
        amount_for(order_id)
    )
}

/// The status the k-th event of one order carries (`created` first).
pub fn status_for_event(k: u64) -> &'static str {
    const STATUSES: [&str; 4] = ["created", "paid", "shipped", "delivered"];
    STATUSES[(k as usize).min(STATUSES.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_deterministic_json() {
        let v = order_event("o-7", "created");
        assert_eq!(v, order_event("o-7", "created"));
        let parsed: serde_json::Value = serde_json::from_str(&v).expect("valid json");
        assert_eq!(parsed["order_id"], "o-7");
        assert_eq!(parsed["status"], "created");
        assert!((5..105).contains(&parsed["amount"].as_u64().unwrap_or(0)));
        let odd: serde_json::Value = serde_json::from_str(&order_event("a\"b", "paid")).expect("escaped");
        assert_eq!(odd["order_id"], "a\"b");
        assert_eq!(order_number("o-42"), Some(42));
        assert_eq!(order_number("x-1"), None);
    }
}
