"""The C GEMM template of ``max-autotune`` (PyTorch's
``torch._inductor.codegen.cpp_gemm_template``).

``C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]`` for float32/float64 operands of any strides,
instantiated with a :class:`GemmConfig` (the block sizes and thread count autotuning picks):

- OpenMP threads take (batch, BM-row block, BN-column block) tiles of C;
- B is first copied, once per call, into contiguous zero-padded panels of BN columns (so a
  transposed or strided B is read in its own memory order, once);
- each tile walks K in BK steps, a register-blocked micro-kernel adding MR x NR pieces of
  ``A @ panel`` into the tile's accumulator, its NR loops unrolled into vector FMAs;
- when K is done, each element of the tile goes through the *epilogue*: the pointwise
  consumers of the product that the scheduler fused into the template (bias add, relu, gelu, a
  residual add), whose C comes from :class:`~ember._inductor.codegen.cpp.CppKernel` (the same
  ``ops`` handler every fused kernel uses), with the product's element in the local ``acc``.

The product is stored to memory only if someone outside the kernel reads it.
"""
from dataclasses import dataclass

import ember

from .cpp import CTYPES

__all__ = ["GemmConfig", "CppGemmTemplate", "gemm_configs"]


@dataclass(frozen=True)
class GemmConfig:
    """One instantiation: MR x NR register block, BM x BN x BK cache block, threads."""
    mr: int
    nr: int
    bm: int
    bn: int
    bk: int
    threads: int

    @property
    def name(self):
        return (f"cpp_gemm_mr{self.mr}_nr{self.nr}_bm{self.bm}_bn{self.bn}_bk{self.bk}"
                f"_t{self.threads}")


def gemm_configs(dtype, m, n, k, threads):
    """The configurations autotuning tries for an ``m x k @ k x n`` product: three register
    blocks (4 or 6 rows; one or two 64-byte lines of columns, the vector width), each with two
    cache blocks, on one thread and on ``threads``. The blocks shrink to the problem so small
    products do not compute padding."""
    lanes = 64 // dtype.itemsize  # elements in one 64-byte line: 16 floats, 8 doubles
    out = []
    for mr, nr in ((4, lanes), (6, lanes), (4, 2 * lanes)):
        for bm, bn in ((8 * mr, 4 * nr), (4 * mr, 8 * nr)):
            bm = max(mr, min(bm, _round_up(m, mr)))
            bn = max(nr, min(bn, _round_up(n, nr)))
            # the B block one K step reads (bk x bn) stays within 128 KiB, in the L2 cache
            bk = max(1, min(k, 128 * 1024 // (bn * dtype.itemsize)))
            for t in sorted({1, threads}):
                cfg = GemmConfig(mr, nr, bm, bn, bk, t)
                if cfg not in out:
                    out.append(cfg)
    return out


def _round_up(x, step):
    return -(-x // step) * step


@dataclass(frozen=True)
class Operand:
    """How the template reads one operand: element ``[b, row, col]`` is at
    ``offset + b * batch + row * rows + col * cols`` from the buffer's data pointer."""
    name: str
    offset: int
    batch: int
    rows: int
    cols: int

    def at(self, b, row, col):
        terms = [str(self.offset)] if self.offset else []
        for var, stride in ((b, self.batch), (row, self.rows), (col, self.cols)):
            if stride and var != "0":
                var = f"({var})" if " " in var else var
                terms.append(var if stride == 1 else f"{var} * {stride}")
        return " + ".join(terms) or "0"


class CppGemmTemplate:
    """The GEMM of one matrix product: ``batch x m x k @ k x n`` into ``out`` (an
    :class:`Operand` with the product's strides) in ``dtype``."""

    def __init__(self, a, b, out, batch, m, n, k, dtype):
        if dtype not in (ember.float32, ember.float64):
            raise NotImplementedError(f"the C GEMM template computes float32/float64, not {dtype}")
        self.a, self.b, self.out = a, b, out
        self.batch, self.m, self.n, self.k = batch, m, n, k
        self.dtype = dtype

    def render(self, name, cfg, params, epilogue=None, store=True, comment=""):
        """The C of kernel ``name``: ``params`` are its C parameters (the operands are read
        through ``ptr_<name>``); ``epilogue`` is ``(prelude, lines)`` run for each element of C
        with ``acc`` holding the product and ``i``/``j``/``b`` its position; ``store`` writes
        the product itself to ``ptr_<out>``."""
        t = CTYPES[self.dtype]
        mr, nr, bm, bn, bk = cfg.mr, cfg.nr, cfg.bm, cfg.bn, cfg.bk
        a, b, out = self.a, self.b, self.out
        zero = "0.0" if self.dtype == ember.float64 else "0.0f"
        lines = [f"/* {comment} */" if comment else None]
        lines += self._micro_kernel(f"{name}_micro", cfg, t)
        lines += [f"static void {name}({', '.join(params)})", "{"]
        nb = -(-self.n // bn)
        nblocks = (self.batch, -(-self.m // bm), nb)
        panels = max(1, self.batch * nb * self.k * bn)
        lines += [
            "    /* B in BN-column panels, each contiguous and zero-padded to whole NR pieces:",
            "       packed once, read by every row block */",
            f"    {t}* restrict packed = ({t}*)malloc(sizeof({t}) * {panels});",
            "    if (packed == NULL)",
            "    {",
            f'        fputs("{name}: out of memory for the packed B panels\\n", stderr);',
            "        abort();",
            "    }",
        ]
        ind = "    "
        if cfg.threads > 1:
            lines += [f"    #pragma omp parallel num_threads({cfg.threads})", "    {"]
            ind = "        "
            lines.append(f"{ind}#pragma omp for collapse(2) schedule(static)")
        lines += [ind + ln for ln in self._pack(t, zero, bn, nb)]
        if cfg.threads > 1:
            lines.append(f"{ind}#pragma omp for collapse(3) schedule(static)")
        body = [
            f"for (int64_t b = 0; b < {self.batch}; b++)",
            f"for (int64_t ib = 0; ib < {nblocks[1]}; ib++)",
            f"for (int64_t jb = 0; jb < {nblocks[2]}; jb++)",
            "{",
            f"    const int64_t i0 = ib * {bm}, i1 = i0 + {bm} < {self.m} ? i0 + {bm} : {self.m};",
            f"    const int64_t j0 = jb * {bn}, j1 = j0 + {bn} < {self.n} ? j0 + {bn} : {self.n};",
            f"    const int64_t ncols = (j1 - j0 + {nr - 1}) / {nr} * {nr};",
            f"    const {t}* restrict panel = packed + (b * {nb} + jb) * {self.k * bn};",
            f"    {t} tile[{bm} * {bn}];",
            f"    for (int64_t e = 0; e < {bm * bn}; e++) tile[e] = {zero};",
            f"    for (int64_t k0 = 0; k0 < {self.k}; k0 += {bk})",
            "    {",
            f"        const int64_t kc = k0 + {bk} < {self.k} ? {bk} : {self.k} - k0;",
            f"        for (int64_t i = i0; i < i1; i += {mr})",
            f"            {name}_micro(kc, ptr_{a.name} + {a.at('b', 'i', 'k0')}, "
            f"panel + k0 * {bn}, tile + (i - i0) * {bn}, ncols, "
            f"i1 - i < {mr} ? i1 - i : {mr});",
            "    }",
        ]
        prelude, epi = epilogue or ([], [])
        body += ["    for (int64_t i = i0; i < i1; i++)",
                 "    {",
                 "        #pragma omp simd",
                 "        for (int64_t j = j0; j < j1; j++)",
                 "        {",
                 f"            const {t} acc = tile[(i - i0) * {bn} + (j - j0)];"]
        if store:
            body.append(f"            ptr_{out.name}[{out.at('b', 'i', 'j')}] = acc;")
        body += ["            " + ln for ln in prelude + epi]
        body += ["        }", "    }", "}"]
        lines += [ind + ln for ln in body]
        if cfg.threads > 1:
            lines.append("    }")
        lines += ["    free(packed);", "}"]
        return "\n".join(ln for ln in lines if ln is not None)

    def _pack(self, t, zero, bn, nb):
        """Copy B into ``packed``: panel (b, jb) holds B[b, :, jb*bn:(jb+1)*bn] row by row
        (row k at ``k * bn``), zeros past the last column; the loops follow B's smaller stride
        so memory is read in order."""
        b = self.b
        src = f"ptr_{b.name}[{b.at('b', 'kk', 'j0 + jj')}]"
        if abs(b.cols) <= abs(b.rows) or self.k == 1:
            loops = [f"    for (int64_t kk = 0; kk < {self.k}; kk++)",
                     f"        for (int64_t jj = 0; jj < {bn}; jj++)"]
        else:
            loops = [f"    for (int64_t jj = 0; jj < {bn}; jj++)",
                     f"        for (int64_t kk = 0; kk < {self.k}; kk++)"]
        return [f"for (int64_t b = 0; b < {self.batch}; b++)",
                f"for (int64_t jb = 0; jb < {nb}; jb++)",
                "{",
                f"    {t}* restrict panel = packed + (b * {nb} + jb) * {self.k * bn};",
                f"    const int64_t j0 = jb * {bn}, "
                f"j1 = j0 + {bn} < {self.n} ? j0 + {bn} : {self.n};",
                *loops,
                f"            panel[kk * {bn} + jj] = j0 + jj < j1 ? {src} : {zero};",
                "}"]

    def _micro_kernel(self, name, cfg, t):
        """``c[r, :ncols] += a[r, :kc] @ panel[:kc, :ncols]`` for ``rows`` <= MR rows, NR
        columns at a time in MR x NR accumulators the compiler keeps in vector registers. A
        block's last rows (``rows < MR``) still run all MR accumulators, the missing rows
        repeating the last one's loads into tile rows no one reads: a one-row loop would wait
        on each accumulator's FMA latency, several times slower per row. (gcc 12 keeps one of
        the accumulators in memory here, a store and load on its FMA's path: about half of
        OpenBLAS's speed, see benchmarks/NOTES.md.)"""
        mr, nr, bn = cfg.mr, cfg.nr, cfg.bn
        a_k = f"kk * {self.a.cols}" if self.a.cols != 1 else "kk"
        return [
            f"static inline void {name}(int64_t kc, const {t}* restrict a, "
            f"const {t}* restrict panel, {t}* restrict c, int64_t ncols, int rows)",
            "{",
            f"    const {t}* arow[{mr}];",
            f"    for (int r = 0; r < {mr}; r++)",
            f"        arow[r] = a + (r < rows ? r : rows - 1) * {self.a.rows};",
            f"    for (int64_t jj = 0; jj < ncols; jj += {nr})",
            "    {",
            f"        {t} acc[{mr}][{nr}];",
            f"        #pragma GCC unroll {mr}",
            f"        for (int r = 0; r < {mr}; r++)",
            "            #pragma omp simd",
            f"            for (int q = 0; q < {nr}; q++)",
            f"                acc[r][q] = c[r * {bn} + jj + q];",
            "        for (int64_t kk = 0; kk < kc; kk++)",
            "        {",
            f"            const {t}* restrict p = panel + kk * {bn} + jj;",
            f"            #pragma GCC unroll {mr}",
            f"            for (int r = 0; r < {mr}; r++)",
            "            {",
            f"                const {t} av = arow[r][{a_k}];",
            "                #pragma omp simd",
            f"                for (int q = 0; q < {nr}; q++)",
            "                    acc[r][q] += av * p[q];",
            "            }",
            "        }",
            f"        #pragma GCC unroll {mr}",
            f"        for (int r = 0; r < {mr}; r++)",
            "            #pragma omp simd",
            f"            for (int q = 0; q < {nr}; q++)",
            f"                c[r * {bn} + jj + q] = acc[r][q];",
            "    }",
            "}",
            "",
        ]
