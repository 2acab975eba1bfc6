"""One line naming what a benchmark ran on: the processor, numpy's BLAS and the kernel it chose.

OpenBLAS picks its kernels for the processor unless the environment pins them
(OPENBLAS_CORETYPE=Haswell holds an AVX-512 machine to AVX2 kernels, about half the sgemm
speed); every benchmark prints this line first, so that its figures say which they ran.
"""
import os
import platform


def processor():
    """The processor's model name (Linux: /proc/cpuinfo, as lscpu shows it)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas():
    """numpy's BLAS as threadpoolctl reports it: library, version, kernel, threads."""
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then finds)
    from threadpoolctl import threadpool_info

    found = [f"{i['internal_api']} {i.get('version')}, kernel {i.get('architecture')}, "
             f"{i['num_threads']} thread(s)"
             for i in threadpool_info() if i["user_api"] == "blas"]
    return "; ".join(found) or "none found"


def describe():
    """E.g. 'AMD EPYC, 2 CPUs; numpy BLAS openblas 0.3.31, kernel SkylakeX, 1 thread(s); ...'."""
    pinned = ", ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                       if k in os.environ)
    return (f"{processor()}, {os.cpu_count()} CPUs; numpy BLAS {blas()}"
            f"{'; pinned by ' + pinned if pinned else ''}; load average {os.getloadavg()[0]:.2f}")
