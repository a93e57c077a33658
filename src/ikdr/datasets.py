r"""Generated data with several clustering views, and images as colour samples.

The generators follow the synthetic data of dissertation section 3.5 (Fig.
3.3): each returns ``X, y_original, y_alternative``, two clusterings of the
same points that are independent of each other (every original cluster holds
equally many points of every alternative cluster), so an alternative
clustering that recovers ``y_alternative`` has NMI 0 to ``y_original``.
"""
from __future__ import annotations

import numbers
import struct
import zlib
from pathlib import Path

import numpy as np
from sklearn.utils import check_random_state
from ._utils.typing import ArrayLike, PathLike, RandomStateLike
from ._utils.validation import plain

__all__ = ["make_gaussian_views", "make_moon_gaussians", "load_image_colors",
           "segmentation_image", "read_png", "write_png"]


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {plain(value)!r}")
    return int(value)


def _two_views(n_samples, rng):
    """Balanced, independent pair of binary labels (each of the 4 cells gets n/4)."""
    cells = np.arange(n_samples) % 4
    rng.shuffle(cells)
    return cells // 2, cells % 2


def make_gaussian_views(kind: str = "small", n_samples: int | None = None, *,
                        separation: float = 4.0, cluster_std: float = 0.5,
                        random_state: RandomStateLike = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Four Gaussian clusters whose coordinates give two different 2-clusterings.

    ``kind="small"`` (Small Gaussian, SG; 40 samples by default): 2-D,
    clusters at the corners of a square of side ``separation``; feature 2
    separates the original clustering, feature 1 the alternative.

    ``kind="large"`` (Large Gaussian, LG; 1,000 samples): the same square
    plus a third Gaussian coordinate, rotated by 45 degrees about the first
    axis so the clusters reside in 3-D, and a fourth dimension of uniform
    noise on [-separation, separation].

    Returns
    -------
    X : ndarray (n_samples, 2 or 4)
    y_original : ndarray (n_samples,)
    y_alternative : ndarray (n_samples,)
    """
    if kind not in ("small", "large"):
        raise ValueError(f'kind must be "small" or "large", got {kind!r}')
    n = _check_int(40 if kind == "small" and n_samples is None else
                   1000 if n_samples is None else n_samples, "n_samples", 8)
    rng = check_random_state(random_state)
    y_alt, y_orig = _two_views(n, rng)
    half = separation / 2.0
    X = np.column_stack([np.where(y_alt == 1, half, -half), np.where(y_orig == 1, half, -half)])
    X = X + cluster_std * rng.standard_normal(X.shape)
    if kind == "large":
        third = cluster_std * rng.standard_normal(n)
        c = s = np.sqrt(0.5)
        rotated = np.column_stack([X[:, 0], c * X[:, 1] - s * third, s * X[:, 1] + c * third])
        noise = rng.uniform(-separation, separation, n)
        X = np.column_stack([rotated, noise])
    return X, y_orig, y_alt


def make_moon_gaussians(n_samples: int = 400, *, n_noise: int = 0, moon_noise: float = 0.05,
                        separation: float = 10.0, cluster_std: float = 1.0,
                        noise_scale: float | None = None, random_state: RandomStateLike = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Two moons (features 1-2) beside two Gaussian clusters (features 3-4).

    The Moon and Moon+Noise data of dissertation section 3.5 (Fig. 3.1): the
    original clustering is the Gaussian view, the alternative the moons.
    ``n_noise`` appends dimensions of uniform noise (Moon+Noise).

    Parameters
    ----------
    n_samples : int, default=400
    n_noise : int, default=0
        Extra uniform-noise dimensions.
    moon_noise : float, default=0.05
        Standard deviation of the Gaussian noise on the unit moons (before
        they are scaled by 2).
    separation : float, default=10.0
        Distance between the Gaussian cluster centers along each of features 3-4.
    cluster_std : float, default=1.0
    noise_scale : float, optional
        Half-width of the uniform noise (default: ``separation / 2``).

    Returns
    -------
    X : ndarray (n_samples, 4 + n_noise)
    y_original : ndarray (n_samples,), the Gaussian clusters
    y_alternative : ndarray (n_samples,), the moons
    """
    n = _check_int(n_samples, "n_samples", 8)
    n_noise = _check_int(n_noise, "n_noise", 0)
    rng = check_random_state(random_state)
    y_alt, y_orig = _two_views(n, rng)
    t = rng.uniform(0.0, np.pi, n)
    moons = np.where(y_alt[:, None] == 0,
                     np.column_stack([np.cos(t), np.sin(t)]),
                     np.column_stack([1.0 - np.cos(t), 0.5 - np.sin(t)]))
    moons = 2.0 * (moons + moon_noise * rng.standard_normal(moons.shape))
    half = separation / 2.0
    gauss = np.where(y_orig[:, None] == 1, half, -half) + cluster_std * rng.standard_normal((n, 2))
    scale = half if noise_scale is None else float(noise_scale)
    X = np.column_stack([moons, gauss, rng.uniform(-scale, scale, (n, n_noise))])
    return X, y_orig, y_alt


# -- images -------------------------------------------------------------------

def _unfilter(raw, height, stride, bpp):
    """Undo the PNG row filters (None, Sub, Up, Average, Paeth)."""
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    pos = 0
    for r in range(height):
        ftype = raw[pos]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=pos + 1).astype(np.int64)
        pos += stride + 1
        if ftype == 0:
            cur = line
        elif ftype == 1:
            cur = line.copy()
            for i in range(bpp, stride):
                cur[i] = (cur[i] + cur[i - bpp]) & 255
        elif ftype == 2:
            cur = (line + prev) & 255
        elif ftype == 3:
            cur = line.copy()
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                cur[i] = (cur[i] + ((left + prev[i]) >> 1)) & 255
        elif ftype == 4:
            cur = line.copy()
            for i in range(stride):
                a = int(cur[i - bpp]) if i >= bpp else 0
                b = int(prev[i])
                c = int(prev[i - bpp]) if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (cur[i] + pred) & 255
        else:
            raise ValueError(f"corrupt PNG: unknown row filter {ftype}")
        out[r] = cur
        prev = cur
    return out


def read_png(path: PathLike) -> np.ndarray:
    """Read an 8-bit, non-interlaced PNG (grey, RGB, palette, with or without
    alpha) into an (height, width, 3) uint8 RGB array; alpha is dropped.

    A small reader on the standard library's zlib, so the package needs no
    imaging dependency.
    """
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG file")
    pos, idat, palette, header = 8, [], None, None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif ctype == b"PLTE":
            palette = np.frombuffer(chunk, dtype=np.uint8).reshape(-1, 3)
        elif ctype == b"IDAT":
            idat.append(chunk)
        elif ctype == b"IEND":
            break
    if header is None:
        raise ValueError(f"{path}: PNG without header")
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if depth != 8 or interlace != 0 or channels is None:
        raise ValueError(f"{path}: only 8-bit non-interlaced PNGs are supported "
                         f"(bit depth {depth}, colour type {color}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    pix = _unfilter(raw, height, width * channels, channels).reshape(height, width, channels)
    if color == 3:
        if palette is None:
            raise ValueError(f"{path}: palette PNG without a PLTE chunk")
        return palette[pix[:, :, 0]]
    if color in (0, 4):
        return np.repeat(pix[:, :, :1], 3, axis=2)
    return np.ascontiguousarray(pix[:, :, :3])


def write_png(path: PathLike, image: ArrayLike) -> None:
    """Write an (height, width, 3) uint8 RGB array as a PNG file."""
    img = np.ascontiguousarray(np.asarray(image, dtype=np.uint8))
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"image must have shape (height, width, 3), got {img.shape}")
    h, w, _ = img.shape
    rows = np.hstack([np.zeros((h, 1), np.uint8), img.reshape(h, w * 3)])

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" +
                           chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                           chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) +
                           chunk(b"IEND", b""))


def load_image_colors(image: PathLike | ArrayLike
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct RGB colours of an image, as samples for colour segmentation.

    The Flower experiment of dissertation section 3.5: every distinct colour
    is one sample (repeated pixels removed).

    Parameters
    ----------
    image : str, Path or ndarray (height, width, 3)
        A PNG file (read with :func:`read_png`) or an RGB array.

    Returns
    -------
    colors : ndarray (n_colors, 3), float64 in [0, 255]
        The distinct colours, sorted.
    index : ndarray (height, width) of int
        Row of ``colors`` for every pixel: ``colors[index]`` is the image, and
        ``labels[index]`` maps a segmentation of the colours back onto it.
    """
    img = read_png(image) if isinstance(image, (str, Path)) else np.asarray(image)
    if img.ndim != 3 or img.shape[2] < 3:
        raise ValueError(f"image must have shape (height, width, 3), got {img.shape}")
    pixels = img[:, :, :3].reshape(-1, 3)
    colors, inverse = np.unique(pixels, axis=0, return_inverse=True)
    return colors.astype(np.float64), inverse.reshape(img.shape[:2])


def segmentation_image(labels: ArrayLike, index: ArrayLike, palette: ArrayLike | None = None
                       ) -> np.ndarray:
    """An RGB image (uint8) painting each pixel with the colour of its segment.

    ``labels`` are per colour (from :func:`load_image_colors`), ``index`` its
    pixel-to-colour map; ``palette`` (n_segments x 3) defaults to evenly spaced greys.
    """
    labels = np.asarray(labels).ravel()
    _, codes = np.unique(labels, return_inverse=True)
    k = codes.max() + 1
    if palette is None:
        grey = np.linspace(0, 255, k).round().astype(np.uint8)
        palette = np.repeat(grey[:, None], 3, axis=1)
    palette = np.asarray(palette, dtype=np.uint8)
    return palette[codes[np.asarray(index)]]
