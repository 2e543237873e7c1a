// ember.cuda's current stream seen from C++ (at::cuda::getCurrentCUDAStream), as an op.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
TORCH_LIBRARY_FRAGMENT(myext, m) {
  m.def("current_stream(int device) -> int", [](int64_t device) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    cudaStream_t s = at::cuda::getCurrentCUDAStream();
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(s));
  });
}
