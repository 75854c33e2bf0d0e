// The Learn tab: how it works, the principles, the misconceptions quiz (with a score) and the
// interview view. Every claim links to the lesson that runs it.
import { $, h, fill } from './dom.js';
import { request } from './api.js';
import { ui } from './store.js';
import C from './content.js';

/** A button that runs the lesson (or opens the explorer) a claim points at. */
function runLink(r, startLesson, showView) {
  if (!r) return null;
  return h('button', { class: 'btn small', onclick: () => (r.lesson ? startLesson(r.lesson) : showView('explorer')) },
    r.lesson ? `Run lesson ${r.lesson}` : 'Open the explorer');
}

function quiz(link) {
  const answers = new Map(); // question index → right?
  const score = h('p', { class: 'quiz-score', role: 'status' }, `Score: 0 of ${C.quiz.length} — pick an answer to each.`);
  const update = () => {
    const right = [...answers.values()].filter(Boolean).length;
    score.textContent = answers.size === C.quiz.length
      ? `Score: ${right} of ${C.quiz.length}.${right === C.quiz.length ? ' Every misconception refuted.' : ' Run the lessons behind the ones you missed.'}`
      : `Score: ${right} of ${answers.size} answered (${C.quiz.length} questions).`;
  };
  const questions = C.quiz.map((q, i) => {
    const answer = h('div', { class: 'answer', hidden: true });
    const choose = (j) => {
      const right = j === q.correct;
      // The first answer counts for the score; changing it afterwards shows the explanation again.
      if (!answers.has(i)) answers.set(i, right);
      if (ui.workshop) request('POST', '/api/workshop/quiz', { question: i, choice: j });
      answer.hidden = false;
      answer.className = `answer ${right ? 'right' : 'wrong'}`;
      fill(answer, h('strong', {}, right ? '✔ Right. ' : '✗ Not quite. '), q.explanation, ' ', link(q.run));
      update();
    };
    return h('div', { class: 'quiz-q' }, h('fieldset', {}, h('legend', {}, `${i + 1}. ${q.question}`),
      q.options.map((o, j) => h('label', {}, h('input', { type: 'radio', name: `quiz-${i}`, onchange: () => choose(j) }), o))), answer);
  });
  return h('section', { class: 'learn-section', id: 'learn-quiz' }, h('h2', {}, 'Misconceptions quiz'),
    h('p', { class: 'muted' }, 'Each statement is a belief people hold about Kafka. Pick an answer, then run the proof.'),
    score, questions);
}

export function renderLearn(startLesson, showView) {
  const link = (r) => runLink(r, startLesson, showView);
  const how = h('section', { class: 'learn-section', id: 'learn-how' }, h('h2', {}, 'How it works under the hood'), C.how.map((p) => h('p', {}, p)));
  const principles = h('section', { class: 'learn-section', id: 'learn-principles' }, h('h2', {}, 'Core principles'),
    h('ul', {}, C.principles.map((p) => h('li', {}, h('strong', {}, p.title + ' '), p.text, ' ', link(p.run)))));
  const I = C.interview;
  const interview = h('section', { class: 'learn-section', id: 'learn-interview' }, h('h2', {}, 'Interview prep'),
    h('p', {}, h('strong', {}, I.question)),
    h('div', { class: 'depths' }, I.depths.map((d) => h('article', {}, h('h3', {}, d.title), h('p', {}, d.answer), d.run ? link(d.run) : null))),
    h('h3', {}, 'Follow-up questions'), h('ul', {}, I.followups.map((f) => h('li', {}, h('strong', {}, f.q + ' '), f.a, ' ', link(f.run)))),
    h('h3', {}, 'Answers that cost a candidate the question'), I.redflags.map((r) => h('div', { class: 'redflag' }, h('strong', {}, `“${r.claim}” `), r.why, ' ', link(r.run))));
  $('#learn').replaceChildren(how, principles, quiz(link), interview);
}
