// tools/bench/llamacpp_decode.mjs NODE_MODULES MODEL.gguf PROMPT_FILE NEW_TOKENS THREADS —
// llama.cpp's cached greedy decoding (the npm package node-llama-cpp, its
// prebuilt CPU binaries) timed as `keystone generate --timing` times its own:
// from the start of the prompt's evaluation to the last new token, the
// prompt's prefill included. Prints one JSON object: prompt and new token
// counts, seconds, new tokens per second.
// Not here: the model, Keystone's side, the table (decode_vs_llamacpp.sh).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, modelPath, promptFile, newTokens, threads] = process.argv.slice(2);
const { getLlama, LlamaLogLevel } = await import(
  pathToFileURL(path.join(nodeModules, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
const prompt = Array.from(model.tokenize(fs.readFileSync(promptFile, "utf8"), false));
const want = Number(newTokens);
const context = await model.createContext({
  contextSize: prompt.length + want + 8, batchSize: prompt.length, threads: Number(threads) });
const t0 = process.hrtime.bigint();
let n = 0;
for await (const _ of context.getSequence().evaluate(prompt, { temperature: 0 })) {
  if (++n >= want) break;
}
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(JSON.stringify({ prompt: prompt.length, new: n, seconds, tokens_per_s: n / seconds }));
await context.dispose();
await model.dispose();
await llama.dispose();
