#!/usr/bin/env python3
"""tests/check_header_paths.py — fails when the header comment of a source file
names a repository file or folder that does not exist (code moved, the
comment left pointing at its old place).

  python3 tests/check_header_paths.py [ROOT]      (default: this checkout)

Reads the leading comment block of every tracked .h .cpp .cu .cuh .py .sh
.cmake file (the `//` or `#` lines before the first line of code, and a
Python module's docstring), takes each word that looks like a repository path
(it contains a '/' and ends in a source or document extension, or it starts
with a top-level folder such as core/ or tools/) and looks for it from the
root, from the file's folder and from each folder above that (a header
naming `cuda/cuda_testing.h` from tests/cuda/ means tests/cuda/cuda_testing.h).
Words holding a pattern or a placeholder (`*`, `<layer>`, `NAME`, `claimN`,
`...`) or a URL are not paths, nor are those whose first folder is none of
the repository's (a data set's package/cats.txt, a run's analysis/...,
../shared/). Prints each stale one as FILE:LINE: PATH.
Not here: the include graph (check_layering.cmake), comments below the header.
"""
import os
import re
import subprocess
import sys

EXTENSIONS = (".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".cmake", ".md", ".json", ".txt", ".in")
SCANNED = (".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".cmake")
TOP = ("core", "autograd", "ops", "nn", "models", "datasets", "tools", "tests", "docs", "examples")
# A word: path characters, so that "core/tensor.h's", "(ops/unary.cpp)" and
# "tools/train/trainer.cpp:42" give the path alone.
WORD = re.compile(r"[A-Za-z0-9_.+\-/*<>{}$]+")


def tracked_files(root):
    """The checkout's tracked files (git), or every file outside build folders and .git without git."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
        return [p for p in out.stdout.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
        return files


def header(path):
    """[(line number, text)] of the file's leading comment block."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    if lines and lines[0].startswith("#!"):
        i = 1
    if path.endswith(".py"):
        while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()) and not out:
            i += 1  # a coding line or blank lines before the docstring
        if i < len(lines) and lines[i].lstrip().startswith(('"""', "'''")):
            quote = lines[i].lstrip()[:3]
            first = lines[i].lstrip()[3:]
            out.append((i + 1, first))
            if quote not in first:
                i += 1
                while i < len(lines):
                    out.append((i + 1, lines[i]))
                    if quote in lines[i]:
                        break
                    i += 1
            return out
    prefix = "//" if path.endswith((".h", ".cpp", ".cu", ".cuh")) else "#"
    while i < len(lines) and lines[i].lstrip().startswith(prefix):
        out.append((i + 1, lines[i]))
        i += 1
    return out


def looks_like_path(word):
    if "/" not in word or "://" in word or "..." in word or re.search(r"[*<>{}$]", word):
        return False
    # A placeholder segment: NAME, claimN, seedS (the run-folder layouts comments describe).
    if any(re.fullmatch(r"[A-Z][A-Z_]*|[a-z]+[A-Z]", part) for part in re.split(r"[/.\-]", word) if part):
        return False
    return word.endswith(EXTENSIONS) or word.split("/")[0] in TOP


def folders_above(source):
    """The folders a path named in `source` may be relative to: its own, each above it, the root ("")."""
    folder = os.path.dirname(source)
    while folder:
        yield folder
        folder = os.path.dirname(folder)
    yield ""


def in_repository(root, source, word):
    """Whether `word` names a place in the repository: its first folder is a top-level one or one above source.

    Other paths are outside it: a downloaded data set's (package/cats.txt), an
    upstream repository's, a run folder's (analysis/analysis.json), ../shared/.
    """
    first = word.split("/")[0]
    if first in ("", ".", ".."):
        return False
    return first in TOP or any(os.path.isdir(os.path.join(root, f, first)) for f in folders_above(source))


def exists(root, source, word):
    """Whether `word`, named in the header of `source`, is a file or folder from the root or a folder above source."""
    return any(os.path.exists(os.path.join(root, f, word)) for f in folders_above(source))


def stale(root):
    """[(file, line, word)] of every header path that does not exist."""
    found = []
    for source in tracked_files(root):
        if not source.endswith(SCANNED) or not os.path.isfile(os.path.join(root, source)):
            continue
        for number, text in header(os.path.join(root, source)):
            for word in WORD.findall(text):
                word = word.rstrip(".-")
                if (looks_like_path(word) and in_repository(root, source, word)
                        and not exists(root, source, word.rstrip("/"))):
                    found.append((source, number, word))
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    found = stale(root)
    for source, number, word in found:
        print(f"{source}:{number}: {word}: no such file or folder in the repository")
    if found:
        print(f"{len(found)} stale path(s) in header comments: point them at where the code lives now")
        return 1
    print("header comments name only files that exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
