import numpy as np
from numba import cuda


@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


def load_settings(path):
    raise FileNotFoundError(f"settings file {path} is missing")


print("starting")
settings = load_settings("settings.toml")
out = np.zeros(8)
fill[1, 8](out)
