"""``FlopCounterMode``: counts the floating-point operations of the matrix products,
convolutions and attention run inside it, in total and per module (PyTorch's
``torch.utils.flop_counter``).

A ``TorchDispatchMode`` sees every op below autograd, backward ops included; an op with a
formula in the registry (``register_flop_formula``) adds its count to every module that
:class:`~ember.utils.module_tracker.ModuleTracker` says is running, and to "Global". Formulas
take the arguments' shapes (``out_shape`` the result's) unless registered with
``get_raw=True``. The formulas and the printed table are PyTorch's, so the counts and the text
equal PyTorch's for the same program.
"""
import warnings
from collections import defaultdict
from functools import wraps
from math import prod

from .. import ops as _ops
from .._ops.overload import OpOverloadPacket
from .._tensor import Tensor
from ._python_dispatch import TorchDispatchMode
from ._pytree import tree_map, tree_map_
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

aten = _ops.aten


def get_shape(i):
    if isinstance(i, Tensor):
        return i.shape
    return i


flop_registry = {}


def shape_wrapper(f):
    @wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)
    return nf


def register_flop_formula(targets, get_raw=False):
    """Decorator registering a flop formula for an op packet (``ember.ops.mylib.foo``) or a list
    of them. The formula gets the op's arguments (tensors replaced by their shapes and the result's
    shape as ``out_shape``, or the raw values and ``out_val`` when ``get_raw``) and returns the
    count."""
    def register_fun(flop_formula):
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)

        def register(target):
            # PyTorch also takes Triton kernels and higher-order operators; ember has neither
            # as a dispatch target (its ``cond`` runs eagerly, so the mode sees the branch's ops)
            if not isinstance(target, OpOverloadPacket):
                raise ValueError(
                    f"register_flop_formula(targets): expected each target to be "
                    f"OpOverloadPacket (i.e. ember.ops.mylib.foo), got {target} which is of type "
                    f"{type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = flop_formula

        tree_map_(register, targets)
        return flop_formula
    return register_fun


@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    # one multiply and one add per term of each output's dot product (2k, not 2k - 1)
    return m * n * 2 * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    """Count flops for addmm."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs):
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    """Count flops for the baddbmm operation."""
    return bmm_flop(a_shape, b_shape)


@register_flop_formula(aten._scaled_mm)
def _scaled_mm_flop(a_shape, b_shape, scale_a_shape, scale_b_shape, bias_shape=None,
                    scale_result_shape=None, out_dtype=None, use_fast_accum=False,
                    out_shape=None, **kwargs):
    """Count flops for _scaled_mm."""
    return mm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False):
    """Count flops for convolution: only the products (and their sums), not the bias. A regular
    convolution convolves the filter at each point of the output's spatial shape, a transposed
    one at each point of the input's; times the batch size and both channel counts."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula(aten.convolution)
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs):
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape, **kwargs):
    """Count flops for convolution_backward. The input's gradient is the transposed convolution
    of grad_out with the weight (a regular one for a transposed convolution); the weight's is
    the convolution of the input with grad_out (of grad_out with the input when transposed), with
    batch and channel dimensions swapped."""
    def t(shape):
        return [shape[1], shape[0]] + list(shape[2:])
    flop_count = 0
    if output_mask[0]:
        grad_input_shape = get_shape(out_shape[0])
        flop_count += conv_flop_count(grad_out_shape, w_shape, grad_input_shape, not transposed)
    if output_mask[1]:
        grad_weight_shape = get_shape(out_shape[1])
        if transposed:
            flop_count += conv_flop_count(t(grad_out_shape), t(x_shape), t(grad_weight_shape),
                                          transposed=False)
        else:
            flop_count += conv_flop_count(t(x_shape), t(grad_out_shape), t(grad_weight_shape),
                                          transposed=False)
    return flop_count


def sdpa_flop_count(query_shape, key_shape, value_shape):
    """Count flops for self-attention: the two batched products (scores, then scores @ value).
    Grouped-query attention (fewer key/value heads) counts the query's heads."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    total_flops = 0
    total_flops += bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
    total_flops += bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v))
    return total_flops


@register_flop_formula([aten._scaled_dot_product_efficient_attention,
                        aten._scaled_dot_product_flash_attention])
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    """Count flops for self-attention (causal masking not accounted for)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape):
    """The scores recomputed, then the gradients through scores @ value (two products) and
    through query @ key (two more)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a multiple "
                             f"of key/value heads ({h_kv})")
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError("sdpa_backward_flop_count: grad_out/value/key/query shapes are "
                             "incompatible")
    total_flops = 0
    total_flops += bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
    total_flops += bmm_flop((b * h_q, s_q, d_v), (b * h_q, d_v, s_k))
    total_flops += bmm_flop((b * h_q, s_k, s_q), (b * h_q, s_q, d_v))
    total_flops += bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_q))
    total_flops += bmm_flop((b * h_q, d_q, s_q), (b * h_q, s_q, s_k))
    return total_flops


@register_flop_formula([aten._scaled_dot_product_efficient_attention_backward,
                        aten._scaled_dot_product_flash_attention_backward])
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs):
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


# ---------------------------------------------------------------------------------------------
# The table.

suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number):
    # one digit of overflow before the next suffix: 1.01B shows as 1001M, not 1.001B
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number, suffix):
    index = suffixes.index(suffix)
    value = f"{number / 1000 ** index:.3f}"
    return value + suffixes[index]


def convert_to_percent_str(num, denom):
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _is_number(s):
    try:
        float(s)
    except ValueError:
        return False
    return True


def _tabulate(rows, headers, colalign):
    """``tabulate.tabulate(rows, headers, colalign=colalign)`` in its "simple" format with
    whitespace preserved, for cells that are strings: PyTorch prints the table with the tabulate
    package after setting its ``PRESERVE_WHITESPACE`` (which tabulate 0.10 no longer reads, so
    there the modules' indentation is lost; this is the table of tabulate 0.9). A column whose
    cells all read as numbers is reprinted with format "g"; each column is at least two wider
    than its header, headers aligned as their column, two spaces between columns, a dashed rule
    under the headers."""
    cols = [list(c) for c in zip(*rows)]
    cols = [[format(float(v), "g") for v in c] if all(_is_number(v) for v in c) else c
            for c in cols]
    widths = [max([len(h) + 2] + [len(v) for v in c]) for h, c in zip(headers, cols)]

    def line(cells):
        return "  ".join(v.ljust(w) if a == "left" else v.rjust(w)
                         for v, w, a in zip(cells, widths, colalign)).rstrip()
    return "\n".join([line(headers), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in zip(*cols)])


class FlopCounterMode:
    """Context manager counting the flops run inside it.

    ``get_total_flops()`` is the total, ``get_flop_counts()`` the counts per module name (and
    "Global") and op packet; on exit, unless ``display=False``, the table of ``get_table()`` is
    printed, modules shown down to ``depth`` levels. ``custom_mapping`` adds or overrides
    formulas ({op packet: formula}). ``mods`` is accepted and ignored (modules are tracked
    without it), with PyTorch's warning."""

    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None):
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.flop_registry = {
            **flop_registry,
            **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
               for k, v in custom_mapping.items()}
        }
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self):
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        """The flop counts: {module name: {op packet: count}}."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999

        header = ["Module", "FLOP", "% Total"]
        values = []
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name, depth):
            nonlocal is_global_subsumed
            total_flops = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total_flops >= global_flops
            padding = " " * depth
            values = [[padding + mod_name, convert_num_with_suffix(total_flops, global_suffix),
                       convert_to_percent_str(total_flops, global_flops)]]
            for k, v in self.flop_counts[mod_name].items():
                values.append([padding + " - " + str(k),
                               convert_num_with_suffix(v, global_suffix),
                               convert_to_percent_str(v, global_flops)])
            return values

        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))

        # "Global" is shown only when some of its flops are outside every module shown
        if "Global" in self.flop_counts and not is_global_subsumed:
            for value in values:
                value[0] = " " + value[0]
            values = process_mod("Global", 0) + values

        if len(values) == 0:
            values = [["Global", "0", "0%"]]

        return _tabulate(values, header, ("left", "right", "right"))

    # not reentrant, as PyTorch's
    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        if self.mode is None:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        b = self.mode.__exit__(*args)
        self.mode = None  # break cycles
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return b

    def _count_flops(self, func_packet, out, args, kwargs):
        if func_packet in self.flop_registry:
            flop_count_func = self.flop_registry[func_packet]
            flop_count = flop_count_func(*args, **kwargs, out_val=out)
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += flop_count
        return out


# Ops that only read a tensor's metadata: left to a tensor subclass's own handler, as PyTorch
# leaves them (its nested tensors answer them in Python)
_METADATA_OPS = frozenset({aten.numel.default, aten.sym_numel.default})


class _FlopCounterMode(TorchDispatchMode):
    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs if kwargs else {}
        if func in _METADATA_OPS:
            return NotImplemented

        # an op without a formula may decompose into ops with one
        if func._overloadpacket not in self.counter.flop_registry:
            with self:
                r = func.decompose(*args, **kwargs)
                if r is not NotImplemented:
                    return r

        out = func(*args, **kwargs)
        return self.counter._count_flops(func._overloadpacket, out, args, kwargs)
