"""tests/interop/npm_package.py — the npm packages the interop tests check
Keystone against (llama.cpp as node-llama-cpp, Hugging Face's tokenizers.js),
fetched once per machine into a folder every checkout and build folder shares.

Why shared: node-llama-cpp is 725 MB and 23 s of `npm install`; kept under
each build folder, a fresh clone's CI paid that twice (Release and sanitizer
builds) on every run. The folder is the one CMake passes (KS_NPM_CACHE,
~/.cache/keystone/npm by default), one subfolder per package and version.

Each package is fetched into a new temporary folder beside its final one and
renamed into place only when complete, so two tests fetching at once (ctest
-j) and an interrupted fetch never leave a half-filled folder that a later
run would take for a whole one.

Not here: what the tests do with the packages (test_gguf.py,
test_sp_tokenizer.py, test_roundtrip.py).
"""
import json
import os
import shutil
import subprocess
import tempfile

LLAMA_CPP = "node-llama-cpp@3.22.1"
TOKENIZERS = "@huggingface/tokenizers@0.2.0"


def _fetched(folder, probe, fetch):
    """folder/probe when it exists; else fetch(tmp) into a temporary folder renamed to `folder`;
    None where npm/node are missing or the fetch fails (its error printed)."""
    if os.path.exists(os.path.join(folder, probe)):
        return os.path.join(folder, probe)
    if not shutil.which("npm") or not shutil.which("node"):
        return None
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(folder) + ".partial-", dir=parent)
    try:
        error = fetch(tmp)
        if error is not None or not os.path.exists(os.path.join(tmp, probe)):
            print(f"cannot fetch into {folder}: {error or probe + ' missing after the fetch'}")
            return None
        try:
            os.rename(tmp, folder)  # atomic; fails where another test's fetch got there first
        except OSError:
            if not os.path.exists(os.path.join(folder, probe)):
                raise
        return os.path.join(folder, probe)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    return None if r.returncode == 0 else f"{' '.join(cmd)}: {r.stderr[-2000:]}"


def llama_cpp_modules(cache):
    """CACHE/node-llama-cpp-3.22.1/node_modules (node-llama-cpp installed), or None."""
    folder = os.path.join(cache, LLAMA_CPP.replace("@", "-"))

    def install(tmp):
        with open(os.path.join(tmp, "package.json"), "w") as f:
            json.dump({"name": "ks-interop-tests", "private": True}, f)
        return _run(["npm", "install", "--no-audit", "--no-fund", "--silent", LLAMA_CPP], tmp)

    found = _fetched(folder, os.path.join("node_modules", "node-llama-cpp", "package.json"), install)
    return os.path.join(folder, "node_modules") if found else None


def tokenizers_js(cache):
    """The path of tokenizers.js's CommonJS build under CACHE/huggingface-tokenizers-0.2.0, or None."""
    folder = os.path.join(cache, TOKENIZERS.lstrip("@").replace("/", "-").replace("@", "-"))

    def unpack(tmp):
        error = _run(["npm", "pack", TOKENIZERS, "--silent"], tmp)
        if error is not None:
            return error
        tgz = [f for f in os.listdir(tmp) if f.endswith(".tgz")]
        return _run(["tar", "xzf", tgz[0]], tmp) if tgz else "npm pack wrote no .tgz"

    return _fetched(folder, os.path.join("package", "dist", "tokenizers.cjs"), unpack)
