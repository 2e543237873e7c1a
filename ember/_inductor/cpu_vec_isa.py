"""``ember._inductor.cpu_vec_isa`` (PyTorch's ``torch._inductor.cpu_vec_isa``): the vector
instruction set generated kernels are built for, and the compiler flags that select it.

The ISA follows ``ember.backends.cpu.get_cpu_capability()``, so ``ATEN_CPU_CAPABILITY`` steers
compiled kernels as it steers PyTorch's (``default`` gives scalar-ISA builds, ``avx2`` keeps an
AVX512 machine's kernels to 256-bit vectors). When the capability is the CPU's own best, the
build is ``-march=native`` (the ISA plus everything else this CPU has, tuned for it); a
capability set below the hardware's gets the ISA's explicit flags instead, since
``-march=native`` would bring the wider instructions back. The loops vectorise through
``#pragma omp simd``; ``-mprefer-vector-width`` makes gcc use the ISA's full register width
(it prefers 256-bit vectors on AVX512 CPUs otherwise).
"""
import dataclasses

__all__ = ["VecISA", "VecAVX512", "VecAVX2", "VecSVE256", "VecVSX", "VecZVECTOR",
           "invalid_vec_isa", "pick_vec_isa"]


@dataclasses.dataclass(frozen=True)
class VecISA:
    name: str  # PyTorch's str(isa)
    bit_width: int  # vector register width; 0 for the scalar (DEFAULT) build
    arch_flags: tuple  # compiler flags that enable the ISA
    capability: str  # the get_cpu_capability() value it stands for

    def __str__(self):
        return self.name

    def __bool__(self):  # PyTorch: the invalid ISA is falsy
        return self.bit_width > 0

    def nelements(self, itemsize=4):
        """Elements of ``itemsize`` bytes in one vector register."""
        return self.bit_width // (8 * itemsize)


VecAVX512 = VecISA("avx512", 512, ("-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw",
                                   "-mfma", "-mprefer-vector-width=512"), "AVX512")
VecAVX2 = VecISA("avx2", 256, ("-mavx2", "-mfma", "-mf16c"), "AVX2")
VecSVE256 = VecISA("asimd", 256, ("-march=armv8-a+sve", "-msve-vector-bits=256"), "SVE256")
VecVSX = VecISA("vsx", 256, ("-mvsx",), "VSX")
VecZVECTOR = VecISA("zvector", 256, ("-mvx", "-mzvector"), "ZVECTOR")
invalid_vec_isa = VecISA("INVALID_VEC_ISA", 0, (), "DEFAULT")

_BY_CAPABILITY = {isa.capability: isa for isa in
                  (VecAVX512, VecAVX2, VecSVE256, VecVSX, VecZVECTOR, invalid_vec_isa)}


def pick_vec_isa():
    """The ISA of ``get_cpu_capability()`` (``invalid_vec_isa`` for DEFAULT)."""
    from ember.backends.cpu import get_cpu_capability
    return _BY_CAPABILITY[get_cpu_capability()]


def build_flags():
    """The compiler flags that select :func:`pick_vec_isa`'s ISA for generated kernels."""
    from ember.backends.cpu import _hardware_capability
    isa = pick_vec_isa()
    if isa.capability == _hardware_capability():
        return ("-march=native",) + (("-mprefer-vector-width=512",) if isa is VecAVX512 else ())
    return isa.arch_flags
