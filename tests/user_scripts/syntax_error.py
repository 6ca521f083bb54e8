from numba import cuda


@cuda.jit
def broken(out):
    i = cuda.grid(1)
    if i < out.size
        out[i] = i
