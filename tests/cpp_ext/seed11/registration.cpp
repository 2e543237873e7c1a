// Seed 002 §11.3: the extension's op as a dispatcher op, ember.ops.myext.scale(x, s).
#include <torch/library.h>
torch::Tensor scale_cuda(torch::Tensor x, double s);
TORCH_LIBRARY(myext, m) {
  m.def("scale(Tensor x, float s) -> Tensor");
}
TORCH_LIBRARY_IMPL(myext, CUDA, m) {
  m.impl("scale", scale_cuda);
}
