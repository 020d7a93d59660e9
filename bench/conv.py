"""MAC utilisation of the matrix engine on the convolution layers of ResNet-20
(CIFAR-10), on Verilator.

Each layer is one CONV2D instruction: s8 feature map (NHWC), s8 3 x 3 kernels,
padding 1 (per-layer value 0), int32 per-channel bias, per-channel multiplier and
shift, an output zero point (IMM scale_o), clip to int8 and s8 output (the usual
int8 quantisation). Layers: the 3 x 3 convolutions of the three stages (16, 32 and
64 channels at 32 x 32, 16 x 16 and 8 x 8) and the two stride-2 transitions; the
stem (3 input channels) is reported too, separately (its 3 channels fill 3 of the N
rows of the array). Every result is checked byte for byte against the golden model.

Utilisation = useful MACs (K x H_out x W_out x C x 9) / (N^2 x cycles from issue to
completion), the cycles counted on the standalone engine harness from the
engine's command to its ``done`` (bench/matrix_harness.py; see bench/matmul.py).
`base` (N = 8) holds every layer.
"""

import numpy as np

from xdsa.golden.isa import DataUnit
from xdsa.hw.config import get_config

from .matmul import run_instruction

# (name, C, H/W in, K, stride)
LAYERS = (
    ("stage1_16x32x32", 16, 32, 16, 1),
    ("stage2_down_16to32_s2", 16, 32, 32, 2),
    ("stage2_32x16x16", 32, 16, 32, 1),
    ("stage3_down_32to64_s2", 32, 16, 64, 2),
    ("stage3_64x8x8", 64, 8, 64, 1),
)
STEM = ("stem_3to16_32x32", 3, 32, 16, 1)


def layer_fields(C, HW, K, stride, base, rng):
    """(fields, data patches) of one layer with its operands from `base` upwards."""
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
    name, C, HW, K, stride = layer
    fields, patches, macs, end = layer_fields(C, HW, K, stride, 0x1000, rng)
    if end > config.mem_bytes:
        raise ValueError(f"{name} does not fit the {config.mem_bytes}-byte memory of {config.name}")
    mem = np.zeros(config.mem_bytes, dtype=np.uint8)
    for a, data in patches:
        mem[a:a + len(data)] = np.frombuffer(data, dtype=np.uint8)
    r = run_instruction(config, "conv2d", fields, mem.tobytes())
    N = config.array_n
    return {"config": config.name, "N": N, "C": C, "HW": HW, "K": K, "stride": stride, "macs": macs,
            "cycles": r.cycles, "row_reads_a": r.reads_a, "row_reads_b": r.reads_b, "row_writes": r.writes,
            "mac_utilisation": round(macs / (N * N * r.cycles), 4)}


def run(config=None):
    config = config or get_config("base")
    rng = np.random.default_rng(20)
    out = {layer[0]: run_layer(config, layer, rng) for layer in LAYERS}
    total_macs = sum(v["macs"] for v in out.values())
    total_cycles = sum(v["cycles"] for v in out.values())
    out["all_layers"] = {"macs": total_macs, "cycles": total_cycles, "N": config.array_n,
                         "mac_utilisation": round(total_macs / (config.array_n ** 2 * total_cycles), 4)}
    out[STEM[0]] = run_layer(config, STEM, rng)
    return out


if __name__ == "__main__":
    for k, v in run().items():
        print(k, v)
