"""The command line: exit status and messages for good and bad input."""

import subprocess
import sys


def xdsa(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "xdsa", *args], capture_output=True, text=True, cwd=cwd)


def test_asm_disasm_round_trip(tmp_path):
    src = tmp_path / "p.s"
    src.write_text(".text 0\n  add.u8 src0=x, src1=x, dst=x, len=1\n  exit\n  end\n"
                   ".tables 0x400\n.data 0x800\nx: .u8 7\n")
    r = xdsa("asm", str(src))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.img").exists()
    r = xdsa("disasm", str(tmp_path / "p.img"))
    assert r.returncode == 0 and "add.u8 src0=x, src1=x, dst=x, len=1" in r.stdout


def test_asm_error_is_precise_and_has_no_traceback(tmp_path):
    src = tmp_path / "bad.s"
    src.write_text(".tables 0x400\n.text 0\n  add.s8 len=99999999999\n  mul.q7 len=1\n")
    r = xdsa("asm", str(src))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0] == f"{src}:3: error: add: len is a 32-bit field: expected 0..4294967295, got 99999999999"
    assert lines[1].startswith(f"{src}:4: error: data unit suffix: unknown data unit 'q7'")


def test_bad_image_and_missing_file(tmp_path):
    bad = tmp_path / "junk.img"
    bad.write_bytes(b"hello")
    r = xdsa("disasm", str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "truncated in header" in r.stderr
    r = xdsa("asm", str(tmp_path / "missing.s"))
    assert r.returncode == 1 and "cannot read" in r.stderr and "Traceback" not in r.stderr


def test_isa_unknown_mnemonic():
    r = xdsa("isa", "--json", "nosuchop")
    assert r.returncode == 1 and "unknown mnemonic(s): nosuchop" in r.stderr


def test_sim_runs_on_the_rtl_and_compares(tmp_path):
    """`xdsa sim` on tiny (pysim): the outcome line, the co-simulation verdict and the
    exit status, for a program that exits and for one that faults."""
    body = ("  data_move.u8 src=0x800, dst=0xa03, src_trans_size=5, des_trans_size=5\n"
            "  {extra}\n  exit\n  end\n.tables 0x600\n.data 0x800\n  .byte 1, 2, 3, 4, 5\n")
    for name, extra, status, line in [
            ("ok", "", 0, "pysim (tiny): EXIT after 2 instructions in "),
            ("bad", "data_move.u8 src=0x800, dst=0x802, src_trans_size=5, des_trans_size=5", 2,
             "pysim (tiny): fault ILLEGAL_OPERAND at pc 0x30 after 2 instructions in ")]:
        src = tmp_path / f"{name}.s"
        src.write_text(".text 0\n" + body.format(extra=extra))
        assert xdsa("asm", str(src)).returncode == 0
        r = xdsa("sim", str(tmp_path / f"{name}.img"), "--backend", "pysim", "--config", "tiny")
        assert r.returncode == status, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        assert line in r.stdout, r.stdout
        assert "co-simulation: retire trace, memory and key tables match the golden model" in r.stdout


def test_bench_refuses_a_configuration_without_the_unit():
    r = xdsa("bench", "matmul", "--config", "tiny")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "benchmark matmul: configuration 'tiny' has no matrix unit" in r.stderr
