// tools/bench/tiktoken_encode.mjs — the reference side of
// tools/bench/tokenize_vs_tiktoken.sh: OpenAI's tiktoken (the npm package, its
// Rust core compiled to WebAssembly, one thread) encodes a text file with
// GPT-2's encoding the way `keystone tokenize --doc-sep line` does: every
// non-empty line is a document, without its newline (\n or \r\n), after an <|endoftext|>.
//   node tools/bench/tiktoken_encode.mjs TIKTOKEN_PACKAGE_DIR FILE [OUT.ids]
// Prints the tokens and the wall seconds of the encoding (file reading
// included, as Keystone's figure includes it); with OUT.ids, also writes the
// ids as little-endian uint16 (what an llm.c shard holds after its header).
// Not here: shards, splits, any other encoding.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [pkg, file, out] = process.argv.slice(2);
if (!pkg || !file) {
  console.error("usage: node tiktoken_encode.mjs TIKTOKEN_PACKAGE_DIR FILE [OUT.ids]");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const { get_encoding } = require(path.resolve(pkg, "tiktoken.cjs"));
const enc = get_encoding("gpt2");
const EOT = 50256;
const start = process.hrtime.bigint();
const fd = fs.openSync(file, "r");
const buf = Buffer.alloc(64 << 20);
const decoder = new TextDecoder("utf-8");
const outFd = out ? fs.openSync(out, "w") : null;
let tokens = 0, rest = "";
const encodeLine = (line) => {
  if (line.length === 0) return;
  const ids = enc.encode(line, "all");
  tokens += ids.length + 1;
  if (outFd !== null) {
    const a = new Uint16Array(ids.length + 1);
    a[0] = EOT;
    a.set(ids, 1);
    fs.writeSync(outFd, Buffer.from(a.buffer));
  }
};
for (;;) {
  const n = fs.readSync(fd, buf, 0, buf.length, null);
  if (n === 0) break;
  const text = rest + decoder.decode(buf.subarray(0, n), { stream: true });
  const lines = text.split("\n");
  rest = lines.pop();
  // A line's "\r\n" ends it as "\n" does (Keystone's --doc-sep line drops the \r too).
  for (const line of lines) encodeLine(line.endsWith("\r") ? line.slice(0, -1) : line);
}
encodeLine(rest + decoder.decode());
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
if (outFd !== null) fs.closeSync(outFd);
enc.free();
console.log(JSON.stringify({ tokens, seconds }));
