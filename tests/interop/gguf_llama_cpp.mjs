// tests/interop/gguf_llama_cpp.mjs NODE_MODULES MODEL.gguf JOBS.json [MODEL.gguf JOBS.json]...
// — llama.cpp (the npm package node-llama-cpp, its prebuilt CPU binaries) on
// GGUF files, for test_gguf.py: loads each model in turn and answers each job
// of its JOBS.json,
//   {"tokenize": TEXT}              -> the ids llama.cpp's tokenizer gives (special tokens parsed)
//   {"greedy": [IDS], "tokens": N}  -> N ids of greedy decoding after the prompt ids
// printing, on its last line, one JSON array with an entry per model: the
// array of its answers, or {"error": MESSAGE} where the model failed to load
// or answer. Several models per call because starting node and llama.cpp costs
// about 2 s, more than answering. Not here: the comparison with Keystone
// (test_gguf.py).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, ...pairs] = process.argv.slice(2);
if (pairs.length === 0 || pairs.length % 2 !== 0) {
  console.error("usage: gguf_llama_cpp.mjs NODE_MODULES MODEL.gguf JOBS.json [MODEL.gguf JOBS.json]...");
  process.exit(2);
}
const { getLlama, LlamaLogLevel } = await import(
  pathToFileURL(path.join(nodeModules, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });

async function answer(modelPath, jobs) {
  const model = await llama.loadModel({ modelPath });
  try {
    const answers = [];
    for (const job of jobs) {
      if (job.tokenize !== undefined) {
        answers.push(Array.from(model.tokenize(job.tokenize, true)));
        continue;
      }
      // A fresh context per prompt: nothing cached from another job.
      const context = await model.createContext({ contextSize: 128, batchSize: 128, threads: 1 });
      const out = [];
      for await (const token of context.getSequence().evaluate(job.greedy, { temperature: 0 })) {
        out.push(token);
        if (out.length >= job.tokens) break;
      }
      await context.dispose();
      answers.push(out);
    }
    return answers;
  } finally {
    await model.dispose();
  }
}

const results = [];
for (let i = 0; i < pairs.length; i += 2) {
  try {
    results.push(await answer(pairs[i], JSON.parse(fs.readFileSync(pairs[i + 1], "utf8"))));
  } catch (e) {
    results.push({ error: `${pairs[i]}: ${e && e.stack ? e.stack : e}` });
  }
}
console.log(JSON.stringify(results));
await llama.dispose();
