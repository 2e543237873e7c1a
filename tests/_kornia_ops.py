"""kornia's differentiable image operations run the same way in PyTorch and in ember (through
``ember.as_torch``): tests/test_kornia.py runs each case in PyTorch in its own process, and
``python -m ember.as_torch tests/_kornia_ops.py DIR NAMES`` runs them in ember, writing what
each computed to DIR/NAME_ember.npz.

Inputs come from NumPy with a fixed seed; augmentations get explicit parameters (degenerate
ranges or ``p=1``), so no random draw decides what they compute."""
import os
import sys

import numpy as np

# name -> what the case covers
CASES = {
    # rgb <-> grayscale, hsv, hls, lab, yuv, xyz
    "color": "kornia.color",
    # gaussian blur, box blur, sobel, spatial gradient, laplacian, median, canny
    "filters": "kornia.filters",
    # warp_affine / warp_perspective / rotate / translate / scale / resize through grid_sample,
    # gradients for the image and the matrices
    "warp": "kornia.geometry.transform",
    # get_perspective_transform, find_homography_dlt (weighted, lu and svd solvers)
    "homography": "kornia.geometry.homography",
    # compose / invert / relative transformations, transform_points, point_line_distance,
    # conversions between rotation representations
    "linalg": "kornia.geometry.linalg",
    # SSIM, PSNR (losses and metrics), total variation, gradients
    "losses": "kornia.losses",
    # kornia.augmentation with fixed parameters, AugmentationSequential and its inverse
    "augmentation": "kornia.augmentation",
    # brightness / contrast / gamma / hue / saturation, normalize, sharpness, equalize
    "enhance": "kornia.enhance",
}


def _x(rs, *shape):
    return rs.rand(*shape).astype(np.float32)


def _loss(outs, rs, torch):
    """A scalar that reaches every element of every output with its own weight."""
    return sum((o * torch.from_numpy(np.asarray(rs.randn(*o.shape), np.float32))).sum()
               for o in outs)


def run(torch, name):
    """Run case ``name``; return what was computed (outputs and gradients, as arrays)."""
    import kornia
    import kornia.augmentation as K
    import kornia.geometry as G
    rs = np.random.RandomState(0)
    img = torch.from_numpy(_x(rs, 2, 3, 16, 20)).requires_grad_()
    result, leaves = {}, {"img": img}
    if name == "color":
        C = kornia.color
        hsv = C.rgb_to_hsv(img)
        hls = C.rgb_to_hls(img)
        lab = C.rgb_to_lab(img)
        outs = [C.rgb_to_grayscale(img), hsv, C.hsv_to_rgb(hsv), hls, C.hls_to_rgb(hls), lab,
                C.lab_to_rgb(lab), C.rgb_to_yuv(img), C.rgb_to_xyz(img),
                C.bgr_to_rgb(img), C.rgb_to_linear_rgb(img)]
    elif name == "filters":
        F = kornia.filters
        gray = kornia.color.rgb_to_grayscale(img)
        magnitude, edges = F.canny(gray, 0.1, 0.2)
        outs = [F.gaussian_blur2d(img, (5, 5), (1.5, 1.5)),
                F.gaussian_blur2d(img, (3, 7), (0.8, 2.0), border_type="replicate"),
                F.box_blur(img, (3, 3)), F.sobel(img), F.spatial_gradient(img, order=2),
                F.laplacian(img, 5), F.median_blur(img, (3, 3)), magnitude,
                F.unsharp_mask(img, (3, 3), (1.0, 1.0)),
                F.bilateral_blur(img, (5, 5), 0.1, (1.5, 1.5))]
        result["canny_edges"] = edges.detach().numpy()
    elif name == "warp":
        T = G.transform
        angle = torch.tensor([30.0, -45.0], requires_grad=True)
        center = torch.tensor([[10.0, 8.0], [9.5, 7.0]])
        scale = torch.tensor([[1.2, 0.9], [0.8, 1.1]], requires_grad=True)
        M = T.get_rotation_matrix2d(center, angle, scale)
        src = torch.tensor([[[0.0, 0.0], [19.0, 0.0], [19.0, 15.0], [0.0, 15.0]]] * 2)
        dst = src + torch.from_numpy(rs.uniform(-2, 2, (2, 4, 2)).astype(np.float32))
        dst.requires_grad_()
        P = T.get_perspective_transform(src, dst)
        leaves.update(angle=angle, scale=scale, dst=dst)
        outs = [M, P, T.warp_affine(img, M, (16, 20)),
                T.warp_affine(img, M, (12, 24), mode="nearest", padding_mode="border"),
                T.warp_perspective(img, P, (16, 20), align_corners=True),
                T.warp_perspective(img, P, (16, 20), padding_mode="reflection"),
                T.rotate(img, torch.tensor([15.0, 100.0])),
                T.translate(img, torch.tensor([[2.5, -1.0], [0.0, 3.0]])),
                T.scale(img, torch.tensor([[1.5, 1.5], [0.7, 0.9]])),
                T.resize(img, (9, 13), interpolation="bilinear", antialias=False),
                T.resize(img, (24, 30), interpolation="bicubic"),
                T.hflip(img), T.crop_by_indices(img, src.long() // 2, size=(8, 10)),
                T.elastic_transform2d(img, torch.from_numpy(
                    rs.randn(2, 2, 16, 20).astype(np.float32) * 0.5)),
                T.warp_affine(img, M, (16, 20), mode="bicubic")]
    elif name == "homography":
        pts1 = torch.from_numpy(rs.uniform(0, 100, (2, 8, 2)).astype(np.float32))
        H_true = torch.from_numpy(np.array([[1.1, 0.05, 3.0], [-0.02, 0.95, -2.0],
                                            [1e-4, 2e-4, 1.0]], np.float32)).expand(2, 3, 3)
        pts2 = G.transform_points(H_true, pts1)
        pts2 = pts2 + torch.from_numpy(rs.randn(2, 8, 2).astype(np.float32) * 0.1)
        pts2.requires_grad_()
        weights = torch.from_numpy(rs.uniform(0.5, 1.0, (2, 8)).astype(np.float32))
        leaves = {"pts2": pts2}
        # (the 8-point LU solve of the float32 normal equations is ill-conditioned: its gradient
        # is rounding noise of a few percent in either library, so only its value is compared)
        outs = [G.find_homography_dlt(pts1, pts2.detach(), weights, solver="lu"),
                G.find_homography_dlt(pts1, pts2, weights, solver="svd"),
                G.find_homography_dlt(pts1[:, :4], pts2[:, :4]),
                G.get_perspective_transform(pts1[:, :4], pts2[:, :4]),
                G.homography.symmetric_transfer_error(pts1, pts2, H_true)]
        outs += [G.homography.oneway_transfer_error(pts1, pts2, outs[0])]
    elif name == "linalg":
        L = G.linalg
        conv = G.conversions
        aa = torch.from_numpy(rs.randn(3, 3).astype(np.float32)).requires_grad_()
        t = torch.from_numpy(rs.randn(3, 3, 1).astype(np.float32)).requires_grad_()
        R = conv.axis_angle_to_rotation_matrix(aa)
        T1 = torch.cat([torch.cat([R, t], -1),
                        torch.tensor([[[0.0, 0.0, 0.0, 1.0]]]).expand(3, 1, 4)], 1)
        T2 = T1.flip(0)
        pts = torch.from_numpy(rs.randn(3, 5, 3).astype(np.float32)).requires_grad_()
        line = torch.from_numpy(rs.randn(3, 3).astype(np.float32))
        leaves = {"aa": aa, "t": t, "pts": pts}
        q = conv.rotation_matrix_to_quaternion(R)
        outs = [R, L.compose_transformations(T1, T2), L.inverse_transformation(T1),
                L.relative_transformation(T1, T2), L.transform_points(T1, pts),
                L.point_line_distance(pts[:, 0], line), L.batched_dot_product(pts, pts),
                L.euclidean_distance(pts[0], pts[1]), q,
                conv.quaternion_to_rotation_matrix(q),
                conv.convert_points_to_homogeneous(pts),
                conv.convert_points_from_homogeneous(pts),
                conv.euler_from_quaternion(*q.unbind(-1))[0]]
    elif name == "losses":
        other = torch.from_numpy(_x(rs, 2, 3, 16, 20))
        M = kornia.metrics
        outs = [kornia.losses.ssim_loss(img, other, 5), kornia.losses.psnr_loss(img, other, 1.0),
                M.ssim(img, other, 7), M.psnr(img, other, 1.0),
                kornia.losses.total_variation(img), kornia.losses.charbonnier_loss(img, other),
                kornia.losses.MS_SSIMLoss(sigmas=(0.5, 1.0, 2.0))(img, other)]
    elif name == "augmentation":
        x = img[:, :, :16, :16]
        seq = K.AugmentationSequential(
            K.RandomAffine(degrees=(20.0, 20.0), translate=None, scale=(1.1, 1.1), p=1.0),
            K.RandomHorizontalFlip(p=1.0),
            # (one op each: ColorJitter draws the order it applies them in)
            K.RandomBrightness(brightness=(1.2, 1.2), p=1.0),
            K.RandomContrast(contrast=(0.8, 0.8), p=1.0),
            K.RandomSaturation(saturation=(1.3, 1.3), p=1.0),
            K.RandomHue(hue=(0.05, 0.05), p=1.0),
            data_keys=["input"])
        out = seq(x)
        outs = [out, seq.inverse(out), K.CenterCrop(10)(x),
                K.Resize((8, 12))(x), K.Normalize(torch.tensor([0.5, 0.4, 0.3]),
                                                  torch.tensor([0.2, 0.25, 0.3]))(x),
                K.RandomGrayscale(p=1.0)(x), K.RandomVerticalFlip(p=1.0)(x),
                K.RandomRotation(degrees=(33.0, 33.0), p=1.0)(x),
                K.RandomPerspective(0.0, p=1.0)(x),
                K.RandomSolarize(thresholds=(0.0, 0.0), additions=(0.0, 0.0), p=1.0)(x),
                K.RandomGamma(gamma=(1.5, 1.5), p=1.0)(x)]
        params = K.RandomResizedCrop((8, 8), p=1.0).forward_parameters(x.shape)
        result["rrc_params_keys"] = np.array(sorted(params))
        crop = K.RandomResizedCrop((8, 8), p=1.0)
        fixed = {"src": torch.tensor([[[2.0, 1.0], [13.0, 1.0], [13.0, 12.0], [2.0, 12.0]]] * 2),
                 "dst": torch.tensor([[[0.0, 0.0], [7.0, 0.0], [7.0, 7.0], [0.0, 7.0]]] * 2),
                 "input_size": torch.tensor([[16, 16]] * 2),
                 "output_size": torch.tensor([[8, 8]] * 2),
                 "batch_prob": torch.tensor([True, True]),
                 "forward_input_shape": torch.tensor([2, 3, 16, 16])}
        outs.append(crop(x, params=fixed))
        result["transform_matrix"] = seq.transform_matrix.detach().numpy()
    elif name == "enhance":
        E = kornia.enhance
        outs = [E.adjust_brightness(img, 0.2), E.adjust_contrast(img, 1.4),
                E.adjust_gamma(img, 0.7, 1.2), E.adjust_hue(img, 0.3),
                E.adjust_saturation(img, 1.6), E.normalize(img, torch.tensor([0.4, 0.5, 0.6]),
                                                           torch.tensor([0.2, 0.3, 0.25])),
                E.denormalize(img, torch.tensor([0.4, 0.5, 0.6]), torch.tensor([0.2, 0.3, 0.25])),
                E.sharpness(img, 0.8), E.posterize((img * 0).detach() + img.detach(), 3),
                E.invert(img), E.solarize(img, 0.4),
                E.adjust_log(img, 1.1), E.adjust_sigmoid(img, 0.5, 8.0)]
        result["equalize"] = E.equalize((img.detach() * 255).round() / 255).numpy()
    _loss([o for o in outs if o.requires_grad], rs, torch).backward()
    for i, o in enumerate(outs):
        result[f"out{i}"] = o.detach().numpy()
    for k, leaf in leaves.items():
        if leaf.grad is not None:
            result["grad_" + k] = leaf.grad.numpy()
    return result


if __name__ == "__main__":  # the ember side, under python -m ember.as_torch
    import torch
    directory, names = sys.argv[1], sys.argv[2].split(",")
    assert torch is sys.modules["ember"], torch
    for name in names:
        np.savez(os.path.join(directory, f"{name}_ember.npz"), **run(torch, name))
