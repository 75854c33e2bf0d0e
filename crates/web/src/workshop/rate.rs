//! A learner's request rate: a token bucket. A page opening fires a handful of requests at
//! once (the burst); a learner clicking fast stays far below the rate; a script hammering the
//! server gets 429s and leaves the room's other labs their share of two cores.

use std::time::{Duration, Instant};

/// How many requests a learner may make: `per_second` sustained, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            per_second: 20.0,
            burst: 60.0,
        }
    }
}

#[derive(Debug)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    pub fn full(limit: RateLimit, now: Instant) -> Self {
        Self {
            tokens: limit.burst,
            at: now,
        }
    }

    /// Takes one request's token; `Err` with how long until the next one when there is none.
    pub fn take(&mut self, limit: RateLimit, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * limit.per_second).min(limit.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - self.tokens) / limit.per_second.max(f64::MIN_POSITIVE);
            Err(Duration::from_secs_f64(wait.min(3600.0)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let limit = RateLimit {
            per_second: 10.0,
            burst: 3.0,
        };
        let t0 = Instant::now();
        let mut b = Bucket::full(limit, t0);
        assert!((0..3).all(|_| b.take(limit, t0).is_ok()));
        let wait = b.take(limit, t0).expect_err("refused");
        assert!(
            wait <= Duration::from_millis(100) && wait > Duration::ZERO,
            "{wait:?}"
        );
        assert!(b.take(limit, t0 + Duration::from_millis(100)).is_ok());
        assert!(b.take(limit, t0 + Duration::from_millis(100)).is_err());
        // Never more than the burst, however long the pause.
        let later = t0 + Duration::from_secs(60);
        assert!((0..3).all(|_| b.take(limit, later).is_ok()));
        assert!(b.take(limit, later).is_err());
    }
}
