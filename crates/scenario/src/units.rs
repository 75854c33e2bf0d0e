//! Values of the language: counts, durations (`250ms`, `5s`, `7d`) and timestamps.

use offsetlab_engine::clock::LAB_EPOCH_MS;

/// The longest duration the language accepts: 100 years, so clock arithmetic never overflows.
pub const MAX_DURATION_MS: i64 = 100 * 365 * 86_400_000;

/// A non-negative duration in milliseconds: `250ms`, `5s`, `2m`, `1h`, `7d`, or `1h30m`.
pub fn duration_ms(s: &str) -> Result<i64, String> {
    if s.starts_with('-') {
        return Err("durations cannot be negative".into());
    }
    if s.chars().all(|c| c.is_ascii_digit()) && !s.is_empty() {
        return Err(format!("'{s}' needs a unit (ms, s, m, h, d), e.g. {s}ms or {s}s"));
    }
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("not a duration ({e}); write e.g. 250ms, 5s, 7d"))?;
    i64::try_from(d.as_millis())
        .ok()
        .filter(|&ms| ms <= MAX_DURATION_MS)
        .ok_or_else(|| "durations are limited to 100 years".to_string())
}

/// A count: a non-negative integer that fits `max`.
pub fn count(s: &str, max: u64) -> Result<u64, String> {
    if s.starts_with('-') {
        return Err("must not be negative".into());
    }
    let n: u64 = s.parse().map_err(|_| format!("'{s}' is not a whole number"))?;
    if n > max {
        return Err(format!("at most {max}"));
    }
    Ok(n)
}

/// A signed integer (offsets, shifts).
pub fn integer(s: &str) -> Result<i64, String> {
    s.parse().map_err(|_| format!("'{s}' is not an integer"))
}

/// An instant (epoch milliseconds) as an RFC 3339 datetime in UTC, with milliseconds when it
/// has any: what [`instant_ms`] reads back.
pub fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    if ms % 1000 == 0 {
        humantime::format_rfc3339_seconds(t).to_string()
    } else {
        humantime::format_rfc3339_millis(t).to_string()
    }
}

/// An instant in epoch milliseconds: an RFC 3339 datetime (`2026-01-01T06:00:00Z`; without a
/// zone it is UTC, as `kafka-consumer-groups.sh` reads it), or a duration after the lab's start
/// (`5s` is `t=5s`).
pub fn instant_ms(s: &str) -> Result<i64, String> {
    if s.contains('T') || s.contains(':') {
        let tail: String = s.chars().rev().take(6).collect();
        let has_zone = s.ends_with('Z') || (s.chars().count() > 19 && tail.contains(['+', '-']));
        let zoned = if has_zone { s.to_string() } else { format!("{s}Z") };
        let t = humantime::parse_rfc3339_weak(&zoned)
            .map_err(|e| format!("not a datetime ({e}); write e.g. 2026-01-01T06:00:00Z"))?;
        let ms = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| "datetimes before 1970 are not supported".to_string())?
            .as_millis();
        return i64::try_from(ms).map_err(|_| "datetime too far away".to_string());
    }
    Ok(LAB_EPOCH_MS + duration_ms(s)?)
}

#[cfg(test)]
mod limits {
    use super::*;

    #[test]
    fn odd_input_is_an_error_not_a_panic() {
        assert!(instant_ms("T€xxxx").is_err());
        assert!(instant_ms("2026-01-01T00:00:00€").is_err());
        assert!(duration_ms("106751991167d").is_err());
        assert!(duration_ms("101y").is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration_ms("250ms"), Ok(250));
        assert_eq!(duration_ms("5s"), Ok(5_000));
        assert_eq!(duration_ms("7d"), Ok(604_800_000));
        assert_eq!(duration_ms("1h30m"), Ok(5_400_000));
        assert!(duration_ms("-5s").is_err());
        assert!(duration_ms("5").is_err());
        assert!(duration_ms("soon").is_err());
    }

    #[test]
    fn instants() {
        assert_eq!(instant_ms("2026-01-01T00:00:05Z"), Ok(LAB_EPOCH_MS + 5_000));
        assert_eq!(
            instant_ms("2026-01-01T06:00:00"),
            Ok(LAB_EPOCH_MS + 6 * 3_600_000)
        );
        assert_eq!(
            instant_ms("2026-01-01T06:00:00.250"),
            Ok(LAB_EPOCH_MS + 6 * 3_600_000 + 250)
        );
        assert_eq!(instant_ms("5s"), Ok(LAB_EPOCH_MS + 5_000));
        assert!(instant_ms("2026-13-01T00:00:00").is_err());
    }

    #[test]
    fn counts_reject_negatives() {
        assert_eq!(count("12", 100), Ok(12));
        assert!(count("-1", 100).is_err());
        assert!(count("1000", 100).is_err());
        assert!(count("x", 100).is_err());
    }
}
