#!/usr/bin/env bash
# tests/tools/test_plugins.sh — plugins (core/plugin.h) in the keystone binary:
# a model with the "cosine" attention family of tests/tools/plugins/cosine_attention.cpp
# trains through `keystone train --plugin`, and its run folder's config.json
# keeps the plugin's absolute path, so eval, generate, analyze, info, config and
# train --resume load it without being told; the family is unknown without it.
# So does a model of the "scaled_lm" kind of tests/tools/plugins/scaled_lm.cpp,
# whose own key is checked strictly, and whose plugin kernel info lists.
# The run folder records each plugin's content hash (plugin_fingerprints): a
# plugin replaced since is refused by every command that reads the run, naming
# both hashes; a file copied over the loaded plugin during training changes
# nothing in the trainer (it runs a private copy).
# Then each way loading fails, with its message and exit code 1: no file, not
# a shared library, no KS_PLUGIN declaration, another Keystone version or ABI
# tag, a declaration from before the plugin ABI, another plugin ABI revision
# or layout hash (models/plugin.h), dlopen's own error, and names that exist
# already. Arguments: the keystone binary, the project version, and the
# plugins tests/tools/plugins/CMakeLists.txt builds.
source "$(dirname "$0")/expect.sh"
ks="$1" version="$2" cosine="$3" clash="$4" no_declaration="$5" undefined="$6" old_version="$7" other_abi="$8"
scaled="$9" other_revision="${10}" other_layout="${11}" format1="${12}"
expect_not() {  # expect_not PATTERN -- command...: its output must not match
  local pattern="$1"; shift 2
  if "$@" 2>&1 | grep -qE -- "$pattern"; then echo "FAIL: $* printed /$pattern/"; fails=$((fails + 1)); fi
}

# A tiny language model whose attention is the plugin's family (its option set with --set below).
printf 'the cat sat on the mat %s\n' $(seq 1 120) > "$tmp/lines.txt"
cat > "$tmp/lm.json" <<JSON
{"name": "cosine-lm",
 "data": {"dataset": "text", "train": "$tmp/lines.txt", "seq_len": 16, "tokenizer": {"type": "word"}},
 "model": {"d_model": 16, "layers": 1, "attention": {"type": "cosine", "heads": 2}},
 "schedule": {"type": "constant"},
 "train": {"steps": 6, "batch_size": 8, "eval_every": 3, "threads": 1}}
JSON
expect 1 "config: model.attention.type: unknown family 'cosine'" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/none"
# A relative path (from the plugin's folder) and the absolute one name one file: loaded once, stored once, absolute.
dir=$(dirname "$cosine") file=$(basename "$cosine")
expect 0 "finished 6 steps" -- env -C "$dir" "$ks" train --config "$tmp/lm.json" --out "$tmp/run" --quiet \
  --plugin "./$file" --plugin "$cosine" --set model.attention.scale=8
stored=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["plugins"])' "$tmp/run/config.json")
[ "$stored" = "['$cosine']" ] || { echo "FAIL: config.json's plugins are $stored, want ['$cosine']"; fails=$((fails + 1)); }
grep -q '"scale": 8' "$tmp/run/config.json" || { echo "FAIL: config.json lacks the family's option"; fails=$((fails + 1)); }
# Every command that reads the run folder loads the plugin from its config.json.
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/run"
expect 0 "^the cat" -- "$ks" generate --run "$tmp/run" --prompt "the cat" --tokens 3 --top-k 2
expect 1 "needs a seq2seq run" -- "$ks" translate --run "$tmp/run" --input "x"  # the run loaded, then refused
expect 0 "layers.0.self_attn +2 " -- "$ks" analyze --run "$tmp/run" --batches 1 --examples 1 --out "$tmp/analysis"
expect 0 '"attention": "cosine"' -- "$ks" info --config "$tmp/run/config.json"
expect 0 '"scale": 8' -- "$ks" config --config "$tmp/run/config.json"
expect 0 "finished 8 steps" -- "$ks" train --out "$tmp/run" --resume --set train.steps=8 --quiet
expect 2 "--resume loads the plugins the run's config.json lists; drop --plugin" -- \
  "$ks" train --out "$tmp/run" --resume --plugin "$cosine"
# The "plugins" key of a config file does what --plugin does.
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["plugins"]=[sys.argv[2]]; json.dump(c, open(sys.argv[3], "w"))' \
  "$tmp/lm.json" "$cosine" "$tmp/listed.json"
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/listed.json" --out "$tmp/listed" --set train.steps=2 --quiet
# info and bench take --plugin; info lists what each plugin registered.
expect 0 "^ +\"attention family 'cosine'\"$" -- "$ks" info --plugin "$cosine"
expect 0 "\"keystone_version\": \"$version\"" -- "$ks" info --plugin "$cosine"  # core/version.h = project(VERSION)
expect 0 '"tokens_per_s"' -- "$ks" bench --plugin "$cosine" --attention cosine --steps 1 --layers 1 --seq 8 --batch 1 \
  --vocab 16 --d-model 8 --heads 2 --d-ff 8
expect 0 "cosine: the factor on cos\(q, k\), > 0" -- "$ks" config --defaults --dataset text --plugin "$cosine" \
  --set model.attention.type=cosine
expect 1 "config: model.attention.scale must be positive, got -1" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/bad" \
  --plugin "$cosine" --set model.attention.scale=-1

# A model kind from a plugin: named in JSON, with its own key, unknown without the plugin.
cat > "$tmp/scaled.json" <<JSON
{"name": "scaled-lm",
 "data": {"dataset": "text", "train": "$tmp/lines.txt", "seq_len": 16, "tokenizer": {"type": "word"}},
 "model": {"model": "scaled_lm", "logit_scale": 0.5, "d_model": 16, "layers": 1, "attention": {"heads": 2}},
 "schedule": {"type": "constant"},
 "train": {"steps": 4, "batch_size": 8, "eval_every": 2, "threads": 1}}
JSON
expect 1 "config: model.model: unknown model 'scaled_lm' \(expected decoder_lm, encoder_classifier or seq2seq\); a plugin's model kind is known once the plugin is loaded: keystone train --plugin FILE" -- \
  "$ks" train --config "$tmp/scaled.json" --out "$tmp/no_kind"
expect 0 "finished 4 steps" -- "$ks" train --config "$tmp/scaled.json" --out "$tmp/scaled" --quiet --plugin "$scaled"
grep -q '"logit_scale": 0.5' "$tmp/scaled/config.json" || { echo "FAIL: config.json lacks the kind's option"; fails=$((fails + 1)); }
grep -q '"model": "scaled_lm"' "$tmp/scaled/config.json" || { echo "FAIL: config.json lacks the kind"; fails=$((fails + 1)); }
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/scaled"
expect 0 "^the cat" -- "$ks" generate --run "$tmp/scaled" --prompt "the cat" --tokens 3 --top-k 2  # a DecoderLM
expect 0 "finished 6 steps" -- "$ks" train --out "$tmp/scaled" --resume --set train.steps=6 --quiet
expect 0 '"model": "scaled_lm"' -- "$ks" info --config "$tmp/scaled/config.json"
expect 1 "config: model.logit_scal: unknown key for model 'scaled_lm' \(did you mean model.logit_scale\?\)" -- \
  "$ks" train --config "$tmp/scaled.json" --out "$tmp/typo" --plugin "$scaled" --set model.logit_scal=2
expect 1 "config: model.logit_scale: must be positive, got -1" -- \
  "$ks" train --config "$tmp/scaled.json" --out "$tmp/bad_scale" --plugin "$scaled" --set model.logit_scale=-1
expect 1 "config: model.logit_scale: unknown key for model 'decoder_lm'" -- \
  "$ks" train --config "$tmp/scaled.json" --out "$tmp/other_kind" --plugin "$scaled" --set model.model=decoder_lm
expect 1 'config: model.model: "scaled_lm" cannot be trained on a seq2seq data set \(use "seq2seq"\)' -- \
  "$ks" config --defaults --dataset seq2seq --model scaled_lm --plugin "$scaled"
expect 0 "logit_scale\": 1\.0,? +// the factor on the logits, > 0" -- \
  "$ks" config --defaults --dataset text --model scaled_lm --plugin "$scaled"
# info lists the plugin's kind and its kernel, recorded under its name.
expect 0 "^ +\"model kind 'scaled_lm'\",?$" -- "$ks" info --plugin "$scaled"
expect 0 "^ +\"CPU kernel 'scaled_lm.scale'\",?$" -- "$ks" info --plugin "$scaled"

# A run folder from before plugins (no "plugins" key) reads as one without plugins.
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/plain" --set model.attention.type=softmax \
  --set train.steps=2 --quiet
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); del c["plugins"]; json.dump(c, open(sys.argv[1], "w"))' \
  "$tmp/plain/config.json"
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/plain"
expect 0 "finished 3 steps" -- "$ks" train --out "$tmp/plain" --resume --set train.steps=3 --quiet

# The run folder records each plugin's content; a plugin replaced at its path is refused by name, with both hashes,
# before its code runs (it had changed a trained run's eval loss unnoticed). A copy, as the build's file stays.
cp "$cosine" "$tmp/cos.so"
expect 0 "finished 6 steps" -- "$ks" train --config "$tmp/lm.json" --out "$tmp/fp" --quiet --plugin "$tmp/cos.so"
recorded=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["plugin_fingerprints"][sys.argv[2]])' \
  "$tmp/fp/config.json" "$tmp/cos.so")
[[ "$recorded" =~ ^fnv1a64:[0-9a-f]{16}$ ]] || { echo "FAIL: plugin_fingerprints holds '$recorded'"; fails=$((fails + 1)); }
expect 0 "\"fingerprint\": \"$recorded\"" -- "$ks" info --plugin "$tmp/cos.so"  # info shows what a run records
printf 'x' >> "$tmp/cos.so"  # the same code and one byte more: another file all the same
changed="config: plugin_fingerprints: plugin $tmp/cos.so \('cosine-attention'\) is not the file the run recorded: recorded $recorded, the file now holds fnv1a64:[0-9a-f]{16} \(replaced or rebuilt since\)"
expect 1 "$changed" -- "$ks" eval --run "$tmp/fp"
expect 1 "$changed" -- "$ks" generate --run "$tmp/fp" --prompt "the cat" --tokens 3
expect 1 "$changed" -- "$ks" train --out "$tmp/fp" --resume --set train.steps=8
expect 0 "finished 2 steps" -- "$ks" train --config "$tmp/fp/config.json" --out "$tmp/fp_new" --set train.steps=2 \
  --quiet  # a new run from that config.json records its own
cp "$cosine" "$tmp/cos.so"
expect 0 '"loss":[0-9.]+' -- "$ks" eval --run "$tmp/fp"
# A file copied over the loaded plugin during training (cp writes in place) changes nothing: the trainer runs its own
# copy (it had crashed on the replaced code). The copy happens after the first record, with seconds of training left.
cp "$cosine" "$tmp/live.so"
"$ks" train --config "$tmp/lm.json" --out "$tmp/live" --quiet --plugin "$tmp/live.so" --set train.steps=1000000 \
  --set train.max_time=4 --set train.log_every=1 >"$tmp/live.log" 2>&1 &
live=$!
for _ in $(seq 1 300); do [ -s "$tmp/live/metrics.jsonl" ] && break; sleep 0.1; done
[ -s "$tmp/live/metrics.jsonl" ] || { echo "FAIL: the live run wrote no record in 30 s"; fails=$((fails + 1)); }
cp "$scaled" "$tmp/live.so"
wait "$live"
rc=$?
if [ "$rc" != 0 ] || ! grep -q "spent its time budget" "$tmp/live.log"; then
  echo "FAIL: training with its plugin overwritten exited $rc: $(tail -5 "$tmp/live.log")"; fails=$((fails + 1))
fi

# The loader's errors, each naming the file.
expect 1 "plugin $tmp/missing.so: no such file" -- "$ks" train --config "$tmp/lm.json" --plugin "$tmp/missing.so"
expect 1 "plugin $tmp: not a regular file" -- "$ks" info --plugin "$tmp"
echo "not a library" > "$tmp/text.so"
expect 1 "plugin $tmp/text.so: not a shared library \(not an ELF file\)" -- "$ks" info --plugin "$tmp/text.so"
expect 1 "plugin $ks is not a Keystone plugin" -- "$ks" info --plugin "$ks"  # a PIE executable is ET_DYN too
expect 1 "plugin $no_declaration is not a Keystone plugin \(it has no KS_PLUGIN declaration" -- \
  "$ks" info --plugin "$no_declaration"
expect_not "initialiser ran" -- "$ks" info --plugin "$no_declaration"
expect 1 "plugin $old_version \('mismatched'\) was built for Keystone 0.0.1 \(ABI [^)]+\), but this is Keystone $version" -- \
  "$ks" train --config "$tmp/lm.json" --plugin "$old_version"
expect 1 "was built for Keystone $version \(ABI itanium libstdc\+\+ cxx11-abi=0\), but this is Keystone $version \(ABI itanium" -- \
  "$ks" info --plugin "$other_abi"
expect_not "initialiser ran" -- "$ks" info --plugin "$other_abi"
# Built against other headers of the same version (0.1.0 from the first plugin on, while AttentionConfig and
# AttentionOptions changed): refused by the plugin ABI, naming the plugin's and the library's, before its code runs.
library="this library is Keystone $version \(ABI [^,]+, plugin ABI revision ([0-9]+), layout hash ([0-9a-f]{16})\): rebuild the plugin against these headers"
expect 1 "plugin $format1 \('mismatched'\) was built against Keystone headers from before the plugin ABI was recorded \(Keystone $version, no plugin ABI revision or layout hash\), but $library" -- \
  "$ks" train --config "$tmp/lm.json" --out "$tmp/format1" --plugin "$format1"
expect_not "initialiser ran" -- "$ks" info --plugin "$format1"
abi_refusal() {  # abi_refusal PLUGIN: its refusal names its revision and hash, then the library's (rev hash lib_rev lib_hash)
  local out
  out=$("$ks" info --plugin "$1" 2>&1)
  rev="" hash="" lib_rev="" lib_hash=""
  if [[ "$out" =~ "plugin $1 ('mismatched') was built against other Keystone headers (plugin ABI revision "([0-9]+)", layout hash "([0-9a-f]{16})"), but "$library ]]; then
    rev=${BASH_REMATCH[1]} hash=${BASH_REMATCH[2]} lib_rev=${BASH_REMATCH[3]} lib_hash=${BASH_REMATCH[4]}
  else
    echo "FAIL: info --plugin $1: $out"; fails=$((fails + 1))
  fi
}
abi_refusal "$other_revision"
[ "$rev" != "$lib_rev" ] && [ "$hash" = "$lib_hash" ] || { echo "FAIL: other revision: $rev $hash, library $lib_rev $lib_hash"; fails=$((fails + 1)); }
abi_refusal "$other_layout"
[ "$rev" = "$lib_rev" ] && [ "$hash" != "$lib_hash" ] || { echo "FAIL: other layout: $rev $hash, library $lib_rev $lib_hash"; fails=$((fails + 1)); }
expect_not "initialiser ran" -- "$ks" info --plugin "$other_layout"
expect 1 "plugin $undefined: cannot load it: .*undefined symbol: ks_test_symbol_nobody_defines" -- \
  "$ks" info --plugin "$undefined"
expect 1 "plugin 'clash' \($clash\): attention family 'softmax' is registered already \(built in\); model kind 'decoder_lm' is registered already \(built in\); CPU kernel 'where' is registered already \(built in\)\. A plugin adds names; it cannot replace one" -- \
  "$ks" info --plugin "$clash"
# A clash between two plugins names the other plugin: a copy of the scaled_lm plugin under another plugin name
# registers its kind again (its kernel table is its own copy's, RTLD_LOCAL, so that is no clash).
cp "$scaled" "$tmp/scaled_copy.so"
python3 - "$tmp/scaled_copy.so" <<'PY'
import sys  # the copy declares another plugin name, of the same length, so the loader takes it for another plugin
path = sys.argv[1]; data = open(path, 'rb').read()
open(path, 'wb').write(data.replace(b'keystone-plugin 2\0scaled-lm\0', b'keystone-plugin 2\0scaled-LM\0'))
PY
expect 1 "plugin 'scaled-LM' \($tmp/scaled_copy.so\): model kind 'scaled_lm' is registered already \(by plugin 'scaled-lm' \($scaled\)\)\. A plugin adds" -- \
  "$ks" info --plugin "$scaled" --plugin "$tmp/scaled_copy.so"
# A second file declaring a loaded plugin's name is refused (a copy of the cosine plugin).
cp "$cosine" "$tmp/copy.so"
expect 1 "plugin $tmp/copy.so: a plugin named 'cosine-attention' is loaded already, from $cosine" -- \
  "$ks" info --plugin "$cosine" --plugin "$tmp/copy.so"
# A run whose plugin is gone says which file it needs.
mv "$cosine" "$tmp/moved.so"
expect 1 "plugin $cosine: no such file" -- "$ks" eval --run "$tmp/run"
mv "$tmp/moved.so" "$cosine"

# The ABI tag leaves out how Keystone was built (CUDA, MPI, sanitizers, NDEBUG) because no
# installed header's layout depends on it: no header may test those macros.
if grep -rnE --include='*.h' '^\s*#\s*(if|ifdef|ifndef|elif).*\b(KS_WITH_[A-Z]+|NDEBUG|KS_SANITIZE|__SANITIZE_ADDRESS__)\b' \
  "$root"/core "$root"/autograd "$root"/ops "$root"/nn "$root"/models "$root"/datasets "$root"/tools "$root"/keystone.h; then
  echo "FAIL: the headers above change with the build's switches; name them in KS_PLUGIN_ABI (core/plugin.h)"
  fails=$((fails + 1))
fi

finish "all plugin checks passed"
