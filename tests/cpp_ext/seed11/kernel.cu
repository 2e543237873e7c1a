#include <torch/extension.h>
__global__ void scale_kernel(const float* in, float* out, float s, int N) {
int i = blockIdx.x * blockDim.x + threadIdx.x;
if (i < N) out[i] = in[i] * s;
}
torch::Tensor scale_cuda(torch::Tensor x, double s) {
TORCH_CHECK(x.is_cuda(), "x must be cuda");
TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
auto y = torch::empty_like(x);
int N = x.numel();
int block = 256;
int grid = (N + block - 1) / block;
scale_kernel<<<grid, block>>>(x.data_ptr<float>(), y.data_ptr<float>(),
static_cast<float>(s), N);
return y;
}
