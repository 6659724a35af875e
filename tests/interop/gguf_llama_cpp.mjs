// tests/interop/gguf_llama_cpp.mjs NODE_MODULES MODEL.gguf JOBS.json — llama.cpp
// (the npm package node-llama-cpp, its prebuilt CPU binaries) on a GGUF file,
// for test_gguf.py: loads the model and answers each job of JOBS.json,
//   {"tokenize": TEXT}              -> the ids llama.cpp's tokenizer gives (special tokens parsed)
//   {"greedy": [IDS], "tokens": N}  -> N ids of greedy decoding after the prompt ids
// printing one JSON array of answers. A failure to load is printed and exits 1.
// Not here: the comparison with Keystone (test_gguf.py).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, modelPath, jobsPath] = process.argv.slice(2);
const { getLlama, LlamaLogLevel } = await import(
  pathToFileURL(path.join(nodeModules, "node-llama-cpp", "dist", "index.js")).href);
const jobs = JSON.parse(fs.readFileSync(jobsPath, "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
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
console.log(JSON.stringify(answers));
await model.dispose();
await llama.dispose();
