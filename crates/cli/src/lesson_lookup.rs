//! Which lesson a person means: `offsetlab lessons QUERY` and `offsetlab run --lesson QUERY`
//! both take a number, a file name or words of a title. The lookup is its own module because
//! both commands need it and neither owns it: each imports it, and `run` no longer reaches into
//! `lessons` (which runs its lesson through `run`).

use offsetlab_scenario::lessons::{find, Lesson, LESSONS};
use std::fmt;

/// Why a lesson reference found no single lesson.
pub enum LookupError {
    /// Nothing fits.
    NoMatch(String),
    /// Several lessons fit the words given.
    Ambiguous {
        query: String,
        candidates: Vec<&'static Lesson>,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoMatch(q) => write!(
                f,
                "no lesson matches '{q}': `offsetlab lessons` lists them (give a number, a file name or a word of a title)"
            ),
            Self::Ambiguous { query, candidates } => {
                write!(
                    f,
                    "'{query}' fits {} lessons; give its number, or more words:",
                    candidates.len()
                )?;
                for l in candidates {
                    write!(f, "\n  {:>2}  {}", l.number(), l.title())?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for LookupError {}

/// The lesson `query` names: a number (`3`, `03`), a file stem (`03-upsert-converges`, with or
/// without `lessons/` and `.scn`), or words that all appear in one lesson's title or file name
/// (`upsert`, `exactly once`) — whole words first, then the beginnings of words (3 letters or
/// more: `misconcep`).
pub fn resolve(query: &str) -> Result<&'static Lesson, LookupError> {
    let query = query.trim();
    let stem = query.rsplit('/').next().unwrap_or(query);
    if let Some(l) = find(stem) {
        return Ok(l);
    }
    let wanted = words(query);
    let no_match = || LookupError::NoMatch(query.to_string());
    if wanted.is_empty() {
        return Err(no_match());
    }
    let fitting = |fits: &dyn Fn(&str, &str) -> bool| -> Vec<&'static Lesson> {
        LESSONS
            .iter()
            .filter(|l| {
                let own = vocabulary(l);
                wanted.iter().all(|w| own.iter().any(|o| fits(o, w)))
            })
            .collect()
    };
    let mut hits = fitting(&|own, w| own == w);
    if hits.is_empty() {
        hits = fitting(&|own, w| w.len() >= 3 && own.starts_with(w));
    }
    match hits.len() {
        0 => Err(no_match()),
        1 => Ok(hits[0]),
        _ => Err(LookupError::Ambiguous {
            query: query.to_string(),
            candidates: hits,
        }),
    }
}

/// Lower-case words (letters and digits) of `text`.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The words a lesson is found by: its title's and its file name's.
fn vocabulary(l: &Lesson) -> Vec<String> {
    let mut v = words(&l.title());
    v.extend(words(l.file));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(query: &str) -> Option<u32> {
        resolve(query).ok().map(Lesson::number)
    }

    #[test]
    fn a_lesson_is_found_by_number_name_or_word() {
        for q in [
            "3",
            "03",
            "03-upsert-converges",
            "lessons/03-upsert-converges.scn",
            "upsert",
            "UPSERT",
            "upsert converges",
            "upser",
        ] {
            assert_eq!(number(q), Some(3), "{q}");
        }
        assert_eq!(number("exactly once"), Some(9));
    }

    #[test]
    fn a_word_of_several_lessons_lists_them_and_no_match_says_how_to_list() {
        match resolve("crash") {
            Err(LookupError::Ambiguous { candidates, .. }) => {
                assert!(candidates.len() > 1, "{}", candidates.len());
                let text = resolve("crash").err().map(|e| e.to_string()).unwrap_or_default();
                assert!(text.contains(&candidates[0].title()), "{text}");
            }
            other => panic!("{:?}", other.map(Lesson::number)),
        }
        let e = resolve("nosuchword")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("`offsetlab lessons`"), "{e}");
        assert!(matches!(resolve("99"), Err(LookupError::NoMatch(_))));
        assert!(matches!(resolve(""), Err(LookupError::NoMatch(_))));
        // Two letters are too few to stand for the start of a word.
        assert!(resolve("up").is_err());
    }
}
