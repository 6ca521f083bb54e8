"""The Mandelbrot set, one thread per pixel: a loop whose length depends on the data (divergence).

Each thread stores its running count every ``STORE_EVERY`` iterations, so that the loop is seen: the
lanes of a warp leave it at different steps, and the image's heat of accesses grows with the iterations."""

import numpy as np
from numba import cuda

from . import KernelSpec
from ._launch import launch_square

MAX_ITERS = 64
# the part of the complex plane drawn: x (real part) across, y (imaginary part) down
X_MIN, X_MAX = -2.0, 1.0
Y_MIN, Y_MAX = -1.5, 1.5


#: each thread writes its running escape count to its pixel every this many iterations (see mandelbrot)
STORE_EVERY = 4


@cuda.jit
def mandelbrot(image, x_min, x_max, y_min, y_max, max_iters):
    col, row = cuda.grid(2)  # x runs along a row, so neighbouring threads write neighbouring pixels
    height = image.shape[0]
    width = image.shape[1]
    if row >= height or col >= width:
        return
    cx = x_min + col * (x_max - x_min) / width
    cy = y_min + row * (y_max - y_min) / height
    # steps of z = z*z + c until z leaves the circle of radius 2 (max_iters if it never does)
    x = 0.0
    y = 0.0
    i = 0
    while i < max_iters and x * x + y * y <= 4.0:
        x_next = x * x - y * y + cx
        y = 2.0 * x * y + cy
        x = x_next
        i += 1
        if i % STORE_EVERY == 0:
            # the count so far: a store the animation shows, one
            # per STORE_EVERY turns, as lanes leave the loop
            image[row, col] = i
    image[row, col] = i


def make_args(size, rng):
    image = np.zeros((size, size), dtype=np.int32)
    return [image, X_MIN, X_MAX, Y_MIN, Y_MAX, MAX_ITERS]


def reference(args):
    image, x_min, x_max, y_min, y_max, max_iters = args
    height, width = image.shape
    # the same float64 operations in the same order as the kernel, on every pixel at once
    cx = x_min + np.arange(width, dtype=np.float64) * (x_max - x_min) / width
    cy = y_min + np.arange(height, dtype=np.float64) * (y_max - y_min) / height
    cx, cy = np.meshgrid(cx, cy)
    x = np.zeros_like(cx)
    y = np.zeros_like(cy)
    iters = np.zeros(image.shape, dtype=np.int32)
    for _ in range(max_iters):
        running = x * x + y * y <= 4.0
        if not running.any():
            break
        x_next = x * x - y * y + cx
        y = np.where(running, 2.0 * x * y + cy, y)
        x = np.where(running, x_next, x)
        iters += running
    return {0: iters}


SPEC = KernelSpec(
    name="mandelbrot",
    kernel=mandelbrot,
    description="escape-time Mandelbrot image: a 2-d grid whose while loop exits after a data-dependent count",
    note=(
        "Every pixel is independent, so one thread per pixel is natural, but each thread loops a different "
        "number of times. So that the loop shows, each thread writes its running count to its pixel every "
        f"{STORE_EVERY} iterations (a kernel for real use writes once, at the end): each write is a step of the "
        "animation, and the image's heat map of accesses draws the set as the work of the loop. The 32 threads "
        "of a warp issue together, so a warp that holds a pixel inside the set keeps issuing until that pixel "
        "gives up after max_iters, while its finished lanes sit idle (diverged): that is divergence. Compare "
        "warps on the smooth outside (done in a step or two) with warps on the edge of the set. The first "
        "launch also pays for JIT compilation, often far more than the image."
    ),
    default_size=128,
    small_size=24,
    default_block=(16, 16),
    make_args=make_args,
    launch=lambda size, block: launch_square(size, block, "mandelbrot"),
    reference=reference,
    rtol=0.0,
    size_label="pixels per side",
)
