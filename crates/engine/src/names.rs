//! What Kafka accepts as a name, in one place: topic names (Kafka's `Topic.validate`), group
//! ids and transactional ids (any non-empty string), and the lab's own consumer names.
//!
//! Topic names are the one kind of name Kafka restricts, because a partition's directory is
//! named `<topic>-<partition>` and must fit a 255-byte file name: at most 249 characters from
//! `[a-zA-Z0-9._-]`, never `.` or `..`. Group ids, transactional ids and client ids are any
//! string a client sends; the lab keeps them exactly (quoted on a scenario line, encoded in a
//! file name) and never folds two of them into one.

use crate::error::LabError;

/// Kafka's longest topic name.
pub const MAX_TOPIC_NAME: usize = 249;

/// Kafka's internal topics: clients read them but cannot create, write or delete them.
pub const INTERNAL_TOPICS: [&str; 2] = [crate::offsets::CONSUMER_OFFSETS_TOPIC, "__transaction_state"];

/// Whether `name` is one of Kafka's internal topics.
pub fn is_internal_topic(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

/// Whether a character may appear in a topic name.
pub fn topic_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Why `name` is not a legal topic name, if it is not (Kafka's `InvalidTopicException`).
pub fn topic_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("the topic name is empty".to_string())
    } else if name == "." || name == ".." {
        Some(format!("the topic name cannot be '{name}'"))
    } else if name.len() > MAX_TOPIC_NAME {
        Some(format!(
            "the topic name is {} characters long, more than Kafka's {MAX_TOPIC_NAME}",
            name.chars().count()
        ))
    } else if !name.chars().all(topic_char) {
        Some("a topic name holds only ASCII letters, digits, '.', '_' and '-'".to_string())
    } else {
        None
    }
}

/// A legal topic name, or [`LabError::InvalidTopic`].
pub fn check_topic_name(name: &str) -> Result<(), LabError> {
    match topic_name_problem(name) {
        None => Ok(()),
        Some(reason) => Err(LabError::InvalidTopic {
            name: name.to_string(),
            reason,
        }),
    }
}

/// Kafka's metric names replace `.` by `_`, so it refuses a topic whose name collides with an
/// existing one that way (`a.b` beside `a_b`).
pub fn collides(a: &str, b: &str) -> bool {
    a != b && a.replace('.', "_") == b.replace('.', "_")
}

/// The longest id (group, transactional, client, member) the lab keeps: what a classic Kafka
/// `STRING` can hold. Flexible request versions could carry longer ones; the lab refuses them
/// rather than copy megabytes into every line and narrative event that names the id.
pub const MAX_ID_BYTES: usize = i16::MAX as usize;

/// A group id: any non-empty string of at most [`MAX_ID_BYTES`] (Kafka's `INVALID_GROUP_ID`
/// otherwise).
pub fn check_group_id(group: &str) -> Result<(), LabError> {
    if group.is_empty() || group.len() > MAX_ID_BYTES {
        return Err(LabError::InvalidGroupId(clipped(group)));
    }
    Ok(())
}

/// A transactional id: any non-empty string of at most [`MAX_ID_BYTES`].
pub fn check_transactional_id(id: &str) -> Result<(), LabError> {
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(LabError::InvalidArgument(format!(
            "a transactional.id is 1 to {MAX_ID_BYTES} bytes long (got {})",
            id.len()
        )));
    }
    Ok(())
}

/// The first 64 characters of a name, for an error message.
pub fn clipped(name: &str) -> String {
    match name.char_indices().nth(64) {
        None => name.to_string(),
        Some((at, _)) => format!("{}…", &name[..at]),
    }
}

/// The lab's own consumers are named like Kafka clients in scripts: 1 to 249 characters from
/// `[a-zA-Z0-9._-]` (they are typed by hand and shown everywhere as `c1#2`).
pub fn check_consumer_name(name: &str) -> Result<(), LabError> {
    if name.is_empty() || name.len() > MAX_TOPIC_NAME || !name.chars().all(topic_char) {
        return Err(LabError::InvalidArgument(format!(
            "invalid consumer name '{name}': use 1 to {MAX_TOPIC_NAME} characters from [a-zA-Z0-9._-]"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_topic_rules() {
        for ok in ["orders", ".hidden", "a.b_c-d", "__my_own", &"x".repeat(249)] {
            assert!(topic_name_problem(ok).is_none(), "{ok}");
        }
        for bad in ["", ".", "..", "a b", "a/b", "é", &"x".repeat(250), "orders:0"] {
            assert!(topic_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn dots_and_underscores_collide() {
        assert!(collides("a.b", "a_b"));
        assert!(collides("a_b", "a.b"));
        assert!(!collides("a.b", "a.b"));
        assert!(!collides("a.b", "a-b"));
        assert!(!collides("ab", "a_b"));
    }

    #[test]
    fn any_group_id_but_the_empty_one() {
        for ok in ["g", "a b", "#", "=", "ü", "x".repeat(1000).as_str()] {
            check_group_id(ok).expect(ok);
        }
        assert!(check_group_id("").is_err());
    }
}
