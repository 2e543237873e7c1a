from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(
name="my_ext",
ext_modules=[
CUDAExtension(
name="my_ext",
sources=["src/binding.cpp", "src/kernel.cu"],
extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3"]},
),
],
cmdclass={"build_ext": BuildExtension},
)
