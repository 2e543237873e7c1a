// Seed 002 §4.5, verbatim but for the `using` line: the seed's snippet names `Tensor` without a
// namespace, which PyTorch's <torch/library.h> does not provide either.
#include <torch/library.h>
using at::Tensor;
// Declare the op. Namespace "myops". Schema is C++-typed Python.
TORCH_LIBRARY(myops, m) {
m.def("triple(Tensor x) -> Tensor");
}
// Implement for CPU.
Tensor triple_cpu(const Tensor& x) {
return x * 3;
}
TORCH_LIBRARY_IMPL(myops, CPU, m) {
m.impl("triple", triple_cpu);
}
// Implement for CUDA.
Tensor triple_cuda(const Tensor& x) {
return x * 3;
}
TORCH_LIBRARY_IMPL(myops, CUDA, m) {
m.impl("triple", triple_cuda);
}
