"""Golden-model throughput: elements per second for a 1M-element int8 ADD, a 1M-element
fp32 MUL, and a 3-D DATA_MOVE of 1 MiB (4 surfaces x 256 lines x 1 KiB, strided)."""

import time

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.machine import Machine

N = 1 << 20


def _image(build):
    b = ProgramBuilder(as_bits=32)
    b.tables(0x100)
    b.text(0x200)
    build(b)
    b.exit()
    b.end()
    return b.build()


def _time(image, mem_size, init, repeat=3):
    best = None
    for _ in range(repeat):
        m = Machine(mem_size)
        m.load(image)
        init(m)
        t0 = time.perf_counter()
        r = m.run()
        dt = time.perf_counter() - t0
        assert r.status == "exit", r.detail
        best = dt if best is None else min(best, dt)
    return best


def run(config=None):
    """Golden-model throughput (the configuration does not matter)."""
    rng = np.random.default_rng(1)
    base = 0x1000
    results = {}

    img = _image(lambda b: b.insn("add", "s8", src0=base, src1=base + N, dst=base + 2 * N, len=N, sat=1))
    data = rng.integers(-128, 128, 2 * N, dtype=np.int8).view(np.uint8)
    t = _time(img, base + 3 * N, lambda m: m.mem.__setitem__(slice(base, base + 2 * N), data))
    results["int8_add_elements_per_s"] = N / t

    img = _image(lambda b: b.insn("mul", "f32", src0=base, src1=base + 4 * N, dst=base + 8 * N, len=N))
    data = rng.standard_normal(2 * N).astype(np.float32).view(np.uint8)
    t = _time(img, base + 12 * N, lambda m: m.mem.__setitem__(slice(base, base + 8 * N), data))
    results["fp32_mul_elements_per_s"] = N / t

    # 3-D: 4 surfaces of 256 lines of 1024 bytes; source lines 1280 bytes apart,
    # destination packed; 1 MiB moved.
    line, lines, surf = 1024, 256, 4
    img = _image(lambda b: b.insn(
        "data_move", "u8", src=base, dst=base + 2 * N,
        src_trans_size=line * lines, src_width=line, src_line_stride=1280,
        src_surface_stride=1280 * lines, src_num_trans=surf,
        des_trans_size=line * lines, des_width=line, des_line_stride=line,
        des_surface_stride=line * lines, des_num_trans=surf))
    data = rng.integers(0, 256, 2 * N, dtype=np.uint8)
    t = _time(img, base + 4 * N, lambda m: m.mem.__setitem__(slice(base, base + 2 * N), data))
    results["datamove_3d_elements_per_s"] = line * lines * surf / t
    return results


if __name__ == "__main__":
    for k, v in run().items():
        print(f"{k:32s} {v / 1e6:8.1f} M")
