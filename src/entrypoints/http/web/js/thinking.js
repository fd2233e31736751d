// The model's thinking on an answer: a collapsed "Thinking…" block, live while it thinks,
// "Thought for N s" after (the server stores how long; live, the page measures it).
import { el } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

// a `reasoning` event: its text goes to the answer's block, the clock starts on the first
export function addReasoning(message, text) {
  if (!message.reasoning) message.thinkingSince = Date.now();
  message.reasoning = (message.reasoning || "") + text;
  message.thinking = true;
}

// the answer's first token: the thinking is over
export function answerStarted(message) {
  if (!message.thinking) return;
  message.thinking = false;
  message.reasoningSeconds = Math.round((Date.now() - message.thinkingSince) / 100) / 10;
}

// the blocks a person opened, by conversation and place: a re-render keeps one open, and so does
// the re-read at the run's end, which brings the same message as a new object
const open = new Set();
const placeOf = (m) => `${state.current}:${state.messages.indexOf(m)}`;

export function thinkingBlock(m) {
  if (!m.reasoning) return null;
  const live = state.streaming && m.thinking;
  const label = live ? "Thinking…" : m.reasoningSeconds != null ? `Thought for ${m.reasoningSeconds} s` : "Thought";
  const block = el("details", { class: `thinking${live ? " live" : ""}`, "data-testid": "thinking", open: open.has(placeOf(m)) },
    el("summary", { "data-testid": "thinking-label" }, live ? el("span", { class: "spinner", "aria-hidden": "true" }) : null, label),
    el("div", { class: "thinking-text", "data-testid": "thinking-text" }, m.reasoning));
  block.addEventListener("toggle", () => { if (block.open) open.add(placeOf(m)); else open.delete(placeOf(m)); });
  return block;
}

// who wrote the answer: drawn by CSS from data-model, so that the message's text stays its
// answer alone (what is copied, searched, compared); screen readers read it all the same
export function modelLabel(m) {
  return m.model ? el("span", { class: "answer-model", "data-testid": "answer-model", "data-model": m.model,
    title: `Written by ${m.model}` }) : null;
}
