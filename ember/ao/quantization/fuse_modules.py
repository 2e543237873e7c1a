"""``torch.ao.quantization.fuse_modules`` (and ``fuser_method_mappings``): replace a listed run
of modules (conv, batch norm, ReLU; linear, ReLU ...) by one module, the rest by Identity.
For evaluation the batch norm folds into the convolution's weights; for quantization-aware
training (``fuse_modules_qat``) the run becomes an ``ao.nn.intrinsic`` sequence that
``prepare_qat`` swaps for its QAT module."""
import copy

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ...nn.utils.parametrize import type_before_parametrizations
from ..nn import intrinsic as nni

__all__ = ["fuse_known_modules", "fuse_modules", "fuse_modules_qat", "fuse_conv_bn",
           "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn", "get_fuser_method"]


def _check_bn(bn, kind):
    # (PyTorch names BatchNorm2d for every convolution, BatchNorm1d for Linear)
    if not bn.affine:
        raise AssertionError(f"Only support fusing {kind} with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError(f"Only support fusing {kind} with tracking_running_stats set to "
                             f"True")


def fuse_conv_bn(is_qat, conv, bn):
    """Conv and BatchNorm: an ``intrinsic.ConvBn*d`` for QAT, else the folded convolution."""
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if not is_qat:
        return fuse_conv_bn_eval(conv, bn)
    if bn.num_features != conv.out_channels:
        raise AssertionError("Output channel of Conv2d must match num_features of BatchNorm2d.")
    _check_bn(bn, "BatchNorm2d")
    fused = {nn.Conv1d: nni.ConvBn1d, nn.Conv2d: nni.ConvBn2d,
             nn.Conv3d: nni.ConvBn3d}.get(type(conv))
    if fused is None:
        raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn)}")
    return fused(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """Conv, BatchNorm and ReLU: an ``intrinsic.ConvBnReLU*d`` for QAT, else the folded
    convolution and the ReLU (``intrinsic.ConvReLU*d``)."""
    if not conv.training == bn.training == relu.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        if bn.num_features != conv.out_channels:
            raise AssertionError("Output channel of Conv2d must match num_features of "
                                 "BatchNorm2d")
        _check_bn(bn, "BatchNorm2d")
        fused = {nn.Conv1d: nni.ConvBnReLU1d, nn.Conv2d: nni.ConvBnReLU2d,
                 nn.Conv3d: nni.ConvBnReLU3d}.get(type(conv))
        if fused is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn, relu)}")
        return fused(conv, bn, relu)
    fused = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d,
             nn.Conv3d: nni.ConvReLU3d}.get(type(conv))
    if fused is None:
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return fused(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if not is_qat:
        return fuse_linear_bn_eval(linear, bn)
    if bn.num_features != linear.out_features:
        raise AssertionError("Output features of Linear must match num_features of "
                             "BatchNorm1d")
    _check_bn(bn, "BatchNorm1d")
    return nni.LinearBn1d(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    if convt.training != bn.training:
        raise AssertionError("ConvTranspose and BN both must be in the same mode (train or "
                             "eval).")
    if is_qat:
        raise Exception("Fusing ConvTranspose+BatchNorm not yet supported in QAT.")
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _sequential_wrapper2(sequential):
    def fuser_method(is_qat, m1, m2):
        return sequential(m1, m2)
    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU1d),
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU3d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(nni.LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _sequential_wrapper2(nni.BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _sequential_wrapper2(nni.BNReLU3d),
    (nn.ConvTranspose1d, nn.BatchNorm1d): fuse_convtranspose_bn,
    (nn.ConvTranspose2d, nn.BatchNorm2d): fuse_convtranspose_bn,
    (nn.ConvTranspose3d, nn.BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The fuser of a tuple of module types (``additional_fuser_method_mapping`` first)."""
    mappings = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser_method = mappings.get(op_list)
    if fuser_method is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return fuser_method


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """The fused module then Identities, the first module's pre-hooks and the last's hooks
    moved onto the fused one."""
    types = tuple(type_before_parametrizations(m) for m in mod_list)
    fuser_method = get_fuser_method(types, additional_fuser_method_mapping)
    fused = fuser_method(is_qat, *mod_list)
    for pre_hook_fn in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(pre_hook_fn)
    mod_list[0]._forward_pre_hooks.clear()
    for hook_fn in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook_fn)
    mod_list[-1]._forward_hooks.clear()
    new_mod = [fused]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        new_mod.append(identity)
    return new_mod


def _get_module(model, submodule_key):
    for token in submodule_key.split("."):
        model = getattr(model, token)
    return model


def _set_module(model, submodule_key, module):
    *path, last = submodule_key.split(".")
    for token in path:
        model = getattr(model, token)
    setattr(model, last, module)


def _fuse_modules_helper(model, modules_to_fuse, is_qat, fuser_func, fuse_custom_config_dict):
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    mod_list = [_get_module(model, item) for item in modules_to_fuse]
    new_mod_list = fuser_func(mod_list, is_qat, additional)
    for item, new_mod in zip(modules_to_fuse, new_mod_list):
        _set_module(model, item, new_mod)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace=False, fuser_func=fuse_known_modules,
                  fuse_custom_config_dict=None):
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(m, str) for m in modules_to_fuse):  # one list of names
        _fuse_modules_helper(model, modules_to_fuse, is_qat, fuser_func,
                             fuse_custom_config_dict)
    else:
        for module_list in modules_to_fuse:
            _fuse_modules_helper(model, module_list, is_qat, fuser_func,
                                 fuse_custom_config_dict)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse each list of module names in ``modules_to_fuse`` (or the one list) for
    evaluation."""
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func,
                         fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """Fuse for quantization-aware training (the ``ao.nn.intrinsic`` sequences)."""
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func,
                         fuse_custom_config_dict)
