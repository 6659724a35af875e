// core/device.cpp — device names.
#include "core/device.h"

#include "core/error.h"

namespace ks {

std::string Device::str() const {
  return type == DeviceType::CPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5) {
    size_t used = 0;
    int i = -1;
    try {
      i = std::stoi(s.substr(5), &used);
    } catch (...) {
    }
    if (used == s.size() - 5 && i >= 0) return Device::cuda(i);
  }
  throw Error(str("unknown device '", s, "' (expected cpu, cuda or cuda:N)"));
}

}  // namespace ks
