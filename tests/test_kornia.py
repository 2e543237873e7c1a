"""kornia on ember through ``ember.as_torch``: color conversions, filters (blurs, sobel, canny),
geometric warps through grid_sample with gradients for images and matrices, homographies,
``kornia.geometry.linalg`` and rotation conversions, SSIM/PSNR losses, augmentations with fixed
parameters, and intensity enhancements computing PyTorch's numbers. Each case of
tests/_kornia_ops.py runs in PyTorch here and in ember in one ``python -m ember.as_torch``
subprocess."""
import pytest

from helpers import assert_saved_arrays_match, results_beside_pytorch

NAMES = ["color", "filters", "warp", "homography", "linalg", "losses", "augmentation",
         "enhance"]
# the DLT homography's float32 SVD and LU solves run in NumPy's LAPACK (OpenBLAS) and in
# PyTorch's (MKL); their roundings differ by CPU model, and the system is ill-conditioned: one
# gradient entry of 32 was 4.5e-4 apart on an AMD EPYC (2e-4 holds on the Intel machines)
RTOL = {"homography": 1e-3}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of tests/_kornia_ops.py: name -> (PyTorch's result, ember's)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("kornia")
    import _kornia_ops
    directory = tmp_path_factory.mktemp("kornia")
    theirs = {name: _kornia_ops.run(torch, name) for name in NAMES}
    return results_beside_pytorch("_kornia_ops.py", directory, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_kornia_matches_pytorch(results, name):
    """Every output and the gradient of a weighted sum of them for each input (images, angles,
    scales, corner points, axis-angle vectors) equals PyTorch's; edge maps and the parameter
    names of an augmentation exactly."""
    theirs, mine = results[name]
    assert_saved_arrays_match(mine, theirs, rtol=RTOL.get(name, 2e-4), atol=1e-5,
                              finite_scale=True)
