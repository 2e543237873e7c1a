// ember's C++ extension API, CUDA: the current stream of ember.cuda (at::cuda::
// getCurrentCUDAStream), a device guard, and the launch-check macros. Needs the CUDA runtime
// headers (CUDAExtension and load(with_cuda=True) put them on the include path).
#pragma once

#include <cuda_runtime_api.h>

#include "core.h"

#define C10_CUDA_CHECK(EXPR)                                                                 \
  do {                                                                                       \
    const cudaError_t __err = EXPR;                                                          \
    TORCH_CHECK(__err == cudaSuccess, "CUDA error: ", cudaGetErrorString(__err));            \
  } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())

namespace c10 __attribute__((visibility("hidden"))) {
namespace cuda {

// A stream of ember.cuda: its cudaStream_t is the Python stream's ``cuda_stream`` handle.
class CUDAStream {
 public:
  CUDAStream(py::object stream, DeviceIndex index)
      : stream_(std::move(stream)), index_(index) {}
  cudaStream_t stream() const {
    return reinterpret_cast<cudaStream_t>(stream_.attr("cuda_stream").cast<uintptr_t>());
  }
  operator cudaStream_t() const { return stream(); }
  DeviceIndex device_index() const { return index_; }
  Device device() const { return Device(kCUDA, index_); }
  int64_t id() const { return static_cast<int64_t>(stream_.attr("stream_id").cast<int64_t>()); }
  void synchronize() const { stream_.attr("synchronize")(); }
  bool query() const { return stream_.attr("query")().cast<bool>(); }
  const py::object& py_object() const { return stream_; }

 private:
  py::object stream_;
  DeviceIndex index_;
};

inline py::handle ember_cuda() {
  static py::handle m = py::module_::import("ember.cuda").release();
  return m;
}
inline DeviceIndex current_device() { return static_cast<DeviceIndex>(ember_cuda().attr("current_device")().cast<int>()); }
inline CUDAStream getCurrentCUDAStream(DeviceIndex index = -1) {
  if (index < 0) index = current_device();
  return CUDAStream(ember_cuda().attr("current_stream")(int(index)), index);
}
inline CUDAStream getDefaultCUDAStream(DeviceIndex index = -1) {
  if (index < 0) index = current_device();
  return CUDAStream(ember_cuda().attr("default_stream")(int(index)), index);
}
inline void setCurrentCUDAStream(const CUDAStream& s) { ember_cuda().attr("set_stream")(s.py_object()); }
inline DeviceIndex device_count() { return static_cast<DeviceIndex>(ember_cuda().attr("device_count")().cast<int>()); }

// Makes a device current for a scope (c10::cuda::CUDAGuard); the optional one does nothing
// for a CPU device or none.
class OptionalCUDAGuard {
 public:
  OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(std::optional<Device> d) { if (d) set_device(*d); }
  explicit OptionalCUDAGuard(Device d) { set_device(d); }
  ~OptionalCUDAGuard() {
    if (prev_ >= 0) {
      try { ember_cuda().attr("set_device")(int(prev_)); } catch (...) {}
    }
  }
  void set_device(Device d) {
    if (!d.is_cuda()) return;
    if (prev_ < 0) prev_ = current_device();
    ember_cuda().attr("set_device")(int(d.has_index() ? d.index() : prev_));
  }
  void set_index(DeviceIndex i) { set_device(Device(kCUDA, i)); }

 private:
  DeviceIndex prev_ = -1;
};
class CUDAGuard : public OptionalCUDAGuard {
 public:
  explicit CUDAGuard(DeviceIndex i) : OptionalCUDAGuard(Device(kCUDA, i)) {}
  explicit CUDAGuard(Device d) : OptionalCUDAGuard(d) {}
};

}  // namespace cuda
}  // namespace c10

namespace at __attribute__((visibility("hidden"))) {
namespace cuda {
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
using c10::cuda::setCurrentCUDAStream;
using c10::cuda::current_device;
using c10::cuda::device_count;
using c10::cuda::CUDAGuard;
using c10::cuda::OptionalCUDAGuard;
inline py::object getCurrentDeviceProperties() {
  return c10::cuda::ember_cuda().attr("get_device_properties")(int(current_device()));
}
}  // namespace cuda
// at::device_of(t): the tensor's device, for OptionalCUDAGuard
inline std::optional<Device> device_of(const Tensor& t) {
  if (!t.defined()) return std::nullopt;
  return t.device();
}
}  // namespace at
