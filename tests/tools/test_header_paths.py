"""tests/tools/test_header_paths.py — tests/check_header_paths.py on a small
made-up tree (no git: every file is read): a header naming a file that does
not exist fails, naming the file, the line and the path; one naming files
that exist (from the root, or from a folder above it), patterns,
placeholders, URLs and places outside the repository passes; so do stale
paths below the header, which it does not read.
Run: python3 -m unittest discover -s tests/tools -p 'test_*.py'
Not here: the check over this repository (its own ctest test).
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tests", "check_header_paths.py")


class HeaderPathsTest(unittest.TestCase):
    def tree(self, files):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(folder.name, path)), exist_ok=True)
            with open(os.path.join(folder.name, path), "w") as f:
                f.write(text)
        return folder.name

    def check(self, root):
        p = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return p.returncode, p.stdout

    GOOD = {
        "core/tensor.h": "// core/tensor.h — tensors; their copies are in core/copy.h, kernels in cuda/loops.cuh.\n"
                         "// Not here: ops/ (any <layer>/cuda/*.cu), tools/experiments/kept_runs/claimN/NAME-seedS,\n"
                         "// https://example.com/ops/x.cpp, a data set's package/cats.txt, ../shared/bench/b.py.\n"
                         "#pragma once\n// below the header: ops/gone.cpp\n",
        "core/copy.h": "// core/copy.h — copies.\n",
        "ops/u.h": "// ops/u.h\n",
        "core/cuda/loops.cuh": "// core/cuda/loops.cuh — launches (core/tensor.h's views).\n",
        "tools/x.py": '#!/usr/bin/env python3\n"""tools/x.py — reads core/copy.h."""\nimport os  # ops/gone.cpp\n',
        "tools/y.sh": "#!/usr/bin/env bash\n# tools/y.sh — runs tools/x.py\nls tools/gone.py\n",
    }

    def test_existing_paths_pass(self):
        self.assertEqual(self.check(self.tree(self.GOOD)), (0, "header comments name only files that exist\n"))

    def test_a_stale_path_fails_naming_file_line_and_path(self):
        for name, text, line, path in (
                ("core/a.h", "// core/a.h — see\n// ops/moved.cpp's kernel.\n#pragma once\n", 2, "ops/moved.cpp"),
                ("core/cuda/b.h", "// core/cuda/b.h — helpers are in cuda/launch.cuh.\n", 1, "cuda/launch.cuh"),
                ("tools/c.py", '"""tools/c.py — the\nformat of tools/gone.txt.\n"""\n', 2, "tools/gone.txt"),
                ("tests/d.cmake", "# tests/d.cmake — like tests/check_gone.cmake\n", 1, "tests/check_gone.cmake")):
            with self.subTest(name=name):
                rc, out = self.check(self.tree(dict(self.GOOD, **{name: text})))
                self.assertEqual(rc, 1)
                self.assertIn(f"{name}:{line}: {path}: no such file or folder in the repository\n", out)
                self.assertIn("1 stale path(s) in header comments", out)


if __name__ == "__main__":
    unittest.main()
