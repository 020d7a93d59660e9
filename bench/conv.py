"""MAC utilisation of the matrix unit on the 3 x 3 convolution layers of ResNet-20
(CIFAR-10), measured through the core on Verilator (`xdsa bench conv`).
Target (issue 6): at least 75 % on every layer.

Each layer is one CONV2D instruction: s8 feature map (NHWC), s8 3 x 3 kernels,
padding 1 (per-layer value 0), int32 per-channel bias, per-channel multiplier and
shift, an output zero point (IMM scale_o), clip to int8 and s8 output (the usual
int8 quantisation). Layers: the stem (3 -> 16 channels at 32 x 32), the 3 x 3
convolutions of the three stages (16, 32 and 64 channels at 32 x 32, 16 x 16 and
8 x 8) and the two stride-2 transitions. The last row weights every layer by how
often it occurs in ResNet-20 (1 stem, 6 + 5 + 5 stage convolutions, 2
transitions: all 19 3 x 3 convolutions).

Utilisation = useful MACs (K x H_out x W_out x C x 9) / (N^2 x cycles from issue
to completion), the cycles counted on the core (bench/matrix_core.py: the
program's cycles minus those of exit/end alone), every result checked against
the golden model. `base` (N = 8, 128 KiB) holds every layer.
"""

import sys

import numpy as np

from xdsa.golden.isa import DataUnit
from xdsa.hw.config import get_config

from .matrix_core import DATA, check_config, measure

# (name, C, H/W in, K, stride, occurrences in ResNet-20)
LAYERS = (
    ("stem 3->16 32x32", 3, 32, 16, 1, 1),
    ("stage1 16->16 32x32", 16, 32, 16, 1, 6),
    ("stage2 down 16->32 32x32 s2", 16, 32, 32, 2, 1),
    ("stage2 32->32 16x16", 32, 16, 32, 1, 5),
    ("stage3 down 32->64 16x16 s2", 32, 16, 64, 2, 1),
    ("stage3 64->64 8x8", 64, 8, 64, 1, 5),
)
TARGET = 0.75


def layer_fields(C, HW, K, stride, base, rng):
    """(fields, data patches, MACs, end) of one layer with its operands from `base` upwards."""
    Ho = (HW + 2 - 3) // stride + 1
    fm = base
    kernel = (fm + C * HW * HW + 63) & ~31
    bias = (kernel + K * 9 * C + 63) & ~31
    mul = bias + 4 * K
    shift = mul + 4 * K
    dst = (shift + K + 63) & ~31
    s8, s32 = int(DataUnit.S8), int(DataUnit.S32)
    fields = {
        "fm": fm, "kernel": kernel, "dst": dst, "fm_unit": s8, "w_unit": s8, "result_unit": s8,
        "bias_unit": s32, "mul_unit": s32, "scale_unit": s8,
        "bias_mode": 1, "mul_mode": 1, "shift_mode": 1, "scale_mode": 0,
        "data_format": 0, "t_pad": 1, "b_pad": 1, "l_pad": 1, "r_pad": 1,
        "h_stride": stride, "v_stride": stride, "padding_mode": 0, "padding_addr": 0,
        "bias_addr": bias, "mul_addr": mul, "shift_addr": shift, "scale_o_addr": 3,
        "fm_surface_stride": C, "fm_line_stride": C * HW, "fm_c": C, "fm_h": HW, "fm_w": HW,
        "k_h": 3, "k_w": 3, "k_line_stride": 9 * C, "k_num": K,
        "clip_max": 127, "clip_min": (-128) & 0xFFFF,
    }
    patches = [
        (fm, rng.integers(-128, 128, C * HW * HW).astype(np.int8).tobytes()),
        (kernel, rng.integers(-128, 128, K * 9 * C).astype(np.int8).tobytes()),
        (bias, rng.integers(-4000, 4000, K).astype(np.int32).tobytes()),
        (mul, rng.integers(1 << 14, 1 << 15, K).astype(np.int32).tobytes()),
        (shift, rng.integers(24, 27, K).astype(np.uint8).tobytes()),
    ]
    return fields, patches, K * Ho * Ho * C * 9, dst + K * Ho * Ho


def run_layer(config, layer, rng):
    name, C, HW, K, stride, count = layer
    fields, patches, macs, end = layer_fields(C, HW, K, stride, DATA, rng)
    if end > config.mem_bytes:
        raise ValueError(f"{name} does not fit the {config.mem_bytes}-byte memory of {config.name}")
    r = measure(config, [("conv2d", fields)], patches, label=name)
    N = config.array_n
    ideal = -(-macs // (N * N))
    return {"layer": name, "C": C, "K": K, "HW": HW, "stride": stride, "in_resnet20": count, "macs": macs,
            "ideal_cycles": ideal, "cycles": r["cycles"], "overhead_cycles": r["cycles"] - ideal,
            "mac_utilisation": round(macs / (N * N * r["cycles"]), 4), "sim_seconds": r["sim_seconds"]}


def run(config=None):
    config = config or get_config("base")
    check_config(config)
    N = config.array_n
    rng = np.random.default_rng(20)
    rows = []
    for layer in LAYERS:
        rows.append(run_layer(config, layer, rng))
        r = rows[-1]
        print(f"  {r['layer']:30s} {r['cycles']:8d} cycles, {100 * r['mac_utilisation']:.1f} %", file=sys.stderr, flush=True)
    macs = sum(r["macs"] * r["in_resnet20"] for r in rows)
    cycles = sum(r["cycles"] * r["in_resnet20"] for r in rows)
    rows.append({"layer": "ResNet-20, all 19 3x3 convs", "in_resnet20": 19, "macs": macs, "cycles": cycles,
                 "mac_utilisation": round(macs / (N * N * cycles), 4)})
    short = [r["layer"] for r in rows[:-1] if r["mac_utilisation"] < TARGET]
    stem = rows[0]
    notes = [
        f"Measured through the core ({config.name}, N = {N}) on Verilator: cycles of the program (one CONV2D, "
        "exit, end) minus those of exit/end alone; every result matches the golden model.",
        f"Target: >= {100 * TARGET:.0f} % per layer: " + ("met." if not short else f"missed for {', '.join(short)}."),
        f"The stem (C = {stem['C']}) runs tap-packed: a weight tile holds N consecutive indices of the (ky, kx, c) "
        f"reduction, so its 27 values take ceil(27 / {N}) passes instead of 9 (one kernel tap of 3 channels each); "
        f"its ceiling is 27 / {N * -(-27 // N)} = {100 * 27 / (N * -(-27 // N)):.1f} %. Below that: with 4 passes per "
        "block the compute of a block (4 x 8N cycles) is as long as its drain through the two requantisers "
        "(8N positions x N kernels / 2), so the drain's per-block parameter fetch and the fixed costs show.",
        "The other layers lose a fixed cost per instruction (about 375 cycles): the operand checks, the first "
        "weight tile and the array's fill, and the drain of the last block's last pass, which no compute "
        "overlaps; it weighs double on the stride-2 layers (half the MACs).",
    ]
    return {"title": f"ResNet-20 (CIFAR-10) 3x3 convolutions, CONV2D s8 ({config.name}, core on Verilator)",
            "columns": ["layer", "C", "K", "HW", "stride", "in_resnet20", "macs", "ideal_cycles", "cycles",
                        "overhead_cycles", "mac_utilisation"],
            "rows": rows, "notes": notes,
            "plot": {"title": f"ResNet-20 layers ({config.name}, N = {N})",
                     "bars": [[r["layer"], r["mac_utilisation"]] for r in rows]}}


if __name__ == "__main__":
    import json
    print(json.dumps(run(), indent=1))
