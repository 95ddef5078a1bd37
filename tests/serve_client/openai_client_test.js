// The serving gateway driven by the official OpenAI client (npm `openai`, pinned in
// package-lock.json): what an application calling idlepool's endpoint actually runs. Run by
// openai_client_test.sh against idlepool-gateway-harness over idlepool-fake-engine replicas; the
// same script runs against any gateway (the coordinator's, over HTTPS) with these variables:
//
//   IDLEPOOL_BASE_URL  the gateway's OpenAI base, e.g. https://127.0.0.1:7880/v1   (required)
//   IDLEPOOL_API_KEY   a key the gateway accepts (sent as Authorization: Bearer)    (required)
//   IDLEPOOL_MODEL     the service's model name                                     (required)
//   IDLEPOOL_CA        a PEM file: trust this CA (the pool's) for an https base URL  (optional)
//   FAKE_TOKENS        the replicas are fake engines answering this many tokens: the text is
//                      then checked exactly ("replica=ID tok1 tok2 ..."); unset: only non-empty
//   FAKE_REPLICAS      their ids, comma-separated (with FAKE_TOKENS): each answer names one
//   EMBEDDING_DIM      the dimension every embedding must have (optional)
//   IDLEPOOL_EMBEDDINGS=0  skip embeddings (llama-server serves them only with --embeddings)
//   KILL_PID, KILL_STATS_URL  a replica's process and its /stats URL (optional): the script
//                      SIGKILLs it while it has requests in flight and checks every one of a
//                      burst of non-streamed requests still succeeds (the gateway retries)
//   BURST              requests in that burst (default 8)
//
// The client never retries by itself (maxRetries 0): a retry seen to succeed is the gateway's.
// Each step is bounded by the client's timeout (a bound on a hang, not a speed assertion).
'use strict';
const fs = require('fs');
const https = require('https');
const OpenAI = require('openai');

const need = k => { const v = process.env[k]; if (!v) throw new Error(`set ${k}`); return v; };
const BASE = need('IDLEPOOL_BASE_URL'), KEY = need('IDLEPOOL_API_KEY'), MODEL = need('IDLEPOOL_MODEL');
const TOKENS = process.env.FAKE_TOKENS ? Number(process.env.FAKE_TOKENS) : 0;
const REPLICAS = (process.env.FAKE_REPLICAS || '').split(',').filter(Boolean);
const DIM = process.env.EMBEDDING_DIM ? Number(process.env.EMBEDDING_DIM) : 0;
const BURST = Number(process.env.BURST || 8);

function ok(msg) { console.log('ok: ' + msg); }
function check(cond, msg) { if (!cond) throw new Error('FAIL: ' + msg); }

// The pool's CA for an https gateway: a custom agent, as an application behind a private CA does.
const httpAgent = process.env.IDLEPOOL_CA
  ? new https.Agent({ ca: fs.readFileSync(process.env.IDLEPOOL_CA), keepAlive: true })
  : undefined;
const client = (apiKey = KEY) =>
  new OpenAI({ baseURL: BASE, apiKey, httpAgent, maxRetries: 0, timeout: 60000 });

// What a fake engine answers for n tokens: "replica=ID tok1 ... tok(n-1)"; the replica's id.
function fakeReplica(text, n, what) {
  const m = /^replica=(\S+)((?: tok\d+)*)$/.exec(text);
  check(m, `${what}: not a fake engine's answer: ${JSON.stringify(text)}`);
  const want = Array.from({ length: n - 1 }, (_, i) => ` tok${i + 1}`).join('');
  check(m[2] === want, `${what}: ${JSON.stringify(text)}, want ${n} tokens`);
  check(REPLICAS.length === 0 || REPLICAS.includes(m[1]), `${what}: unknown replica ${m[1]}`);
  return m[1];
}
const PROMPT = [{ role: 'user', content: 'Say hello in four words' }];  // 5 words

async function chat(c, extra = {}) {
  const r = await c.chat.completions.create({ model: MODEL, messages: PROMPT, ...extra });
  const text = r.choices[0].message.content;
  check(typeof text === 'string' && text.length > 0, `chat: no content: ${JSON.stringify(r)}`);
  return { r, text, replica: TOKENS ? fakeReplica(text, extra.max_tokens || TOKENS, 'chat') : '' };
}

async function nonStreamed(c) {
  const { r, text } = await chat(c);
  check(r.choices[0].finish_reason === 'stop', `chat finish_reason ${r.choices[0].finish_reason}`);
  check(r.usage && r.usage.completion_tokens > 0, `chat usage: ${JSON.stringify(r.usage)}`);
  if (TOKENS) {
    const u = r.usage;
    check(u.prompt_tokens === 5 && u.completion_tokens === TOKENS && u.total_tokens === 5 + TOKENS,
          `chat usage ${JSON.stringify(u)}, want 5 + ${TOKENS}`);
  }
  const short = await chat(c, { max_tokens: 2 });
  check(short.r.choices[0].finish_reason === 'length', 'max_tokens 2: finish_reason not length');
  ok(`chat completion: ${JSON.stringify(text)}, usage ${JSON.stringify(r.usage)}; max_tokens 2 cut it`);
}

async function streamed(c) {
  const stream = await c.chat.completions.create({
    model: MODEL, messages: PROMPT, stream: true, stream_options: { include_usage: true } });
  let text = '', deltas = 0, finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta && choice.delta.content) { text += choice.delta.content; deltas++; }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  check(deltas >= 2, `stream: ${deltas} content deltas, want several`);
  check(finish === 'stop', `stream: finish_reason ${finish}`);
  check(usage && usage.completion_tokens > 0, `stream: no usage chunk (include_usage)`);
  if (TOKENS) {
    fakeReplica(text, TOKENS, 'stream');
    check(deltas === TOKENS, `stream: ${deltas} content deltas, want one per token (${TOKENS})`);
    check(usage.completion_tokens === TOKENS, `stream usage ${JSON.stringify(usage)}`);
  }
  ok(`streamed chat: ${chunks} chunks, ${deltas} content deltas joined to ${JSON.stringify(text)}`);
}

async function completions(c) {
  const r = await c.completions.create({ model: MODEL, prompt: 'One two three', max_tokens: 3 });
  const text = r.choices[0].text;
  check(typeof text === 'string' && text.length > 0, `completions: ${JSON.stringify(r)}`);
  if (TOKENS) fakeReplica(text, Math.min(3, TOKENS), 'completions');
  check(r.usage.prompt_tokens > 0, `completions usage ${JSON.stringify(r.usage)}`);
  ok(`completion: ${JSON.stringify(text)} (${r.choices[0].finish_reason})`);
}

async function embeddings(c) {
  // No encoding_format: this client asks for base64 and decodes it into floats itself.
  const r = await c.embeddings.create({ model: MODEL, input: ['first text', 'second text'] });
  check(r.data.length === 2, `embeddings: ${r.data.length} vectors for 2 inputs`);
  const [a, b] = r.data.map(d => d.embedding);
  check(a.length > 0 && a.length === b.length, `embedding dimensions ${a.length}, ${b.length}`);
  if (DIM) check(a.length === DIM, `embedding dimension ${a.length}, want ${DIM}`);
  check(a.every(Number.isFinite) && a.some(x => x !== 0), 'an embedding is not a vector of numbers');
  check(a.some((x, i) => x !== b[i]), 'two different inputs got the same embedding');
  if (TOKENS) {
    const norm = Math.sqrt(a.reduce((s, x) => s + x * x, 0));
    check(Math.abs(norm - 1) < 1e-3, `the fake engine's embedding has norm ${norm}, not 1`);
  }
  ok(`embeddings: 2 vectors of dimension ${a.length} (base64, decoded by the client)`);
}

async function models(c) {
  const ids = [];
  for await (const m of c.models.list()) ids.push(m.id);
  check(ids.includes(MODEL), `models.list: ${JSON.stringify(ids)} lacks ${MODEL}`);
  ok(`models.list: ${JSON.stringify(ids)}`);
}

// expectError(promise, Class, status): the client raised Class with that status.
async function expectError(p, Class, status, what) {
  try {
    await p;
  } catch (e) {
    check(e instanceof Class, `${what}: raised ${e && e.constructor.name}: ${e && e.message}`);
    check(e.status === status, `${what}: status ${e.status}, want ${status}`);
    return e;
  }
  throw new Error(`FAIL: ${what}: succeeded`);
}

async function refusals(c) {
  const bad = client('sk-not-this-pools-key');
  await expectError(bad.chat.completions.create({ model: MODEL, messages: PROMPT }),
                    OpenAI.AuthenticationError, 401, 'a wrong key');
  await expectError(bad.models.list(), OpenAI.AuthenticationError, 401, 'a wrong key, models');
  const e = await expectError(c.chat.completions.create({ model: 'no-such-model', messages: PROMPT }),
                              OpenAI.NotFoundError, 404, 'an unknown model');
  check(e.message.includes(MODEL), `the 404 does not list ${MODEL}: ${e.message}`);
  ok(`a wrong key: AuthenticationError (401); an unknown model: NotFoundError (404: ${e.message})`);
}

async function stats(url) {
  const r = await fetch(url);
  check(r.ok, `${url}: ${r.status}`);
  return r.json();
}

// A burst of non-streamed requests; the victim SIGKILLed once it has some in flight. Every
// request must succeed: those on the victim had sent nothing yet, so the gateway retries them.
async function killUnderLoad(c) {
  const pid = Number(process.env.KILL_PID), url = process.env.KILL_STATS_URL;
  const burst = Array.from({ length: BURST }, () => chat(c).then(x => x.replica, e => e));
  let s = await stats(url);
  for (let i = 0; s.in_flight < 1 && i < 1500; i++) {
    await new Promise(res => setTimeout(res, 20));  // a poll, bounded at ~30 s in all
    s = await stats(url);
  }
  check(s.in_flight >= 1, 'the victim never had a request in flight (nothing tested)');
  process.kill(pid, 'SIGKILL');
  const got = await Promise.all(burst);
  const failed = got.filter(x => x instanceof Error);
  check(failed.length === 0, `${failed.length} of ${BURST} requests failed after the SIGKILL: ` +
        failed.map(e => `${e.constructor.name} ${e.status || ''} ${e.message}`).join('; '));
  const after = [];
  for (let i = 0; i < 4; i++) after.push((await chat(c)).replica);
  const by = {};
  for (const r of got) by[r] = (by[r] || 0) + 1;
  ok(`replica ${s.replica} SIGKILLed with ${s.in_flight} requests in flight: all ${BURST} ` +
     `answered (by replica: ${JSON.stringify(by)}), then 4 more (${after.join(', ')})`);
}

(async () => {
  const c = client();
  await models(c);
  await nonStreamed(c);
  await streamed(c);
  await completions(c);
  if (process.env.IDLEPOOL_EMBEDDINGS !== '0') await embeddings(c);
  await refusals(c);
  if (TOKENS && REPLICAS.length > 1) {
    // Concurrent requests spread over the replicas (each capped at the service's max_concurrent).
    const seen = new Set((await Promise.all(Array.from({ length: BURST }, () => chat(c))))
      .map(x => x.replica));
    check(seen.size > 1, `${BURST} concurrent requests all went to ${[...seen]}`);
    ok(`${BURST} concurrent requests answered by replicas ${[...seen].sort().join(', ')}`);
  }
  if (process.env.KILL_PID) await killUnderLoad(c);
  console.log('openai client: all checks passed');
})().catch(e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
