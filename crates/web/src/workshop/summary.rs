//! The top of the instructor's page: where the room is — how many learners are on each step of
//! each lesson, how many play freely, who finished which lesson, how far the guided experiment
//! got — counted from what each learner's page reported (`Activity`).

use super::learner::{Activity, GUIDED_STEPS};
use serde::Serialize;
use std::collections::BTreeMap;

/// One lesson's line of the summary.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LessonSummary {
    pub lesson: u32,
    pub title: String,
    pub steps: u32,
    /// Learners on it now, by the step they are on (0-based, as `progress.step`), not at its end.
    pub on_step: BTreeMap<u32, u32>,
    /// Every learner who completed it (reported its last step), wherever they are now.
    pub finished: Vec<u32>,
}

/// The guided experiment's line of the summary.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct GuidedSummary {
    pub steps: u32,
    /// Learners who reached a step but not the end, by that step (0-based).
    pub on_step: BTreeMap<u32, u32>,
    /// Learners who finished it.
    pub finished: Vec<u32>,
}

/// The whole summary (`GET /api/instructor/room`'s `summary`).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct RoomSummary {
    pub learners: u32,
    /// Learners in no lesson (the lab's free play).
    pub free_play: u32,
    /// Lessons someone is on or finished, by number.
    pub lessons: Vec<LessonSummary>,
    pub guided: GuidedSummary,
    /// Learners who never did anything (no change, no step, no answer).
    pub untouched: u32,
}

/// The summary of `activities` (each a learner's).
pub fn summarize<'a>(activities: impl IntoIterator<Item = &'a Activity>) -> RoomSummary {
    let mut s = RoomSummary {
        guided: GuidedSummary {
            steps: GUIDED_STEPS,
            ..GuidedSummary::default()
        },
        ..RoomSummary::default()
    };
    let mut lessons: BTreeMap<u32, LessonSummary> = BTreeMap::new();
    for a in activities {
        s.learners += 1;
        if a.untouched() {
            s.untouched += 1;
        }
        match &a.progress {
            None => s.free_play += 1,
            Some(p) => {
                let entry = lessons
                    .entry(p.lesson)
                    .or_insert_with(|| new_lesson(p.lesson, p.steps));
                if p.step < p.steps {
                    *entry.on_step.entry(p.step).or_default() += 1;
                }
            }
        }
        for n in &a.completed {
            lessons
                .entry(*n)
                .or_insert_with(|| new_lesson(*n, 0))
                .finished
                .push(a.number);
        }
        match a.guided {
            Some(g) if g >= GUIDED_STEPS => s.guided.finished.push(a.number),
            Some(g) => *s.guided.on_step.entry(g).or_default() += 1,
            None => {}
        }
    }
    s.lessons = lessons.into_values().collect();
    s
}

/// A lesson's empty line: its title and steps from the lessons the server has (`steps` as
/// reported when it has no such lesson, which a report was refused for).
fn new_lesson(n: u32, steps: u32) -> LessonSummary {
    let known = offsetlab_scenario::lessons::LESSONS
        .iter()
        .find(|l| l.number() == n);
    LessonSummary {
        lesson: n,
        title: known.map(|l| l.title()).unwrap_or_default(),
        steps: known.map_or(steps, |l| offsetlab_scenario::lessons::steps(l).len() as u32),
        on_step: BTreeMap::new(),
        finished: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workshop::learner::Progress;

    fn learner(
        number: u32,
        progress: Option<(u32, u32)>,
        completed: &[u32],
        guided: Option<u32>,
    ) -> Activity {
        let steps = |n: u32| {
            offsetlab_scenario::lessons::steps(
                offsetlab_scenario::lessons::LESSONS
                    .iter()
                    .find(|l| l.number() == n)
                    .expect("a lesson"),
            )
            .len() as u32
        };
        Activity {
            number,
            name: format!("learner {number}"),
            progress: progress.map(|(lesson, step)| Progress {
                lesson,
                step: step.min(steps(lesson)),
                steps: steps(lesson),
            }),
            completed: completed.iter().copied().collect(),
            guided,
            ..Activity::default()
        }
    }

    #[test]
    fn the_room_is_counted_per_lesson_step_and_the_guided_experiment() {
        let room = [
            learner(1, Some((1, 1)), &[], Some(0)),
            learner(2, Some((1, 1)), &[], Some(3)),
            learner(3, Some((1, 4)), &[], None),
            learner(4, Some((1, 99)), &[1], Some(3)),
            learner(5, None, &[1, 2], Some(0)),
            learner(6, None, &[], None),
        ];
        let s = summarize(&room);
        assert_eq!((s.learners, s.free_play, s.untouched), (6, 2, 1));
        assert_eq!(s.lessons.len(), 2);
        let one = &s.lessons[0];
        assert_eq!(one.lesson, 1);
        assert!(!one.title.is_empty() && one.steps > 4);
        assert_eq!(
            one.on_step,
            BTreeMap::from([(1, 2), (4, 1)]),
            "learner 4 is at the end"
        );
        assert_eq!(one.finished, vec![4, 5]);
        let two = &s.lessons[1];
        assert_eq!(
            (two.lesson, two.on_step.len(), two.finished.clone()),
            (2, 0, vec![5])
        );
        assert_eq!(s.guided.on_step, BTreeMap::from([(0, 2)]));
        assert_eq!(s.guided.finished, vec![2, 4]);
        assert_eq!(s.guided.steps, GUIDED_STEPS);
    }

    #[test]
    fn an_empty_room_is_all_zeros() {
        let s = summarize(&[]);
        assert_eq!((s.learners, s.free_play, s.lessons.len()), (0, 0, 0));
    }
}
