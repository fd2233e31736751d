// The official JS SDK (@langchain/langgraph-sdk, pinned in package-lock.json) against a real
// `sophos serve`: node check.mjs <LangGraph API url>. Prints one JSON object of what it saw;
// tests/integration/test_langgraph_api_js.py asserts on it.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2], apiKey: null });
const human = (text) => ({ messages: [{ type: "human", content: text }] });
const out = {};

const thread = await client.threads.create({ metadata: { suite: "js" } });
out.created = { status: thread.status, suite: thread.metadata.suite };

const events = [];
for await (const part of client.runs.stream(thread.thread_id, "agent", {
  input: human("hello js"),
  streamMode: ["values", "messages-tuple", "updates"],
})) {
  events.push(part);
}
out.events = events.map((e) => e.event);
out.tokens = events
  .filter((e) => e.event === "messages" && e.data[0].type === "AIMessageChunk")
  .map((e) => e.data[0].content)
  .join("");
const state = await client.threads.getState(thread.thread_id);
out.state = state.values.messages.map((m) => [m.type, m.content]);
out.history = (await client.threads.getHistory(thread.thread_id, { limit: 20 })).map(
  (h) => [h.values.messages.length, h.parent_checkpoint?.checkpoint_id ?? null, h.checkpoint.checkpoint_id],
);
out.found = (await client.threads.search({ metadata: { suite: "js" }, limit: 100 })).map((t) => t.thread_id);
out.thread = thread.thread_id;

// a background run joined as a stream
const run = await client.runs.create(thread.thread_id, "agent", { input: human("go slow please") });
let ticks = "";
for await (const part of client.runs.joinStream(thread.thread_id, run.run_id, { streamMode: ["messages-tuple"] })) {
  if (part.event === "messages") ticks += part.data[0].content;
}
out.joined = ticks;
out.runStatus = (await client.runs.get(thread.thread_id, run.run_id)).status;

// an approval as an interrupt, answered with a Command
const paid = await client.threads.create();
const asked = await client.runs.wait(paid.thread_id, "agent", { input: human("pay 4") });
out.interrupt = asked.__interrupt__?.[0]?.value ?? null;
out.pausedStatus = (await client.threads.get(paid.thread_id)).status;
const done = await client.runs.wait(paid.thread_id, "agent", {
  command: { resume: { decisions: [{ type: "approve" }] } },
});
out.afterResume = done.messages.at(-1).content;
try {
  await client.runs.wait(paid.thread_id, "agent", { command: { resume: { decisions: [{ type: "approve" }] } } });
  out.staleStatus = 200;
} catch (e) {
  out.staleStatus = e.status ?? String(e);
}
out.paidThread = paid.thread_id;

// cancel
const slow = await client.threads.create();
const running = await client.runs.create(slow.thread_id, "agent", { input: human("slow to cancel") });
await new Promise((resolve) => setTimeout(resolve, 500));
await client.runs.cancel(slow.thread_id, running.run_id, true);
out.cancelled = (await client.runs.get(slow.thread_id, running.run_id)).status;

// multitask: a message enqueued behind a running run is a pending run that runs next
const busy = await client.threads.create();
const first = await client.runs.create(busy.thread_id, "agent", { input: human("slow first") });
const queued = await client.runs.create(busy.thread_id, "agent", {
  input: human("queued second"), multitaskStrategy: "enqueue",
});
out.queuedStatus = queued.status;
const queuedValues = await client.runs.join(busy.thread_id, queued.run_id);
out.queuedAnswer = queuedValues.messages.map((m) => m.content);
out.queuedRuns = [(await client.runs.get(busy.thread_id, first.run_id)).status,
  (await client.runs.get(busy.thread_id, queued.run_id)).status];

await client.threads.delete(thread.thread_id);
try {
  await client.threads.get(thread.thread_id);
  out.afterDelete = 200;
} catch (e) {
  out.afterDelete = e.status ?? String(e);
}
console.log(JSON.stringify(out));
