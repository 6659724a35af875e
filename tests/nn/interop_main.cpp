// tests/nn/interop_main.cpp — writes a checkpoint and asks Python to open it
// with the safetensors package or torch (whichever the machine has) and to
// compare one tensor with the values we wrote. Exit 77 (ctest: skipped) with
// a message when no python3 with either is present.
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/factory.h"
#include "nn/checkpoint.h"
#include "nn/layers.h"

int main() {
  std::string python;
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    std::string probe = std::string(candidate) +
                        " -c 'import importlib.util as u, sys; "
                        "sys.exit(0 if (u.find_spec(\"safetensors\") or u.find_spec(\"torch\")) else 1)' 2>/dev/null";
    if (std::system(probe.c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    std::printf("SKIPPED: no python3 with safetensors or torch on this machine\n");
    return 77;
  }
  ks::manual_seed(11);
  ks::nn::Linear layer(3, 4);
  std::string path = "/tmp/ks_interop_" + std::to_string(getpid()) + ".safetensors";
  ks::nn::save_checkpoint(path, layer, nullptr, {{"format", "keystone"}});
  std::vector<float> w = layer.weight.to_vector<float>();
  std::string expected;
  for (float v : w) expected += std::to_string(v) + ",";
  std::string script =
      "import json, struct, sys\n"
      "path = sys.argv[1]; expected = [float(x) for x in sys.argv[2].split(',') if x]\n"
      "try:\n"
      "    from safetensors.numpy import load_file\n"
      "    w = load_file(path)['weight'].reshape(-1).tolist(); how = 'safetensors'\n"
      "except ImportError:\n"
      "    import torch\n"
      "    raw = open(path, 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]; h = json.loads(raw[8:8 + n])\n"
      "    b, e = h['weight']['data_offsets']; assert h['weight']['dtype'] == 'F32'\n"
      "    t = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]), "
      "dtype=torch.float32).reshape(h['weight']['shape'])\n"
      "    assert list(t.shape) == [4, 3] and h['__metadata__']['format'] == 'keystone'\n"
      "    w = t.reshape(-1).tolist(); how = 'torch ' + torch.__version__\n"
      "ok = len(w) == len(expected) and all(abs(a - b) < 1e-5 for a, b in zip(w, expected))\n"
      "print('opened with', how, 'match' if ok else 'MISMATCH'); sys.exit(0 if ok else 1)\n";
  std::string script_path = path + ".py";
  FILE* f = std::fopen(script_path.c_str(), "w");
  std::fputs(script.c_str(), f);
  std::fclose(f);
  int rc = std::system((python + " " + script_path + " " + path + " " + expected).c_str());
  std::remove(path.c_str());
  std::remove(script_path.c_str());
  return rc == 0 ? 0 : 1;
}
