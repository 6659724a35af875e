// core/device.h — where a tensor's bytes live: the CPU or a CUDA device.
//
// A Device is a small value (type + index). It says nothing about whether the
// device exists; backends check that when they allocate.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace ks {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::CUDA, i}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "cuda:0"
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

// Parses "cpu", "cuda" or "cuda:N"; throws ks::Error otherwise.
Device parse_device(const std::string& s);

}  // namespace ks
