// The CPU twin of seed 002 §11's kernel.cu: the same host function, with the kernel's body run
// as a loop on the host. On ember's simulated CUDA device, device memory is host memory, so the
// twin runs the seed's binding on CUDA tensors where no GPU is.
#include <torch/extension.h>
static void scale_kernel(const float* in, float* out, float s, int N) {
  for (int i = 0; i < N; ++i) out[i] = in[i] * s;
}
torch::Tensor scale_cuda(torch::Tensor x, double s) {
  TORCH_CHECK(x.is_cuda(), "x must be cuda");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
  auto y = torch::empty_like(x);
  int N = x.numel();
  scale_kernel(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(s), N);
  return y;
}
